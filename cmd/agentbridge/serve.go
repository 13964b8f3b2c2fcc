package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/engine"
	"github.com/agentbridge/agentbridge/store"
)

// adapterFactory builds an enabled platform's adapter from the config. The
// store is there for adapters that keep a cursor (Telegram's update offset).
type adapterFactory func(cfg *config.Config, st core.Store, log *slog.Logger) (core.Platform, error)

// adapters lists the chat adapters by config block name. Wiring is
// explicit: no init-time registry.
var adapters = map[string]adapterFactory{
	"slack":    newSlackAdapter,
	"discord":  newDiscordAdapter,
	"telegram": newTelegramAdapter,
}

// errNoAdapter is returned by a factory whose adapter is not built yet.
var errNoAdapter = errors.New("this build has no adapter for it yet")

// enabledPlatforms names the platforms the config turns on.
func enabledPlatforms(cfg *config.Config) []string {
	var names []string
	for _, p := range []struct {
		name string
		on   bool
	}{{"slack", cfg.Slack.Enabled}, {"discord", cfg.Discord.Enabled}, {"telegram", cfg.Telegram.Enabled}} {
		if p.on {
			names = append(names, p.name)
		}
	}
	return names
}

// exitAdaptersStopped is serve's exit status when every adapter stopped for
// good (core.ErrFatal: a rejected token, a disallowed intent, another
// poller on the same bot). Like 2 (an invalid config or profile, no
// platform enabled: a usageError) it means "fix the config, restarting
// will not help", so deploy/agentbridge.service keeps both out of its
// restart loop (RestartPreventExitStatus=). Any other failure exits 1.
const exitAdaptersStopped = 3

// cmdServe runs every enabled adapter against one engine until SIGTERM or
// SIGINT, then drains.
func cmdServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "config file (YAML)")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return nil
		}
		return exitCode(2)
	}
	if *cfgPath == "" || fs.NArg() > 0 {
		return usageErrorf("usage: agentbridge serve --config FILE")
	}
	cfg, err := config.Load(*cfgPath, nil)
	if err != nil {
		return usageError{fmt.Sprintf("invalid config:\n%v", err)}
	}
	log := newLogger(stderr, cfg.Log.SlogLevel(), cfg.Log.Format)
	for _, w := range cfg.Warnings() {
		log.Warn("config", "warning", w.Error())
	}
	profiles, err := loadProfiles(cfg)
	if err != nil {
		return usageError{err.Error()}
	}
	for _, w := range profileWarnings(profiles) {
		log.Warn("agent cannot start", "problem", w)
	}

	st, err := store.Open(cfg.Store, store.Options{Log: log})
	if err != nil {
		return err
	}
	defer st.Close()

	var platforms []core.Platform
	for _, name := range enabledPlatforms(cfg) {
		p, err := adapters[name](cfg, st, log.With("adapter", name))
		if errors.Is(err, errNoAdapter) {
			return usageErrorf("%s is enabled in %s, but %v", name, *cfgPath, err)
		}
		if err != nil {
			return fmt.Errorf("start %s adapter: %w", name, err)
		}
		platforms = append(platforms, p)
	}
	if len(platforms) == 0 {
		return usageErrorf("no platform is enabled in %s: set enabled: true under slack, discord or telegram", *cfgPath)
	}
	m := newMetrics()
	eng := engine.New(st, engineSettings(cfg, profiles), engine.Options{Log: log, Observer: m})

	var wg sync.WaitGroup
	runCtx, stopAdapters := context.WithCancel(context.Background())
	defer stopAdapters()
	fatal := make(chan error, len(platforms))
	for _, p := range platforms {
		h := eng.Handler(p)
		wg.Go(func() {
			if err := supervise(runCtx, log.With("adapter", p.Name()), p, h); err != nil {
				fatal <- err
			}
		})
	}
	if err := eng.Recover(ctx); err != nil {
		log.Error("could not report all interrupted turns", "err", err)
	}
	if cfg.Metrics.Listen != "" {
		srv, err := serveMetrics(cfg.Metrics.Listen, m, log)
		if err != nil {
			return err
		}
		defer srv.Close()
	}
	wg.Go(func() { reloadOnHUP(runCtx, *cfgPath, eng, log) })
	log.Info("agentbridge serving", "platforms", enabledPlatforms(cfg), "store", cfg.Store)

	// Run until a signal, or until every adapter has stopped for good: with
	// none left the process is useless, and a non-zero exit tells the
	// service manager.
	var fatalErrs []error
	for len(fatalErrs) < len(platforms) && ctx.Err() == nil {
		select {
		case err := <-fatal:
			fatalErrs = append(fatalErrs, err)
		case <-ctx.Done():
		}
	}
	log.Info("shutting down: draining running turns", "grace", cfg.ShutdownGrace)
	drain, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace)
	defer cancel()
	eng.Shutdown(drain, 15*time.Second)
	stopAdapters()
	wg.Wait()
	if len(fatalErrs) == len(platforms) {
		return statusError{fmt.Errorf("every adapter stopped: %w", errors.Join(fatalErrs...)), exitAdaptersStopped}
	}
	return nil
}

// supervise keeps one adapter running, restarting it with backoff, so one
// failing platform never stops the others. It gives up only on an error
// marked core.ErrFatal (a rejected token, say), which it returns.
func supervise(ctx context.Context, log *slog.Logger, p core.Platform, h core.Handler) error {
	backoff := time.Second
	for ctx.Err() == nil {
		start := time.Now()
		err := p.Run(ctx, h)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, core.ErrFatal) {
			log.Error("adapter stopped and will not be restarted: fix the config and restart agentbridge", "err", err)
			return err
		}
		if time.Since(start) > time.Minute {
			backoff = time.Second // it was healthy for a while
		}
		log.Error("adapter stopped; restarting", "err", err, "backoff", backoff)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return nil
		}
		backoff = min(2*backoff, 5*time.Minute)
	}
	return nil
}

// reloadOnHUP re-reads the config on SIGHUP and applies what can change
// live (access lists, routes, profiles, presenter and queue settings). An
// invalid file keeps the old config.
func reloadOnHUP(ctx context.Context, path string, eng *engine.Engine, log *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		warnings, err := reload(path, eng)
		if err != nil {
			log.Error("config reload failed; keeping the old config", "err", err)
			continue
		}
		for _, w := range warnings {
			log.Warn("agent cannot start", "problem", w)
		}
		log.Info("config reloaded (platform credentials and listeners apply after a restart)")
	}
}

// reload re-reads the config at path and applies it to eng, returning
// profileWarnings for the new profiles. On any error the engine keeps its
// current settings.
func reload(path string, eng *engine.Engine) ([]string, error) {
	cfg, err := config.Load(path, nil)
	if err != nil {
		return nil, err
	}
	profiles, err := loadProfiles(cfg)
	if err != nil {
		return nil, err
	}
	eng.Reload(engineSettings(cfg, profiles))
	return profileWarnings(profiles), nil
}
