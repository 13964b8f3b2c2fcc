package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/engine"
	"github.com/agentbridge/agentbridge/core/platformtest"
	"github.com/agentbridge/agentbridge/internal/testagent"
)

// busyHarness is a harness whose conversations are in busy mode mode, whose
// agent logs each turn's message to a file, and where boss (an approver)
// may send messages too.
func busyHarness(t *testing.T, mode string, tweak func(*engine.Settings)) (*harness, func() []string) {
	t.Helper()
	runs := filepath.Join(t.TempDir(), "runs.log")
	h := newHarness(t, "", func(s *engine.Settings) {
		s.Busy = func(core.ConversationKey) string { return mode }
		ps := s.Platforms["fake"]
		ps.AllowUsers = append(ps.AllowUsers, boss.ID)
		s.Platforms["fake"] = ps
		s.Profiles["test"].Env[testagent.LogEnv] = runs
		if tweak != nil {
			tweak(s)
		}
	})
	return h, func() []string {
		b, _ := os.ReadFile(runs)
		return strings.Fields(strings.ReplaceAll(string(b), " ", "_"))
	}
}

// gate returns the message that holds a turn open (testagent's gate:PATH)
// and the function that lets it finish.
func gate(t *testing.T) (string, func()) {
	path := filepath.Join(t.TempDir(), "open")
	return "gate:" + path, func() {
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestInterruptByTheRequester: in interrupt mode the running turn's
// requester's newer message stops it — the whole agent, its reply ending
// "⏹ Interrupted by a newer message." — and runs next, before a message
// someone else queued earlier, resuming the same agent session (P-SID-1);
// the other person's message only queues, and runs after.
func TestInterruptByTheRequester(t *testing.T) {
	h, runs := busyHarness(t, engine.BusyInterrupt, nil)
	hold, _ := gate(t)
	h.send(alice, hold)
	h.waitText("gated")
	h.send(bob, "bob queued first")
	queued := h.waitText("Queued — position 1")
	if len(queued.Post.Buttons) != 0 {
		t.Errorf("interrupt mode's queued notice has buttons %+v", queued.Post.Buttons)
	}
	if n := h.count("Interrupted"); n != 0 {
		t.Fatalf("someone else's message interrupted the turn: %q", h.plat.Texts(conv))
	}
	h.send(alice, "never mind that")
	first := h.waitText("⏹ Interrupted by a newer message.")
	if !strings.Contains(first.Post.Text, "gated") || strings.Contains(first.Post.Text, "released") {
		t.Errorf("interrupted reply = %q, want the text so far and the notice", first.Post.Text)
	}
	again := h.waitText("never mind that")
	if !strings.Contains(again.Post.Text, "(resumed sess-") {
		t.Errorf("the newer message's reply %q did not resume the session", again.Post.Text)
	}
	h.waitText("bob queued first")
	h.idle()
	if a, b := h.index("never mind that"), h.index("bob queued first"); a > b {
		t.Errorf("the interrupting message ran after the one queued before it: %q", h.plat.Texts(conv))
	}
	if got := runs(); len(got) != 3 {
		t.Errorf("agent runs = %q, want the held turn, the newer message and Bob's, once each", got)
	}
}

// TestInterruptByAnApprover: an approver's message interrupts anyone's
// turn, and an open permission prompt of the interrupted turn is settled as
// denied, saying why, before its agent is stopped.
func TestInterruptByAnApprover(t *testing.T) {
	h, _ := busyHarness(t, engine.BusyInterrupt, nil)
	h.send(alice, "perm")
	h.waitText("Permission needed")
	h.send(boss, "approver here")
	prompt := h.waitText("❌ Denied: interrupted by a newer message.")
	if len(prompt.Post.Buttons) != 0 {
		t.Errorf("the settled prompt keeps its buttons: %+v", prompt.Post.Buttons)
	}
	h.waitText("⏹ Interrupted by a newer message.")
	if m := h.waitText("approver here"); !strings.Contains(m.Post.Text, "(resumed sess-") {
		t.Errorf("the approver's reply %q did not resume the session", m.Post.Text)
	}
	h.idle()
}

// TestInterruptTwiceRunsTheNewest: messages sent while the interrupted
// agent is still stopping interrupt in turn: each message's turn runs in
// order, and one that a still newer message overtook before it started
// says so without starting an agent.
func TestInterruptTwiceRunsTheNewest(t *testing.T) {
	h, runs := busyHarness(t, engine.BusyInterrupt, func(s *engine.Settings) {
		s.Profiles["test"].KillGrace = 5 * time.Second
	})
	h.send(alice, "ignore-term") // holds its slot until SIGKILL
	h.waitText("working")
	h.send(alice, "second thought")
	h.send(alice, "third thought")
	h.waitText("third thought")
	h.idle()
	if n := h.count("⏹ Interrupted by a newer message."); n != 2 {
		t.Errorf("%d interrupted notices, want 2 (the running turn, the overtaken one): %q", n, h.plat.Texts(conv))
	}
	if got := runs(); len(got) != 2 || got[1] != "third_thought" {
		t.Errorf("agent runs = %q, want the first and the newest message only", got)
	}
}

// TestCollectJoinsABurst: in collect mode the messages sent while a turn
// runs — three people, attachments — become one next turn, in order, each
// line attributed; one queued notice is kept up to date in place; the
// agent runs twice in all and no journal entry is left.
func TestCollectJoinsABurst(t *testing.T) {
	h, runs := busyHarness(t, engine.BusyCollect, nil)
	hold, release := gate(t)
	h.plat.AddFile("a-src", []byte("A body"))
	h.plat.AddFile("b-src", []byte("B body"))
	h.send(alice, hold)
	h.waitText("gated")
	h.plat.Deliver(t.Context(), core.Message{Conv: conv, ID: "c1", From: alice, Text: "first part",
		Attachments: []core.Attachment{{Kind: "file", Name: "a.txt", Source: "a-src"}}})
	h.waitText("⏳ Queued: I'll answer it")
	h.send(bob, "second part")
	h.plat.Deliver(t.Context(), core.Message{Conv: conv, ID: "c3", From: boss, Text: "third part",
		Attachments: []core.Attachment{{Kind: "file", Name: "b.txt", Source: "b-src"}}})
	notice := h.waitText("⏳ Queued: 3 messages, to be answered together")
	if n := h.count("⏳ Queued"); n != 1 || notice.Edits != 2 {
		t.Errorf("%d queued notices, %d edits; want one, edited twice: %q", n, notice.Edits, h.plat.Texts(conv))
	}
	release()
	reply := h.waitText("Boss: third part")
	for _, want := range []string{"[a.txt: A body <nil>]", "[b.txt: B body <nil>]", "Alice: first part Bob: second part Boss: third part"} {
		if !strings.Contains(reply.Post.Text, want) {
			t.Errorf("collected reply %q lacks %q", reply.Post.Text, want)
		}
	}
	h.idle()
	// The log has a line per line of each turn's message.
	if got := runs(); len(got) != 4 || !slices.Equal(got[1:], []string{"Alice:_first_part", "Bob:_second_part", "Boss:_third_part"}) {
		t.Errorf("agent runs = %q, want two: the held turn and the collected one", got)
	}
	if entries, err := h.st.Journal(t.Context()); err != nil || len(entries) != 0 {
		t.Errorf("journal after the turns = %+v, %v; want empty", entries, err)
	}

	// One sender: the lines are not attributed; a new burst gets a new notice.
	hold2, release2 := gate(t)
	h.send(alice, hold2)
	h.waitTextN("gated", 2)
	h.send(alice, "one")
	h.send(alice, "two")
	h.waitText("⏳ Queued: 2 messages")
	release2()
	if m := h.waitText("one two"); strings.Contains(m.Post.Text, "Alice:") {
		t.Errorf("one sender's collected reply %q is attributed", m.Post.Text)
	}
	h.idle()
}

// TestSkipButton: in queue mode the queued notice offers ⏭. A stranger's
// press and the press of someone who did not start the running turn are
// refused privately and change nothing; the requester's stops the running
// turn and runs the message next, before one queued earlier, and the
// button leaves the notice once its turn starts.
func TestSkipButton(t *testing.T) {
	h, _ := busyHarness(t, engine.BusyQueue, nil)
	hold, _ := gate(t)
	h.send(alice, hold)
	h.waitText("gated")
	h.send(bob, "bob queued first")
	h.waitText("Queued — position 1")
	h.send(alice, "alice queued second")
	notice := h.waitText("Queued — position 2")
	if len(notice.Post.Buttons) != 1 || notice.Post.Buttons[0].Label != "⏭ Stop and answer this now" || !notice.Post.Buttons[0].Optional {
		t.Fatalf("queued notice buttons = %+v, want ⏭", notice.Post.Buttons)
	}
	skip := core.Action{Conv: conv, Value: notice.Post.Buttons[0].Value, Ref: notice.Ref}
	mallory := core.User{ID: "mallory"}
	for _, tt := range []struct {
		who  core.User
		want string
	}{
		{mallory, "Only the person whose message is being answered, or an approver"},
		{bob, "Only the person whose message is being answered, or an approver"},
	} {
		a := skip
		a.From = tt.who
		if got := press(t, h.plat, a); !strings.Contains(got, tt.want) {
			t.Errorf("%s's press answered %q, want %q", tt.who.ID, got, tt.want)
		}
	}
	elsewhere := skip
	elsewhere.From, elsewhere.Conv.Channel = alice, "other"
	if got := press(t, h.plat, elsewhere); !strings.Contains(got, "no longer waiting") {
		t.Errorf("a press from another channel answered %q", got)
	}
	if n := h.count("Interrupted"); n != 0 {
		t.Fatalf("a refused press interrupted the turn: %q", h.plat.Texts(conv))
	}
	a := skip
	a.From = alice
	if got := press(t, h.plat, a); got != "" {
		t.Errorf("the requester's press answered %q, want nothing", got)
	}
	h.waitText("⏹ Interrupted by a newer message.")
	h.waitText("bob queued first")
	h.idle()
	if a, b := h.index("alice queued second"), h.index("bob queued first"); a < 0 || a > b {
		t.Errorf("the skipped-to message did not run first: %q", h.plat.Texts(conv))
	}
	for _, m := range h.plat.Messages(conv) {
		if len(m.Post.Buttons) != 0 {
			t.Errorf("message %q keeps buttons after its turn started", m.Post.Text)
		}
	}
	if got := press(t, h.plat, a); !strings.Contains(got, "no longer waiting") {
		t.Errorf("a second press answered %q", got)
	}
}

// TestAgentCapTenConversations: with max_concurrent_turns 2, ten
// conversations started at once never have more than two agents alive;
// the others wait with one notice each, kept up to date in place, and
// start in the order their messages arrived.
func TestAgentCapTenConversations(t *testing.T) {
	const n, max = 10, 2
	h, runs := busyHarness(t, engine.BusyQueue, func(s *engine.Settings) { s.MaxTurns, s.MaxTurnsPerUser = max, max })
	convs := make([]core.ConversationKey, n)
	releases := make([]func(), n)
	for i := range convs {
		convs[i] = core.ConversationKey{Platform: "fake", Workspace: "w", Channel: fmt.Sprintf("ten-%d", i)}
	}
	has := func(i int, want string) (platformtest.Message, bool) {
		for _, m := range h.plat.Messages(convs[i]) {
			if strings.Contains(m.Post.Text, want) {
				return m, true
			}
		}
		return platformtest.Message{}, false
	}
	wait := func(what string, cond func() bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		if !h.plat.Wait(ctx, cond) {
			for i := range convs {
				t.Logf("conversation %d: %q", i, h.plat.Texts(convs[i]))
			}
			t.Fatalf("waiting for %s; runs %q", what, runs())
		}
	}
	// alive lists the conversations whose agent showed "gated" and not yet
	// " released": held open, so alive until released.
	alive := func() []int {
		var out []int
		for i := range convs {
			if m, ok := has(i, "gated"); ok && !strings.Contains(m.Post.Text, "released") {
				out = append(out, i)
			}
		}
		return out
	}
	for i := range convs {
		var msg string
		msg, releases[i] = gate(t)
		h.plat.Deliver(t.Context(), core.Message{Conv: convs[i], ID: fmt.Sprintf("ten-%d", i), From: alice, Text: msg})
	}
	// Each waiting turn's notice counts the turns that arrived before it.
	wait("the waiting notices", func() bool {
		for i := max; i < n; i++ {
			if _, ok := has(i, fmt.Sprintf("Waiting for a free agent (%d ahead)", i-max)); !ok {
				return false
			}
		}
		return len(alive()) == max
	})
	var started []int
	for next := 0; next < n; next++ {
		live := alive()
		if len(live) > max {
			t.Fatalf("agents alive in %v, the cap is %d", live, max)
		}
		for _, i := range live {
			if !slices.Contains(started, i) {
				started = append(started, i)
			}
		}
		releases[next]()
		wait(fmt.Sprintf("conversation %d's end and the next start", next), func() bool {
			m, ok := has(next, "released")
			return ok && strings.Contains(m.Post.Text, "34 out") && len(alive()) == min(max, n-next-1)
		})
	}
	if !slices.Equal(started, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Errorf("conversations started in the order %v, want arrival order", started)
	}
	for i := max; i < n; i++ {
		k := 0
		for _, m := range h.plat.Messages(convs[i]) {
			if strings.Contains(m.Post.Text, "Waiting for a free agent") {
				k++
			}
		}
		if k != 1 {
			t.Errorf("conversation %d got %d waiting notices, want one kept up to date", i, k)
		}
	}
	if m, _ := has(n-1, "Waiting for a free agent"); !strings.Contains(m.Post.Text, "(0 ahead)") || m.Edits == 0 {
		t.Errorf("the last conversation's notice = %q after %d edits, want it counted down to 0 ahead", m.Post.Text, m.Edits)
	}
	h.idle()
}

// TestSaturatedReject: with on_saturated: reject a turn past the bridge's
// cap is refused at once in one line and starts no agent; a profile's own
// cap (max_concurrent) makes turns wait for that profile's agents alone.
func TestSaturatedReject(t *testing.T) {
	h, runs := busyHarness(t, engine.BusyQueue, func(s *engine.Settings) {
		s.MaxTurns, s.MaxTurnsPerUser = 1, 1
		s.OnSaturated = "reject"
	})
	other := core.ConversationKey{Platform: "fake", Workspace: "w", Channel: "other"}
	hold, release := gate(t)
	h.send(alice, hold)
	h.waitText("gated")
	h.plat.Deliver(t.Context(), core.Message{Conv: other, ID: "rejected", From: bob, Text: "not now"})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	want := "🚦 All 1 of the bridge's agents are busy, so this message was not run. Please send it again in a while."
	if !h.plat.Wait(ctx, func() bool { return len(h.plat.Messages(other)) > 0 }) {
		t.Fatal("the second conversation got no answer")
	}
	if got := h.plat.Texts(other); len(got) != 1 || got[0] != want {
		t.Errorf("second conversation = %q, want %q alone", got, want)
	}
	release()
	h.idle()
	if got := runs(); len(got) != 1 {
		t.Errorf("agent runs = %q, want only the held turn", got)
	}
}

// TestProfileCap: a profile's max_concurrent caps its agents while the
// bridge has slots to spare; the waiting turn says which cap it waits for.
func TestProfileCap(t *testing.T) {
	h, _ := busyHarness(t, engine.BusyQueue, func(s *engine.Settings) { s.Profiles["test"].MaxConcurrent = 1 })
	other := core.ConversationKey{Platform: "fake", Workspace: "w", Channel: "other"}
	hold, release := gate(t)
	h.send(alice, hold)
	h.waitText("gated")
	h.plat.Deliver(t.Context(), core.Message{Conv: other, ID: "capped", From: bob, Text: "after you"})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if !h.plat.Wait(ctx, func() bool { return len(h.plat.Messages(other)) > 0 }) {
		t.Fatal("the second conversation got no notice")
	}
	if got := h.plat.Texts(other)[0]; got != "⏳ Waiting for a free agent (0 ahead): all 1 of profile test's agents are busy. I'll answer when one is free." {
		t.Errorf("waiting notice = %q", got)
	}
	release()
	if !h.plat.Wait(ctx, func() bool {
		return slices.ContainsFunc(h.plat.Texts(other), func(s string) bool { return strings.Contains(s, "after you") })
	}) {
		t.Fatalf("the capped turn never ran: %q", h.plat.Texts(other))
	}
	h.idle()
}
