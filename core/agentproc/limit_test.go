package agentproc

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// TestReplyLimitTruncates: past MaxReplyBytes nothing more is forwarded or
// kept, the crossing partial is cut at the limit, and the outcome says so;
// an agent that stops printing soon after is not stopped.
func TestReplyLimitTruncates(t *testing.T) {
	const limit = 64 << 10
	p := agentProfile(t, "bigpartials", map[string]string{"AGENT_COUNT": "10", "AGENT_SIZE": "10000"})
	var forwarded int
	o := run(t, context.Background(), p, Turn{Message: "m"}, Options{MaxReplyBytes: limit, CollectPartials: true,
		OnEvent: func(e Event) { forwarded += len(e.Text) }})
	if o.Failed() || o.Stopped != nil {
		t.Fatalf("failed: %s", o.Failure())
	}
	kept := 0
	for _, p := range o.Partials {
		kept += len(p)
	}
	if forwarded != limit || kept != limit || len(o.Partials) != 7 {
		t.Errorf("forwarded %d bytes, kept %d in %d partials; want %d in 7", forwarded, kept, len(o.Partials), limit)
	}
	if want := "… output truncated (the agent printed more than 64 KiB)"; !o.Truncated || o.Truncation() != want {
		t.Errorf("truncated=%v %q, want %q", o.Truncated, o.Truncation(), want)
	}
}

// TestReplyLimitStopsAFlood: an agent that goes on printing past
// FloodFactor times the limit (100 MiB asked for) is stopped as a stopped
// turn is — SIGTERM to its group, 143 — long before it is done.
func TestReplyLimitStopsAFlood(t *testing.T) {
	const limit = 16 << 10
	p := agentProfile(t, "bigpartials", map[string]string{"AGENT_COUNT": strconv.Itoa(1600), "AGENT_SIZE": strconv.Itoa(64 << 10)})
	var forwarded int
	o := run(t, context.Background(), p, Turn{Message: "m"}, Options{MaxReplyBytes: limit,
		OnEvent: func(e Event) { forwarded += len(e.Text) }})
	if !errors.Is(o.Stopped, ErrFlooding) || o.ExitCode != 143 {
		t.Fatalf("stopped %v exit %d, want ErrFlooding and 143", o.Stopped, o.ExitCode)
	}
	if forwarded != limit || !o.Truncated {
		t.Errorf("forwarded %d bytes (truncated %v), want %d", forwarded, o.Truncated, limit)
	}
	if want := "stopped: the agent went on printing past 64 KiB"; o.Failure() != want {
		t.Errorf("failure %q, want %q", o.Failure(), want)
	}
}

// TestReplyLimitStopsAThinkingFlood: thinking never truncates the reply,
// but an agent that goes on thinking past ThinkingFloodFactor times the
// limit is stopped as an output flood is (issue 27 item 3).
func TestReplyLimitStopsAThinkingFlood(t *testing.T) {
	const limit = 4 << 10
	p := agentProfile(t, "bigpartials", map[string]string{"AGENT_COUNT": strconv.Itoa(1600), "AGENT_SIZE": strconv.Itoa(64 << 10), "AGENT_ROLE": "thinking"})
	o := run(t, context.Background(), p, Turn{Message: "m"}, Options{MaxReplyBytes: limit})
	if !errors.Is(o.Stopped, ErrFlooding) || o.ExitCode != 143 {
		t.Fatalf("stopped %v exit %d, want ErrFlooding and 143", o.Stopped, o.ExitCode)
	}
	if o.Truncated {
		t.Errorf("thinking truncated the reply")
	}
}

// TestReplyLimitCutsResultAndError: a reply sent whole in the result, and an
// error's message, are cut to the limit, never inside a character.
func TestReplyLimitCutsResultAndError(t *testing.T) {
	big := strings.Repeat("é", 3000) // 6000 bytes
	for _, tt := range []struct {
		name, line string
		reply      bool
	}{
		{"result", `{"type":"result","text":"` + big + `"}`, true},
		{"error", `{"type":"error","message":"` + big + `"}`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := agentProfile(t, "lines", map[string]string{"AGENT_LINES": `["` + strings.ReplaceAll(tt.line, `"`, `\"`) + `"]`})
			o := run(t, context.Background(), p, Turn{Message: "m"}, Options{MaxReplyBytes: 1001})
			got := o.Error
			if tt.reply {
				got = o.Reply
			}
			if got != strings.Repeat("é", 500) || o.Truncated != tt.reply {
				t.Errorf("got %d bytes %q…, truncated %v", len(got), got[:min(len(got), 10)], o.Truncated)
			}
		})
	}
}

func TestSize(t *testing.T) {
	for n, want := range map[int]string{64 << 10: "64 KiB", 1 << 20: "1 MiB", 3 << 20: "3 MiB", 1500: "1500 bytes", 1536 << 10: "1536 KiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestReplyLimitLeavesThinkingWhole: thinking is not the reply — a
// presenter shows only its tail — so it is forwarded whole, neither
// truncates the reply nor stops the agent, and is kept (Outcome.Partials)
// only within the limit.
func TestReplyLimitLeavesThinkingWhole(t *testing.T) {
	think := `{\"type\":\"partial\",\"role\":\"thinking\",\"text\":\"` + strings.Repeat("t", 1000) + `\"}`
	lines := `["` + strings.Repeat(think+`","`, 20) + `{\"type\":\"result\",\"text\":\"answer\"}"]`
	p := agentProfile(t, "lines", map[string]string{"AGENT_LINES": lines})
	var forwarded int
	o := run(t, context.Background(), p, Turn{Message: "m"}, Options{MaxReplyBytes: 4096, CollectPartials: true,
		OnEvent: func(e Event) { forwarded += len(e.Text) }})
	if o.Failed() || o.Truncated || o.Reply != "answer" {
		t.Fatalf("failed %q truncated %v reply %q", o.Failure(), o.Truncated, o.Reply)
	}
	if forwarded != 20000 || len(o.Partials) != 4 {
		t.Errorf("forwarded %d bytes of thinking, kept %d partials; want 20000 and 4", forwarded, len(o.Partials))
	}
}

// TestReplyLimitCountsOtherRolesAsOutput: a role other than thinking is
// shown as output (P-PART-2 names only output and thinking), so it counts
// toward the limit: an agent cannot flood the reply past it by naming its
// partials' role something else.
func TestReplyLimitCountsOtherRolesAsOutput(t *testing.T) {
	part := `{\"type\":\"partial\",\"role\":\"progress\",\"text\":\"` + strings.Repeat("p", 1000) + `\"}`
	lines := `["` + strings.Repeat(part+`","`, 15) + `{\"type\":\"result\",\"text\":\"answer\"}"]`
	p := agentProfile(t, "lines", map[string]string{"AGENT_LINES": lines})
	var forwarded int
	o := run(t, context.Background(), p, Turn{Message: "m"}, Options{MaxReplyBytes: 4096, CollectPartials: true,
		OnEvent: func(e Event) { forwarded += len(e.Text) }})
	if o.Failed() {
		t.Fatalf("failed: %s", o.Failure())
	}
	kept := 0
	for _, p := range o.Partials {
		kept += len(p)
	}
	if forwarded != 4096 || kept != 4096 || !o.Truncated {
		t.Errorf("forwarded %d bytes, kept %d, truncated %v; want 4096, 4096, true", forwarded, kept, o.Truncated)
	}
}
