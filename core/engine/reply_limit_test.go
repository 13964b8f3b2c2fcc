package engine_test

import (
	"os"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/engine"
)

// TestReplyLimitTruncatesAndStopsAFlood: issue 27's flood — an agent that
// prints a big log as partials. Past the reply limit the reply ends with a
// visible line, and an agent that goes on printing is stopped; the real
// runner and a real flooding agent.
func TestReplyLimitTruncatesAndStopsAFlood(t *testing.T) {
	h := newHarness(t, "", func(s *engine.Settings) {
		s.Limits = func(core.ConversationKey) engine.Limits { return engine.Limits{ReplyBytes: 16 << 10} }
	})
	h.send(alice, "flood:40") // 40 KiB: over the limit, under four times it
	last := h.waitText("… output truncated (the agent printed more than 16 KiB).")
	h.idle()
	if strings.Contains(last.Post.Text, "Stopped") || !strings.Contains(last.Post.Text, "tokens") {
		t.Errorf("an agent that stopped printing by itself was stopped: %q", last.Post.Text)
	}
	if n := h.count("FLOOD-DONE"); n != 0 {
		t.Errorf("text past the limit was shown")
	}

	h.send(alice, "flood:102400") // 100 MiB
	h.waitText("… output truncated (the agent printed more than 16 KiB). ⏹ Stopped: the agent went on printing past 64 KiB.")
	h.idle()
}

// TestReplyMemoryStaysFlat: the bridge's peak memory while an agent prints
// 100 MiB in partials stays far below what it printed (before the reply
// limit, serve's presenter kept and re-split all of it: 1 GB peak RSS).
// Peak RSS is read from /proc (VmHWM, reset through clear_refs), so it
// counts every allocation, however short-lived.
func TestReplyMemoryStaysFlat(t *testing.T) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the peak RSS: %v", err)
	}
	h := newHarness(t, "", func(s *engine.Settings) {
		// Smaller than the default only so the fake shows it sooner.
		s.Limits = func(core.ConversationKey) engine.Limits { return engine.Limits{ReplyBytes: 16 << 10} }
	})
	base := rssMB("VmHWM")
	h.send(alice, "flood:102400")
	h.waitText("⏹ Stopped: the agent went on printing past 64 KiB.")
	h.idle()
	if grew := rssMB("VmHWM") - base; grew > 48 {
		t.Errorf("peak RSS grew %.0f MiB while the agent printed 100 MiB; want it flat (under 48 MiB)", grew)
	} else {
		t.Logf("peak RSS grew %.1f MiB", grew)
	}
}
