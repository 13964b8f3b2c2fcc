package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/platformtest"
	"github.com/agentbridge/agentbridge/store"
)

// The durable queue, ↻ Retry and edits of queued messages (issue 23). A
// crash is simulated as the other restart tests do: the journal as a
// crash would leave it is read while the turns are in flight, the bridge
// is shut down (which clears it), and the entries are put back before a
// new bridge opens the same bbolt file.

// waitJournalAll waits until ok accepts the whole journal, and returns it.
func (h *harness) waitJournalAll(ok func([]core.JournalEntry) bool) []core.JournalEntry {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		entries, err := h.st.Journal(h.t.Context())
		if err != nil {
			h.t.Fatal(err)
		}
		if ok(entries) {
			return entries
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("journal = %+v; not what the test waits for", entries)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// crash closes h and puts entries back into its store, as a kill -9 with
// those turns in flight would have left it.
func (h *harness) crash(entries []core.JournalEntry) {
	h.t.Helper()
	h.close()
	st, err := store.Open(h.dbPath, store.Options{})
	if err != nil {
		h.t.Fatal(err)
	}
	defer st.Close()
	for _, e := range entries {
		if err := st.JournalPut(h.t.Context(), e); err != nil {
			h.t.Fatal(err)
		}
	}
}

// replies returns the texts of messages sent answering id, as they read
// now, in order.
func (h *harness) replies(id string) []string {
	sent := map[string]bool{}
	for _, c := range h.plat.CallsOf(platformtest.OpSend) {
		if c.Post.ReplyTo == id && c.Err == nil {
			sent[c.Ref.ID] = true
		}
	}
	var out []string
	for _, m := range h.plat.Messages(conv) {
		if sent[m.Ref.ID] {
			out = append(out, m.Post.Text)
		}
	}
	return out
}

// index is the position of the first message containing want, -1 if none.
func (h *harness) index(want string) int {
	return slices.IndexFunc(h.plat.Messages(conv), func(m platformtest.Message) bool { return strings.Contains(m.Post.Text, want) })
}

// queuedInFlight sends a message that hangs and two more queued behind it
// and returns the journal once a crash would find the first running (its
// agent recorded) and the others queued with their notices.
func queuedInFlight(h *harness, first, second, third string) (ids [3]string, entries []core.JournalEntry) {
	ids[0] = h.send(alice, first)
	h.waitText("working")
	ids[1] = h.send(alice, second)
	ids[2] = h.send(bob, third)
	h.waitText("Queued — position 2")
	entries = h.waitJournalAll(func(es []core.JournalEntry) bool {
		return len(es) == 3 && es[0].Running && es[0].Agent.PID != 0 &&
			es[1].Notice.ID != "" && es[2].Notice.ID != "" && es[1].Message.ID == ids[1] && es[2].Message.ID == ids[2]
	})
	return ids, entries
}

// TestQueuedMessagesRunOnceAfterACrash: messages accepted and queued
// behind a running turn survive a crash: after the restart they run in
// their order, once each, their queued notices (edited in place) say they
// are still queued; the running turn is not run again, its notice offers
// ↻ Retry; a redelivery of a queued message runs nothing more.
func TestQueuedMessagesRunOnceAfterACrash(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "bridge.db")
	h := newHarness(t, dbPath, nil)
	ids, entries := queuedInFlight(h, "hang", "first queued", "second queued")
	if m := entries[2].Message; m.Text != "second queued" || m.From != bob || entries[2].Key != conv {
		t.Errorf("journaled message = %+v under key %v; want bob's text under %v", m, entries[2].Key, conv)
	}
	// The new platform holds the two queued notices (refs "1" and "2"),
	// as the chat still shows them after the crash.
	entries[1].Notice = core.MessageRef{Conv: conv, ID: "1"}
	entries[2].Notice = core.MessageRef{Conv: conv, ID: "2"}
	entries[0].Reply.Ref.ID = "gone" // a Telegram draft, say
	h.crash(entries)
	h2 := newSeededHarness(t, dbPath, nil, func(p *platformtest.Platform) {
		for _, text := range []string{"⏳ Queued — position 1.", "⏳ Queued — position 2."} {
			if _, err := p.Send(t.Context(), conv, core.Post{Text: text, Plain: true}); err != nil {
				t.Fatal(err)
			}
		}
	})
	h2.waitText("(resumed sess-")
	h2.waitTextN("tokens", 2)
	h2.idle()
	msgs := h2.plat.Messages(conv)
	if got, want := msgs[0].Post.Text, "⏳ Still queued after a restart — answering it now."; got != want {
		t.Errorf("first queued notice = %q, want %q", got, want)
	}
	if got, want := msgs[1].Post.Text, "⏳ Still queued after a restart — position 1. I'll answer when the turns before it are done."; got != want {
		t.Errorf("second queued notice = %q, want %q", got, want)
	}
	notice := h2.waitText("The bridge restarted")
	const want = "working\n\n⚠️ The bridge restarted, so this answer was interrupted. Press ↻ Retry to run your message again."
	if notice.Post.Text != want || notice.Post.ReplyTo != ids[0] || len(notice.Post.Buttons) != 1 || notice.Post.Buttons[0].Label != "↻ Retry" {
		t.Errorf("interrupted notice = %+v, want %q answering %q with a ↻ Retry button", notice.Post, want, ids[0])
	}
	one, two := h2.replies(ids[1]), h2.replies(ids[2])
	if len(one) != 1 || !strings.Contains(one[0], "first queued") || len(two) != 1 || !strings.Contains(two[0], "second queued") {
		t.Errorf("answers = %q and %q; want one each", one, two)
	}
	if i, j := h2.index("first queued"), h2.index("second queued"); i < 0 || j < i {
		t.Errorf("answers out of order: %q", h2.plat.Texts(conv))
	}
	if n := h2.count("working"); n != 1 {
		t.Errorf("the running turn was run again: %q", h2.plat.Texts(conv))
	}
	if h2.count("send it again")+h2.count("send your message again") != 0 {
		t.Errorf("a queued message was also told to send it again: %q", h2.plat.Texts(conv))
	}
	if left, _ := h2.st.Journal(t.Context()); len(left) != 0 {
		t.Errorf("journal after the requeued turns ran = %+v, want empty", left)
	}
	// The platform redelivers a queued message: it ran already.
	n := len(h2.plat.Messages(conv))
	h2.plat.Deliver(t.Context(), core.Message{Conv: conv, ID: ids[1], From: alice, Text: "first queued"})
	h2.send(alice, "/status")
	h2.waitText("Session ")
	if got := len(h2.plat.Messages(conv)); got != n+1 {
		t.Errorf("after a redelivery: %q; want only the status added", h2.plat.Texts(conv)[n:])
	}
}

// TestRequeuedMessageSurvivesASecondRestart: a message requeued by one
// restart and still waiting at the next is requeued again, and runs once.
func TestRequeuedMessageSurvivesASecondRestart(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "bridge.db")
	h := newHarness(t, dbPath, nil)
	ids, entries := queuedInFlight(h, "hang", "hang", "after two restarts")
	h.crash(entries)

	// The first restart: the second "hang" runs (and hangs), the last
	// message waits behind it with a new notice.
	h2 := newHarness(t, dbPath, nil)
	h2.waitText("⏳ Still queued after a restart — position 1.")
	entries = h2.waitJournalAll(func(es []core.JournalEntry) bool {
		return len(es) == 2 && es[0].Running && es[0].Agent.PID != 0 && es[1].Notice.ID != ""
	})
	if h2.count("after two restarts") != 0 {
		t.Fatalf("the last message ran behind a hanging turn: %q", h2.plat.Texts(conv))
	}
	h2.crash(entries)

	h3 := newHarness(t, dbPath, nil)
	h3.waitText("(resumed sess-")
	h3.idle()
	if got := h3.replies(ids[2]); len(got) != 2 || got[0] != "⏳ Still queued after a restart — answering it now." || !strings.Contains(got[1], "after two restarts") {
		t.Errorf("answers to the last message after the second restart = %q; want the notice and one answer; messages %q", got, h3.plat.Texts(conv))
	}
	if got := h3.replies(ids[1]); len(got) != 1 || !strings.Contains(got[0], "Press ↻ Retry") {
		t.Errorf("answers to the message that had started = %q; want the interrupted notice only", got)
	}
	if left, _ := h3.st.Journal(t.Context()); len(left) != 0 {
		t.Errorf("journal = %+v, want empty", left)
	}
}

// interrupted seeds dbPath with turns a crash interrupted after their
// agent started, one per text, and a session for them to resume.
func interrupted(t *testing.T, dbPath string, texts ...string) {
	st, err := store.Open(dbPath, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.PutSession(t.Context(), conv, core.Session{Name: "default", Agents: map[string]string{"test": "sess-before"}}); err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	for i, text := range texts {
		id := "u-" + text
		m := core.Message{Conv: conv, ID: id, From: alice, Text: text}
		e := core.JournalEntry{TurnID: "t-" + text, Conv: conv, MessageID: id, StartedAt: at.Add(time.Duration(i)), Message: &m, Key: conv, Running: true}
		if err := st.JournalPut(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
}

// press presses the only button of the message answering id, as from,
// and returns what from was told privately, if anything.
func (h *harness) press(id string, button core.Button, ref core.MessageRef, from core.User) string {
	h.t.Helper()
	before := len(h.plat.CallsOf(platformtest.OpNotify))
	h.plat.Press(h.t.Context(), core.Action{Conv: conv, From: from, Value: button.Value, Ref: ref, Reply: h.plat.PrivateReply(conv, from)})
	h.idle()
	calls := h.plat.CallsOf(platformtest.OpNotify)
	for _, c := range calls[before:] {
		if c.User == from {
			return c.Post.Text
		}
	}
	return ""
}

// TestRetryAfterACrash: an interrupted turn's ↻ Retry runs its message
// again in its session, for the requester or an approver, once; others
// are told privately; the button goes once pressed; it still works after
// another restart.
func TestRetryAfterACrash(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "bridge.db")
	interrupted(t, dbPath, "one more time", "and again")
	h := newHarness(t, dbPath, nil)
	first := h.waitText("Press ↻ Retry")
	var second platformtest.Message
	for _, m := range h.plat.Messages(conv) {
		if m.Post.ReplyTo == "u-and again" {
			second = m
		}
	}
	const want = "⚠️ The bridge restarted before answering your message. Press ↻ Retry to run it again."
	if first.Post.Text != want || first.Post.ReplyTo != "u-one more time" || len(first.Post.Buttons) != 1 || second.Post.Text != want || len(second.Post.Buttons) != 1 {
		t.Fatalf("notices = %+v and %+v; want %q with a button answering each message", first.Post, second.Post, want)
	}
	button := first.Post.Buttons[0]
	mallory := core.User{ID: "mallory"}

	if got := h.press("u-one more time", button, first.Ref, bob); got != "Only the person who sent the message, or an approver, can retry it." {
		t.Errorf("bob's press told him %q", got)
	}
	if got := h.press("u-one more time", button, first.Ref, mallory); got == "" || h.count("one more time") != 0 {
		t.Errorf("a stranger's press told them %q; messages %q", got, h.plat.Texts(conv))
	}
	if h.count("(resumed") != 0 {
		t.Fatalf("a refused press ran the turn: %q", h.plat.Texts(conv))
	}
	if got := h.press("u-one more time", button, first.Ref, alice); got != "" {
		t.Errorf("alice's press told her %q", got)
	}
	h.waitText("(resumed sess-before) one more time")
	edited := h.plat.Messages(conv)[0]
	if edited.Post.Text != want+"\n\n↻ Retried by Alice." || len(edited.Post.Buttons) != 0 {
		t.Errorf("the pressed notice = %+v; want it to say who retried, without its button", edited.Post)
	}
	if got := h.press("u-one more time", button, first.Ref, alice); got != "↻ Already retried." {
		t.Errorf("a second press told %q", got)
	}
	if got := h.press("u-one more time", button, first.Ref, boss); got != "↻ Already retried." {
		t.Errorf("an approver's press after the retry told %q", got)
	}
	if n := h.count("one more time"); n != 1 {
		t.Errorf("the retried message ran %d times: %q", n, h.plat.Texts(conv))
	}

	// A restart between the notice and the press: the approver retries
	// the other message.
	h.close()
	h2 := newHarness(t, dbPath, nil)
	if got := h2.press("u-and again", second.Post.Buttons[0], second.Ref, boss); got != "" {
		t.Errorf("the approver's press after a restart told %q", got)
	}
	h2.waitText("and again")
	if got := h2.press("u-and again", second.Post.Buttons[0], second.Ref, alice); got != "↻ Already retried." {
		t.Errorf("a press after the approver's told %q", got)
	}
	if n := h2.count("and again"); n != 1 {
		t.Errorf("the retried message ran %d times: %q", n, h2.plat.Texts(conv))
	}
}

// TestQueuedMessageEditedOrDeleted: a queued message edited before its
// turn starts runs as edited (the journal keeps the edit); one deleted
// does not run and its notice says so; an edit of the running message
// changes nothing.
func TestQueuedMessageEditedOrDeleted(t *testing.T) {
	h := newHarness(t, "", nil)
	gate := filepath.Join(t.TempDir(), "gate")
	running := h.send(alice, "gate:"+gate)
	h.waitText("gated")
	edited := h.send(alice, "original words")
	deleted := h.send(bob, "words to delete")
	h.waitText("Queued — position 2")
	h.plat.Deliver(t.Context(), core.Message{Conv: conv, ID: "e1", Edits: edited, From: alice, Text: "edited words"})
	h.plat.Deliver(t.Context(), core.Message{Conv: conv, ID: "e2", Edits: edited, From: bob, Text: "not bob's to edit"})
	h.plat.Deliver(t.Context(), core.Message{Conv: conv, ID: "e3", Edits: deleted, Deleted: true})
	h.plat.Deliver(t.Context(), core.Message{Conv: conv, ID: "e4", Edits: running, From: alice, Text: "too late"})
	h.waitText("🗑 Removed from the queue: the message was deleted.")
	h.waitJournalAll(func(es []core.JournalEntry) bool {
		return len(es) == 2 && es[1].Message.Text == "edited words"
	})
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	h.waitText("edited words")
	h.idle()
	for _, gone := range []string{"original words", "words to delete", "not bob's", "too late"} {
		if h.count(gone) != 0 {
			t.Errorf("%q was answered: %q", gone, h.plat.Texts(conv))
		}
	}
	if got := h.replies(deleted); len(got) != 1 || got[0] != "🗑 Removed from the queue: the message was deleted." {
		t.Errorf("answers to the deleted message = %q; messages %q; want only its notice, edited", got, h.plat.Texts(conv))
	}
}

// TestRetryAfterAShutdown: a turn a shutdown stopped after its agent
// started gets ↻ Retry under its reply, which works after the restart.
func TestRetryAfterAShutdown(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "bridge.db")
	h := newHarness(t, dbPath, nil)
	gate := filepath.Join(t.TempDir(), "gate")
	hung := h.send(alice, "gate:"+gate)
	h.waitText("gated")
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // no drain: the running turn is stopped at once
	h.eng.Shutdown(ctx, 5*time.Second)
	stopped := h.waitText("⏹ Stopped: the bridge is shutting down.")
	if len(stopped.Post.Buttons) != 1 || stopped.Post.Buttons[0].Label != "↻ Retry" {
		t.Fatalf("the stopped reply = %+v, want a ↻ Retry button", stopped.Post)
	}
	h.close()
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	h2 := newHarness(t, dbPath, nil)
	if got := h2.press(hung, stopped.Post.Buttons[0], stopped.Ref, alice); got != "" {
		t.Errorf("the press told %q", got)
	}
	h2.waitText("released")
}
