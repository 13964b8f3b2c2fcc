package main

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/core/engine"
	"github.com/agentbridge/agentbridge/profiles/demo"
)

// stateDir is where the terminal chat keeps its store and the demo agent's
// memory: $XDG_STATE_HOME/agentbridge, or ~/.local/state/agentbridge.
func stateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "agentbridge"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find a state directory: %w (set XDG_STATE_HOME or pass --store)", err)
	}
	return filepath.Join(home, ".local", "state", "agentbridge"), nil
}

// demoProfile runs this very binary as the built-in demo agent, so the
// demo needs nothing installed.
func demoProfile(state string) (*agentproc.Profile, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("locate the agentbridge binary for the demo agent: %w", err)
	}
	env := map[string]string{demo.StateDirEnv: filepath.Join(state, "demo")}
	if d := os.Getenv(demo.DelayEnv); d != "" {
		env[demo.DelayEnv] = d
	}
	return &agentproc.Profile{
		Name:              "demo",
		Command:           exe,
		Args:              []string{demoAgentCommand},
		Env:               env,
		Timeout:           10 * time.Minute,
		KillGrace:         2 * time.Second,
		Streaming:         true,
		Permission:        true,
		PermissionTimeout: 5 * time.Minute,
	}, nil
}

// profileWarnings checks that each profile's agent could start on this
// machine (its command found, its working directory there) and describes
// each one that could not, in name order. A warning, not an error: the
// config may be checked on another machine than the one that serves it.
func profileWarnings(profiles map[string]*agentproc.Profile) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(profiles)) {
		if err := profiles[name].Check(nil); err != nil {
			out = append(out, fmt.Sprintf("profile %s: %v; its turns will fail until that is fixed", name, err))
		}
	}
	return out
}

// loadProfiles loads every profile the config names.
func loadProfiles(cfg *config.Config) (map[string]*agentproc.Profile, error) {
	profiles := map[string]*agentproc.Profile{}
	var errs []string
	for name, ref := range cfg.Profiles {
		var p *agentproc.Profile
		var err error
		switch {
		case ref == config.BuiltinPrefix+"demo":
			state := filepath.Join(filepath.Dir(cfg.Store), "demo-state")
			p, err = demoProfile(state)
		case strings.HasPrefix(ref, config.BuiltinPrefix):
			err = fmt.Errorf("unknown built-in profile %q (known: builtin:demo)", ref)
		default:
			p, err = agentproc.LoadProfile(ref)
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("profile %s: %v", name, err))
			continue
		}
		if p.Name == "" {
			p.Name = name
		}
		profiles[name] = p
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return profiles, nil
}

// engineSettings turns a validated config and its loaded profiles into the
// engine's settings.
func engineSettings(cfg *config.Config, profiles map[string]*agentproc.Profile) *engine.Settings {
	platform := func(p config.Platform) engine.PlatformSettings {
		return engine.PlatformSettings{
			Scope:        p.SessionScope,
			Prefix:       p.CommandPrefix,
			AllowUsers:   p.AllowUsers,
			AllowChats:   p.AllowChats,
			Approvers:    p.Approvers,
			MaxFileBytes: p.MaxFileBytes,
		}
	}
	return &engine.Settings{
		Platforms: map[string]engine.PlatformSettings{
			"slack":    platform(cfg.Slack.Platform),
			"discord":  platform(cfg.Discord.Platform),
			"telegram": platform(cfg.Telegram.Platform),
		},
		Profiles:       profiles,
		DefaultProfile: cfg.DefaultProfile,
		Route:          func(conv core.ConversationKey) string { return cfg.ProfileFor(conv) },
		QueueDepth:     cfg.QueueDepth,
		DedupTTL:       cfg.DedupTTL,
		IdleTimeout:    cfg.IdleTimeout,
		Presenter: engine.PresenterSettings{
			PlaceholderDelay: cfg.Presenter.PlaceholderDelay,
			ShowThinking:     cfg.Presenter.Thinking != "hide",
			UsageFooter:      cfg.Presenter.UsageFooter,
			MinEditInterval:  cfg.Presenter.MinEditInterval,
		},
	}
}

// newLogger builds the root logger. Nothing else creates one.
func newLogger(w io.Writer, level slog.Level, format string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if format == config.FormatJSON {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
