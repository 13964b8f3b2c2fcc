// Package daemon is agentbridge serve: it runs every enabled platform
// account against one engine, keeps each adapter running, reloads the
// config on SIGHUP, serves metrics, and drains on shutdown.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/engine"
	"github.com/agentbridge/agentbridge/daemon/metrics"
	"github.com/agentbridge/agentbridge/daemon/schedule"
	"github.com/agentbridge/agentbridge/daemon/trigger"
	"github.com/agentbridge/agentbridge/daemon/webconsole"
	"github.com/agentbridge/agentbridge/profiles"
	"github.com/agentbridge/agentbridge/store"
)

// Options configure Serve.
type Options struct {
	// ConfigPath is the config file, read at start and at each hangup.
	ConfigPath string
	// Platforms are the platform kinds the config may enable (package
	// platforms).
	Platforms []config.Kind
	// Log receives the log, in the format the config asks for.
	Log io.Writer
	// Hangup delivers SIGHUP: each one reloads the config. The caller
	// registers it before anything starts, so a hangup at any moment is a
	// reload and never the signal's default action, which ends the process.
	Hangup <-chan os.Signal
}

// ConfigError is a problem with the configuration, or with a profile it
// names, that stops Serve before anything starts.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// ErrEveryAdapterStopped is returned, wrapping each adapter's error, when
// every adapter stopped for good (core.ErrFatal): restarting will not help.
var ErrEveryAdapterStopped = errors.New("every adapter stopped")

// Serve runs until ctx is done (SIGTERM, SIGINT), then drains: no new
// turns, running turns may finish for shutdown_grace. It returns early,
// with an error, when every adapter has stopped for good.
func Serve(ctx context.Context, opts Options) error {
	cfg, err := config.Load(opts.ConfigPath, config.Options{Platforms: opts.Platforms})
	if err != nil {
		return &ConfigError{fmt.Errorf("invalid config:\n%w", err)}
	}
	log := cfg.Log.Logger(opts.Log)
	for _, w := range cfg.Warnings() {
		log.Warn("config", "warning", w.Error())
	}
	profs, err := profiles.Load(cfg)
	if err != nil {
		return &ConfigError{err}
	}
	for _, w := range profiles.Warnings(profs) {
		log.Warn("agent cannot start", "problem", w)
	}
	logVoiceWarnings(log, cfg)
	accounts := cfg.Enabled()
	if len(accounts) == 0 {
		return &ConfigError{fmt.Errorf("no platform is enabled in %s: %s", opts.ConfigPath, cfg.EnableHint())}
	}

	st, err := store.Open(cfg.Store, store.Options{Log: log})
	if err != nil {
		return err
	}
	defer st.Close()

	var platforms []core.Platform
	var names []string
	for _, a := range accounts {
		p, err := a.NewAdapter(config.Deps{Store: st, Log: log.With("adapter", a.Name), Presenter: cfg.Presenter,
			Profiles: cfg.OfferedProfiles(a.Name)})
		if err != nil {
			return fmt.Errorf("start %s adapter: %w", a.Name, err)
		}
		platforms = append(platforms, p)
		names = append(names, a.Name)
	}
	m := metrics.New()
	m.Known(names, profileNames(cfg))
	// The listener comes first: if its address is taken, nothing has
	// started that would need stopping.
	if cfg.Metrics.Listen != "" {
		srv, err := metrics.Serve(cfg.Metrics.Listen, m, log)
		if err != nil {
			return err
		}
		defer srv.Close()
	}
	trigLn, err := listenTrigger(cfg)
	if err != nil {
		return fmt.Errorf("trigger listener: %w", err)
	}
	if trigLn != nil {
		defer trigLn.Close()
	}
	consoleLn, consoleCert, err := listenConsole(cfg)
	if err != nil {
		return err
	}
	if consoleLn != nil {
		defer consoleLn.Close()
	}
	sched := schedule.New(scheduleEntries(cfg), st, log)
	eng := engine.New(st, EngineSettings(cfg, profs), engine.Options{Log: log, Observer: m, Schedules: sched,
		// An agent's file:// attachment never names these (profiles' files neither).
		Private: []string{cfg.Path, cfg.Store}, BridgeID: engine.BridgeID(cfg.Store)})
	convs := &conversations{served: names, st: st}
	convs.cfg.Store(cfg)

	health := newHealth(platforms)
	var console *http.Server
	if consoleLn != nil {
		con := webconsole.New(webconsole.Options{
			Token: cfg.Console.Token, Engine: eng, Usage: st, Schedules: sched, Health: health,
			Secrets: secretValues(cfg, profs), TLS: consoleCert != nil, Link: health.link, Name: health.name, Log: log.With("component", "console"),
		})
		// Refused here, before anything runs, like a bad config.
		if console, consoleLn, err = webconsole.Server(con, consoleLn, consoleCert, cfg.Console.Insecure); err != nil {
			return &ConfigError{err}
		}
	}

	var wg sync.WaitGroup
	runCtx, stopAdapters := context.WithCancel(context.Background())
	defer stopAdapters()
	fatal := make(chan error, len(platforms))
	for _, p := range platforms {
		h := eng.Handler(p)
		wg.Go(func() {
			if err := supervise(runCtx, log.With("adapter", p.Name()), p, h, health); err != nil {
				fatal <- err
			}
		})
	}
	if err := eng.Recover(ctx); err != nil {
		log.Error("could not report all interrupted turns", "err", err)
	}
	r := reloader{path: opts.ConfigPath, kinds: opts.Platforms, eng: eng, metrics: m, platforms: names, log: log, sched: sched, convs: convs}
	wg.Go(func() { r.run(runCtx, opts.Hangup) })
	// Schedules stop firing when the drain begins (a signal, or every
	// adapter stopped for good).
	schedCtx, stopSched := context.WithCancel(ctx)
	defer stopSched()
	wg.Go(func() { sched.Run(schedCtx, eng) })
	var trig *http.Server
	if trigLn != nil {
		trig = triggerServer(trigger.New(trigger.Options{
			Token: cfg.Trigger.Token, Submitter: eng, Known: convs.known, Log: log.With("component", "trigger"),
			Profile: func(name string) bool { _, ok := convs.cfg.Load().Profiles[name]; return ok },
		}))
		log.Info("trigger listening", "addr", trigLn.Addr().String(), "path", trigger.Path)
		wg.Go(func() {
			if err := trig.Serve(trigLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("trigger listener stopped", "err", err)
			}
		})
	}
	if console != nil {
		log.Info("console listening", "addr", consoleLn.Addr().String(), "tls", consoleCert != nil)
		wg.Go(func() { webconsole.Run(runCtx, console, consoleLn, log) })
	}
	log.Info("agentbridge serving", "platforms", names, "store", cfg.Store)

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
	stopSched()
	log.Info("shutting down: draining running turns", "grace", cfg.ShutdownGrace)
	drain, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace)
	defer cancel()
	// The adapters run on while the engine drains: those whose platform
	// holds events stop taking them (core.Drainer) so the next instance
	// gets them, the others' late messages are refused, and running turns
	// can still reply. They stop after.
	eng.Shutdown(drain, 15*time.Second)
	if trig != nil {
		// Requests waiting for a turn got its result in the drain; the
		// rest get a moment to be answered.
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		if trig.Shutdown(sctx) != nil {
			trig.Close()
		}
		scancel()
	}
	stopAdapters()
	wg.Wait()
	if len(fatalErrs) == len(platforms) {
		return fmt.Errorf("%w: %w", ErrEveryAdapterStopped, errors.Join(fatalErrs...))
	}
	return nil
}

// supervise keeps one adapter running, restarting it with backoff, so one
// failing platform never stops the others. It gives up only on an error
// marked core.ErrFatal (a rejected token, say), which it returns.
func supervise(ctx context.Context, log *slog.Logger, p core.Platform, h core.Handler, hl *health) error {
	backoff := time.Second
	for ctx.Err() == nil {
		start := time.Now()
		hl.started(p.Name())
		err := p.Run(ctx, h)
		if ctx.Err() != nil {
			return nil
		}
		hl.stopped(p.Name(), err, !errors.Is(err, core.ErrFatal))
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
