// Command agentbridge lets people chat with command-line AI agents from Slack,
// Discord, Telegram or a terminal. See README.md and docs/ for usage.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentbridge/agentbridge/internal/termtext"
	"github.com/agentbridge/agentbridge/profiles"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitStatus(err, os.Stderr))
}

// usage is printed for -h and for an unknown subcommand.
const usage = `agentbridge — chat with command-line AI agents from Slack, Discord, Telegram or a terminal

usage:
  agentbridge chat [--profile PATH] [--store PATH]   chat in this terminal (default: built-in demo agent)
  agentbridge run --profile PATH [flags] MESSAGE|-   run one turn of an agent profile
  agentbridge serve --config FILE                    run the configured chat adapters
  agentbridge validate CONFIG                        check a config file and exit
  agentbridge check PROFILE [--message TEXT] [--json] check an agent against the protocol, rule by rule
  agentbridge shim NAME [ARGS]                       run an agent CLI as an AgentProc agent (profiles use this)
  agentbridge isolate RUNTIME [flags] -- ARGS        run a turn's agent in a container or pod (profiles use this)
  agentbridge mcp                                    the send_file MCP server agent CLIs start (shims register it)
  agentbridge health [URL]                           probe a running serve's /healthz (exit 0 when healthy)
  agentbridge version                                print the version

Run 'agentbridge COMMAND -h' for a command's flags.
`

// command runs one subcommand, its environment passed in like run's.
type command func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error

// commands maps each subcommand to what runs it; usage lists the public ones.
var commands = map[string]command{
	"run":                cmdRun,
	"chat":               cmdChat,
	"serve":              cmdServe,
	"check":              cmdCheck,
	"validate":           cmdValidate,
	profiles.DemoCommand: cmdDemoAgent,
	"shim":               cmdShim,
	"health":             cmdHealth,
	"isolate":            cmdIsolate,
	"mcp":                cmdMCP,
	"version":            cmdVersion,
	"--version":          cmdVersion,
}

// run is the whole program, with its environment passed in so tests can call
// it directly.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitCode(2)
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	if c, ok := commands[cmd]; ok {
		return c(ctx, rest, stdin, stdout, stderr)
	}
	fmt.Fprintf(stderr, "agentbridge: unknown command %q\n\n%s", cmd, usage)
	return exitCode(2)
}

// exitCode is an error that only carries the process exit status; whatever
// needed saying was already printed.
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }

// usageError is a command-line mistake: printed, then exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Sprintf(format, args...)}
}

// statusError is printed like any error but exits with its own status, for
// failures a service manager must tell apart (see exitAdaptersStopped).
type statusError struct {
	err  error
	code int
}

func (e statusError) Error() string { return e.err.Error() }
func (e statusError) Unwrap() error { return e.err }

// exitStatus maps run's error to a process exit status, printing it if it
// has something to say.
func exitStatus(err error, stderr io.Writer) int {
	var code exitCode
	var uerr usageError
	var serr statusError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &code):
		return int(code)
	case errors.As(err, &serr):
		fmt.Fprintln(stderr, "agentbridge:", termtext.Visible(err.Error()))
		return serr.code
	case errors.As(err, &uerr):
		fmt.Fprintln(stderr, "agentbridge:", termtext.Visible(err.Error()))
		return 2
	default:
		fmt.Fprintln(stderr, "agentbridge:", termtext.Visible(err.Error()))
		return 1
	}
}
