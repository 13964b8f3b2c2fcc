package daemon

import (
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/core/engine"
)

// TestEngineSettingsFromDefault: the settings the terminal chat builds
// from config.Default are serve's for an empty config file — the presenter
// waits as serve does, the queue and dedup are serve's, every conversation
// runs the default profile and offers no other.
func TestEngineSettingsFromDefault(t *testing.T) {
	cfg := config.Default()
	cfg.DefaultProfile = "demo"
	cfg.Presenter.Thinking = config.ThinkingHide
	prof := &agentproc.Profile{Name: "demo"}
	s := EngineSettings(cfg, map[string]*agentproc.Profile{"demo": prof})
	conv := core.ConversationKey{Platform: "console", Channel: "local"}
	if s.Presenter.PlaceholderDelay != 1500*time.Millisecond || s.Presenter.ShowThinking || s.Presenter.UsageFooter {
		t.Errorf("presenter = %+v; want serve's default delay, thinking hidden, no footer", s.Presenter)
	}
	if s.QueueDepth != 5 || s.DedupTTL != 24*time.Hour || s.IdleTimeout != 0 {
		t.Errorf("queue %d, dedup %v, idle %v; want serve's defaults", s.QueueDepth, s.DedupTTL, s.IdleTimeout)
	}
	if got := s.Route(conv); got != "demo" || s.DefaultProfile != "demo" || s.Profiles["demo"] != prof {
		t.Errorf("route %q, default %q; want demo", got, s.DefaultProfile)
	}
	if got := s.Choices(conv); len(got) != 1 || got[0] != "demo" {
		t.Errorf("choices %q; want only the default", got)
	}
	if l := s.Limits(conv); l != (engine.Limits{}) {
		t.Errorf("limits %+v; want none", l)
	}
	if len(s.Platforms) != 0 {
		t.Errorf("platforms %v; want none without accounts", s.Platforms)
	}
}
