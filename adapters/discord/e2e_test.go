package discord

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/discord/discordtest"
	"github.com/agentbridge/agentbridge/internal/testagent"
)

// TestEngineStreamsLongAnswer runs the engine, a real store, the adapter,
// the fake Discord and a real agent process: the reply streams by edits no
// faster than the channel budget, never meets a 429, and ends as the full
// answer split into messages under 2,000 characters, each with balanced
// code fences.
func TestEngineStreamsLongAnswer(t *testing.T) {
	t.Parallel()
	fake := discordtest.NewServer(testToken)
	t.Cleanup(fake.Close) // after the engine's cleanup (registered later, run first): its turns finish against a live fake
	fake.AddChannel(discordtest.Channel{ID: "C1", Type: 0, GuildID: "G1"})
	logW := &logBuffer{}
	defer func() {
		if t.Failed() {
			t.Log(logW.String())
			t0 := time.Now()
			if calls := fake.Calls(); len(calls) > 0 {
				t0 = calls[0].At
			}
			for _, c := range fake.Calls() {
				t.Logf("%6dms %s %s %d", c.At.Sub(t0).Milliseconds(), c.Method, c.Path, c.Status)
			}
		}
	}()
	eng := runEngine(t, fake, logW)

	fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M1", "C1", "G1", alice, "essay", true))
	want := testagent.Essay()
	waitFor(t, fake, "the full answer", func() bool {
		return strings.Contains(strings.Join(fake.Contents("C1"), ""), "The end.")
	})
	wctx, wcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer wcancel()
	t.Log("full answer at", time.Now().Format("05.000"))
	if err := eng.Idle(wctx); err != nil {
		t.Fatal(err)
	}

	t.Log("idle at", time.Now().Format("05.000"))
	msgs := fake.Messages("C1")
	if len(msgs) < 3 {
		t.Fatalf("%d messages, want the answer split into ≥ 3", len(msgs))
	}
	var joined strings.Builder
	for _, m := range msgs {
		if n := len([]rune(m.Content)); n > 2000 {
			t.Errorf("message %s has %d characters", m.ID, n)
		}
		if strings.Count(m.Content, "```")%2 != 0 {
			t.Errorf("message %s breaks a code block:\n%s", m.ID, m.Content)
		}
		joined.WriteString(m.Content)
	}
	// Every line of code and every paragraph arrived.
	for _, line := range strings.Split(want, "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "```") && !strings.Contains(joined.String(), strings.TrimSpace(line)) {
			t.Errorf("line %q missing from the reply", line)
			break
		}
	}
	// Cadence: edits of one message at least ~1 s apart; no 429s.
	byMsg := map[string][]time.Time{}
	for _, c := range fake.Calls() {
		if c.Status == 429 {
			t.Errorf("%s %s met a 429", c.Method, c.Path)
		}
		if c.Method == "PATCH" {
			byMsg[c.Path] = append(byMsg[c.Path], c.At)
		}
	}
	edits := 0
	for path, ts := range byMsg {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		edits += len(ts)
		for i := 1; i < len(ts); i++ {
			if gap := ts[i].Sub(ts[i-1]); gap < 900*time.Millisecond {
				t.Errorf("%s edited %s after the previous edit, want ≥ 1 s", path, gap)
			}
		}
	}
	if edits == 0 {
		t.Error("the reply was never edited: it did not stream")
	}

	// "@bot new" is the bridge's command, not a question for the agent:
	// a mention is all Discord shows a bot without the message-content
	// intent, so a typed "!new" could not be seen.
	fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M2", "C1", "G1", alice, "new", true))
	waitFor(t, fake, "the new command's answer", func() bool {
		return strings.Contains(strings.Join(fake.Contents("C1"), "\n"), "Fresh session started")
	})
}
