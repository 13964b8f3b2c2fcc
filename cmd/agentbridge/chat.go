package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"golang.org/x/term"

	"github.com/agentbridge/agentbridge/adapters/console"
	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/core/engine"
	"github.com/agentbridge/agentbridge/daemon"
	"github.com/agentbridge/agentbridge/profiles"
	"github.com/agentbridge/agentbridge/store"
)

// cmdChat is the terminal adapter: one local conversation, replies streamed
// in place, permission prompts answered by typing a key.
func cmdChat(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if err := closeToAgents(); err != nil {
		return err
	}
	fs := newFlagSet("chat", "usage: agentbridge chat [--profile PATH] [--store PATH] [--hide-thinking] [-v]\n\n", stderr)
	profilePath := fs.String("profile", "", "agent profile YAML (default: the built-in demo agent)")
	storePath := fs.String("store", "", "session store file (default: $XDG_STATE_HOME/agentbridge/chat.db)")
	hideThinking := fs.Bool("hide-thinking", false, "hide the agent's thinking instead of showing it quoted")
	verbose := fs.Bool("v", false, "log bridge activity to stderr")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("chat takes no arguments; type your messages after it starts")
	}

	state, err := profiles.StateDir()
	if err != nil && (*storePath == "" || *profilePath == "") {
		return err
	}
	var prof *agentproc.Profile
	if *profilePath == "" {
		prof, err = profiles.Demo(state)
	} else {
		prof, err = profiles.Open(*profilePath, state)
	}
	if err != nil {
		return usageError{err.Error()}
	}
	if *storePath == "" {
		*storePath = filepath.Join(state, "chat.db")
	}
	if err := os.MkdirAll(filepath.Dir(*storePath), 0o700); err != nil {
		return fmt.Errorf("create store directory: %w", err)
	}
	level := slog.LevelError
	if *verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	// The store's warnings (an empty file that may have lost its sessions)
	// are shown even without -v.
	st, err := store.Open(*storePath, store.Options{Log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: min(level, slog.LevelWarn)}))})
	if errors.Is(err, store.ErrLocked) {
		// One store has one writer: a second chat needs a store of its own.
		return fmt.Errorf("%w — another agentbridge chat (or serve) has it open; give this one its own with --store PATH", err)
	}
	if err != nil {
		return err
	}
	defer st.Close()

	// Files an agent sends are saved next to the store.
	opts := console.Options{FilesDir: filepath.Join(filepath.Dir(*storePath), "files")}
	if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		opts.Prompt = "you> "
		opts.Width = func() int {
			w, _, err := term.GetSize(int(f.Fd()))
			if err != nil {
				return 0
			}
			return w
		}
		// The adapter draws the typed line itself, so it never lands in
		// a streamed answer; without character mode the terminal echoes.
		if restore, err := characterMode(int(f.Fd())); err == nil {
			defer restore()
			opts.Echo = true
		} else {
			log.Warn("typing will echo into the output", "err", err)
		}
	}
	adapter := console.New(stdin, stdout, opts)
	if f, ok := stdin.(*os.File); ok && opts.Echo {
		// After Ctrl-Z and fg the shell has put the terminal back in line
		// mode: set character mode again and draw the prompt anew.
		stop := onContinue(func() {
			if _, err := characterMode(int(f.Fd())); err == nil {
				adapter.Redraw()
			}
		})
		defer stop()
	}
	// serve's defaults, with the usage footer on. The profile is named as
	// serve would: an agent session id belongs to the profile that made
	// it, so `chat --profile` with another agent starts fresh.
	cfg := config.Default()
	cfg.DefaultProfile = prof.Name
	cfg.Presenter.UsageFooter = true
	if *hideThinking {
		cfg.Presenter.Thinking = config.ThinkingHide
	}
	settings := daemon.EngineSettings(cfg, map[string]*agentproc.Profile{prof.Name: prof})
	// The terminal is the one user's own: anyone at it may use the bot.
	settings.Platforms[adapter.Name()] = engine.PlatformSettings{Scope: core.ScopeChannel, Prefix: "/", AllowUsers: []string{core.Wildcard}}
	eng := engine.New(st, settings, engine.Options{Log: log, Private: []string{*storePath}, BridgeID: engine.BridgeID(*storePath)})
	h := eng.Handler(adapter)

	who := "the built-in demo agent"
	if *profilePath != "" {
		who = *profilePath
	}
	fmt.Fprintf(stdout, "agentbridge chat with %s — sessions are kept in %s\n"+
		"Type /help for commands. Ctrl-C stops the running turn; Ctrl-C when idle (or twice quickly) or Ctrl-D quits.\n",
		who, *storePath)
	// After the banner, so what a crash interrupted is reported under it.
	if err := eng.Recover(ctx); err != nil {
		log.Warn("could not report interrupted turns", "err", err)
	}

	// Ctrl-C is the chat's to handle, not a reason to end main's context:
	// it stops the running turn and the chat goes on.
	chatCtx, quit := context.WithCancel(ctx)
	defer quit()
	stopWatch := watchInterrupts(func() {
		// Nothing to stop, or a second press: quit.
		if !eng.InterruptPlatform(adapter.Name()) {
			quit()
		}
	}, quit)
	defer stopWatch()

	runErr := adapter.Run(chatCtx, h)
	defer adapter.End()
	if chatCtx.Err() != nil {
		// Quit by Ctrl-C (or SIGTERM): stop the running turn now, as an
		// interrupt (D-STOP-1: 130); its reply says "Stopped.".
		eng.Interrupt(prof.KillGrace + 5*time.Second)
		return runErr
	}
	// End of input: nobody can type an answer any more, so permission
	// requests are denied rather than left to time out; the running turn
	// may finish (Ctrl-C still stops it).
	eng.DenyPrompts(adapter.Name(), "no one is left to answer (end of input)")
	drain, cancel := context.WithTimeout(context.Background(), prof.Timeout+prof.KillGrace)
	defer cancel()
	eng.Shutdown(drain, prof.KillGrace+5*time.Second)
	return runErr
}

// doubleInterrupt is how close two Ctrl-C presses must come to quit even
// while a turn is running.
const doubleInterrupt = 2 * time.Second

// watchInterrupts takes SIGINT (Ctrl-C) away from main's context and calls
// once for each press, or twice for a second press within doubleInterrupt.
// The returned stop ends the watch and waits for its goroutine.
func watchInterrupts(once, twice func()) (stop func()) {
	intr := make(chan os.Signal, 1)
	// Reset undoes main's signal.NotifyContext for SIGINT only; SIGTERM
	// still ends the context.
	signal.Reset(os.Interrupt)
	signal.Notify(intr, os.Interrupt)
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		var last time.Time
		for {
			select {
			case <-intr:
			case <-done:
				return
			}
			if !last.IsZero() && time.Since(last) < doubleInterrupt {
				twice()
			} else {
				once()
			}
			last = time.Now()
		}
	}()
	return func() {
		signal.Stop(intr)
		close(done)
		<-ended
	}
}
