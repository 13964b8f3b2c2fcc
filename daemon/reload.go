package daemon

import (
	"context"
	"log/slog"
	"maps"
	"os"
	"slices"

	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/core/engine"
	"github.com/agentbridge/agentbridge/daemon/metrics"
	"github.com/agentbridge/agentbridge/daemon/schedule"
	"github.com/agentbridge/agentbridge/profiles"
	"github.com/agentbridge/agentbridge/transcribe"
)

// reloader re-reads the config on each hangup and applies what can change
// live (access lists, routes, profiles, presenter and queue settings). An
// invalid file keeps the old config.
type reloader struct {
	path      string
	kinds     []config.Kind
	eng       *engine.Engine
	metrics   *metrics.Metrics // nil in tests
	platforms []string         // the accounts being served
	log       *slog.Logger
	sched     *schedule.Scheduler // nil in tests
	convs     *conversations      // nil in tests
}

// run reloads on every signal from hup until ctx is done.
func (r reloader) run(ctx context.Context, hup <-chan os.Signal) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		warnings, err := r.reload()
		if err != nil {
			r.log.Error("config reload failed; keeping the old config", "err", err)
			continue
		}
		for _, w := range warnings {
			r.log.Warn("agent cannot start", "problem", w)
		}
		r.log.Info("config reloaded (platform credentials and listeners apply after a restart)")
	}
}

// reload re-reads the config and applies it to the engine, returning
// profiles.Warnings for the new profiles. On any error the engine keeps
// its current settings.
func (r reloader) reload() ([]string, error) {
	cfg, err := config.Load(r.path, config.Options{Platforms: r.kinds})
	if err != nil {
		return nil, err
	}
	profs, err := profiles.Load(cfg)
	if err != nil {
		return nil, err
	}
	logVoiceWarnings(r.log, cfg)
	r.eng.Reload(EngineSettings(cfg, profs))
	if r.sched != nil {
		r.sched.Reload(scheduleEntries(cfg))
	}
	if r.convs != nil {
		r.convs.cfg.Store(cfg)
	}
	if r.metrics != nil {
		r.metrics.Known(r.platforms, profileNames(cfg))
	}
	return profiles.Warnings(profs), nil
}

func profileNames(cfg *config.Config) []string {
	return slices.Sorted(maps.Keys(cfg.Profiles))
}

// EngineSettings turns a validated config and its loaded profiles into the
// engine's settings: serve at start and on every reload, and the terminal
// chat from config.Default, so the two read a config one way.
func EngineSettings(cfg *config.Config, profs map[string]*agentproc.Profile) *engine.Settings {
	platforms := map[string]engine.PlatformSettings{}
	for _, a := range cfg.Accounts {
		p := a.Section.Shared()
		platforms[a.Name] = engine.PlatformSettings{
			Scope:        p.SessionScope,
			Prefix:       p.CommandPrefix,
			AllowUsers:   p.AllowUsers,
			AllowChats:   p.AllowChats,
			Approvers:    p.Approvers,
			MaxFileBytes: p.MaxFileBytes,
		}
	}
	return &engine.Settings{
		Platforms:      platforms,
		Profiles:       profs,
		DefaultProfile: cfg.DefaultProfile,
		Route:          func(conv core.ConversationKey) string { return cfg.ProfileFor(conv) },
		Choices:        cfg.ProfileChoices,
		Voice:          func(conv core.ConversationKey) engine.Voice { return voice(cfg.TranscribeFor(conv)) },
		Limits: func(conv core.ConversationKey) engine.Limits {
			l := cfg.LimitsFor(conv)
			return engine.Limits{TurnsPerHour: l.TurnsPerHour, CostPerDayUSD: l.CostPerDayUSD, ReplyBytes: l.ReplyBytes}
		},
		QueueDepth: cfg.QueueDepth,
		// Agents at once; the engine keeps the share within the cap.
		MaxTurns:        cfg.MaxConcurrentTurns,
		MaxTurnsPerUser: cfg.MaxConcurrentTurnsPerUser,
		OnSaturated:     cfg.OnSaturated,
		Busy:            cfg.BusyFor,
		DedupTTL:        cfg.DedupTTL,
		IdleTimeout:     cfg.IdleTimeout,
		Files:           engine.FileLimits{PerTurn: cfg.Files.MaxPerTurn, BytesPerTurn: cfg.Files.MaxBytesPerTurn},
		Presenter: engine.PresenterSettings{
			PlaceholderDelay: cfg.Presenter.PlaceholderDelay,
			ShowThinking:     cfg.Presenter.Thinking != config.ThinkingHide,
			UsageFooter:      cfg.Presenter.UsageFooter,
			MinEditInterval:  cfg.Presenter.MinEditInterval,
		},
	}
}

// logVoiceWarnings logs the transcribe commands that cannot run here.
func logVoiceWarnings(log *slog.Logger, cfg *config.Config) {
	for _, w := range transcribe.Warnings(cfg) {
		log.Warn("voice notes cannot be transcribed", "problem", w.Error())
	}
}

// voice is the engine's Voice for a transcribe section: its engine (none
// when it is off) and its limits.
func voice(t config.Transcribe) engine.Voice {
	if !t.On() {
		return engine.Voice{}
	}
	v := engine.Voice{Timeout: t.Timeout, MaxDuration: t.MaxDuration, MaxBytes: t.MaxBytes}
	if len(t.Command) > 0 {
		v.Transcriber = &transcribe.Command{Argv: t.Command}
	} else {
		v.Transcriber = &transcribe.OpenAI{URL: t.APIURL, Model: t.Model, Key: t.APIKey, Language: t.Language}
	}
	return v
}
