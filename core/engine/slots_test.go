package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/engine"
	"github.com/agentbridge/agentbridge/core/platformtest"
)

// TestAgentCapAndPerUserShare: issue 27's flood of agents — one allowed user
// starts 25 conversations at once. At most their share of agents runs, the
// rest wait with a notice (none dropped), another user still gets a slot,
// /status says why a turn waits, and every one of the 25 is answered. Each
// agent asks a permission and holds its slot until the prompt is answered,
// so the open prompts are the agents running.
func TestAgentCapAndPerUserShare(t *testing.T) {
	const n, share = 25, 2
	h := newHarness(t, "", func(s *engine.Settings) {
		s.MaxTurns, s.MaxTurnsPerUser = share+1, share
	})
	convs := make([]core.ConversationKey, n+1)
	for i := range convs {
		convs[i] = core.ConversationKey{Platform: "fake", Workspace: "w", Channel: fmt.Sprintf("cap-%02d", i)}
	}
	deliver := func(i int, from core.User, text string) {
		h.plat.Deliver(t.Context(), core.Message{Conv: convs[i], ID: fmt.Sprintf("cap-%d-%s-%d", i, text, time.Now().UnixNano()), From: from, Text: text})
	}
	has := func(i int, want string) (platformtest.Message, bool) {
		for _, m := range h.plat.Messages(convs[i]) {
			if strings.Contains(m.Post.Text, want) {
				return m, true
			}
		}
		return platformtest.Message{}, false
	}
	// open returns the conversations whose agent waits on a prompt.
	open := func() []int {
		var out []int
		for i := range convs {
			if m, ok := has(i, "Permission needed"); ok && len(m.Post.Buttons) > 0 {
				out = append(out, i)
			}
		}
		return out
	}
	wait := func(what string, cond func() bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		if !h.plat.Wait(ctx, cond) {
			t.Fatalf("waiting for %s; open prompts in %v", what, open())
		}
	}
	count := func(want string) int {
		k := 0
		for i := range convs {
			if _, ok := has(i, want); ok {
				k++
			}
		}
		return k
	}

	for i := range n {
		deliver(i, alice, "perm")
	}
	// Every turn past the share is told it waits: then the share runs.
	wait("the waiting notices", func() bool { return count("Waiting for a free agent") == n-share || len(open()) > share })
	if k := len(open()); k > share {
		t.Fatalf("%d of Alice's agents run at once, her share is %d", k, share)
	}
	wait("the share's prompts", func() bool { return len(open()) == share })
	waiting := -1
	for i := range n {
		if _, ok := has(i, "Waiting for a free agent"); ok {
			waiting = i
			break
		}
	}
	if m, _ := has(waiting, "Waiting for a free agent"); !strings.Contains(m.Post.Text, "you already have 2 agents running") {
		t.Errorf("waiting notice %q does not say why", m.Post.Text)
	}
	deliver(waiting, alice, "/status")
	wait("/status", func() bool { _, ok := has(waiting, "Waiting for a free agent slot"); return ok })

	// Bob is not held back by Alice's turns.
	deliver(n, bob, "perm")
	wait("Bob's prompt", func() bool { return len(open()) == share+1 })
	if _, ok := has(n, "Permission needed"); !ok {
		t.Fatalf("the third agent is not Bob's: open prompts in %v", open())
	}

	// Answer prompts as they open; never more than the share of Alice's run.
	answered := 0
	for answered < n+1 {
		wait("a prompt", func() bool { return len(open()) > 0 })
		alices := 0
		for _, i := range open() {
			if i < n {
				alices++
			}
		}
		if alices > share {
			t.Fatalf("%d of Alice's agents run at once, her share is %d", alices, share)
		}
		i := open()[0]
		m, _ := has(i, "Permission needed")
		from := alice
		if i == n {
			from = bob
		}
		h.plat.Press(t.Context(), core.Action{Conv: convs[i], From: from, Value: m.Post.Buttons[0].Value, Ref: m.Ref})
		// The prompt loses its buttons too: a press that comes before the
		// engine holds the prompt's ref is shown after the agent's answer.
		wait("the answer", func() bool {
			_, ok := has(i, "answer=allow")
			p, _ := has(i, "Permission needed")
			return ok && len(p.Post.Buttons) == 0
		})
		answered++
	}
	h.idle()
	if k := count("answer=allow"); k != n+1 {
		t.Errorf("%d conversations answered, want %d", k, n+1)
	}
}

// TestStopWhileWaitingForASlot: /stop ends a turn that waits for a slot
// before its agent starts, and says so; the slot's holder is untouched.
func TestStopWhileWaitingForASlot(t *testing.T) {
	h := newHarness(t, "", func(s *engine.Settings) { s.MaxTurns = 1 })
	other := core.ConversationKey{Platform: "fake", Workspace: "w", Channel: "c2"}
	h.send(alice, "hang")
	h.waitText("working")
	h.plat.Deliver(t.Context(), core.Message{Conv: other, ID: "stop-1", From: bob, Text: "hello"})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	seen := func(want string) bool {
		return h.plat.Wait(ctx, func() bool {
			for _, text := range h.plat.Texts(other) {
				if strings.Contains(text, want) {
					return true
				}
			}
			return false
		})
	}
	if !seen("⏳ Waiting for a free agent (0 ahead): all 1 of the bridge's agent slots are busy.") {
		t.Fatalf("no waiting notice: %q", h.plat.Texts(other))
	}
	h.plat.Deliver(t.Context(), core.Message{Conv: other, ID: "stop-2", From: bob, Text: "/stop"})
	if !seen("⏹ Stopped before its agent started.") {
		t.Fatalf("no stop notice: %q", h.plat.Texts(other))
	}
	h.send(alice, "/stop")
	h.waitText("working\n\n⏹ Stopped.")
	h.idle()
	for _, text := range h.plat.Texts(other) {
		if strings.Contains(text, "hello") && !strings.Contains(text, "⏳") {
			t.Errorf("the stopped turn ran: %q", text)
		}
	}
}
