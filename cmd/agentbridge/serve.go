package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentbridge/agentbridge/adapters/platforms"
	"github.com/agentbridge/agentbridge/daemon"
)

const serveUsage = `usage: agentbridge serve --config FILE

Runs every enabled platform account of the config against one engine.
SIGHUP reloads the config; SIGTERM or SIGINT drains running turns for
shutdown_grace and exits. Exit status: 0 after a signal, 2 for an invalid
config or profile or no platform enabled, 3 when every adapter stopped for
good, 1 otherwise.

flags:
`

// cmdServe runs every enabled platform account until SIGTERM or SIGINT,
// then drains; SIGHUP reloads the config.
func cmdServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if err := closeToAgents(); err != nil {
		return err
	}
	// SIGHUP is caught before anything else happens: its default action
	// ends the process, and a hangup must only ever mean "reload". The
	// channel holds one, so a hangup during start-up reloads once running.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	// Ignored, not reset, once serve is done: a hangup while the process
	// exits must not kill it (and turn a clean exit into "signal: hangup").
	defer signal.Ignore(syscall.SIGHUP)

	fs := newFlagSet("serve", serveUsage, stderr)
	cfgPath := fs.String("config", "", "config `file` (YAML; check it with agentbridge validate)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *cfgPath == "" || fs.NArg() > 0 {
		return usageErrorf("usage: agentbridge serve --config FILE")
	}
	err := daemon.Serve(ctx, daemon.Options{
		ConfigPath: *cfgPath,
		Platforms:  platforms.All(),
		Log:        stderr,
		Hangup:     hup,
	})
	if cerr := (*daemon.ConfigError)(nil); errors.As(err, &cerr) {
		return usageError{cerr.Error()}
	}
	if errors.Is(err, daemon.ErrEveryAdapterStopped) {
		return statusError{err, exitAdaptersStopped}
	}
	return err
}

// exitAdaptersStopped is serve's exit status when every adapter stopped for
// good (core.ErrFatal: a rejected token, a disallowed intent, another
// poller on the same bot). Like 2 (an invalid config or profile, no
// platform enabled: a usageError) it means "fix the config, restarting
// will not help", so deploy/agentbridge.service keeps both out of its
// restart loop (RestartPreventExitStatus=). Any other failure exits 1.
const exitAdaptersStopped = 3
