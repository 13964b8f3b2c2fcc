package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/engine"
	"github.com/agentbridge/agentbridge/core/platformtest"
)

// pending returns the message in conv that still has buttons.
func (h *harness) pending() platformtest.Message {
	h.t.Helper()
	for _, m := range h.plat.Messages(conv) {
		if len(m.Post.Buttons) > 0 {
			return m
		}
	}
	h.t.Fatalf("no prompt waits; messages: %q", h.plat.Texts(conv))
	return platformtest.Message{}
}

// waitEither waits until some message contains a or b n times in all, and
// reports whether a did.
func (h *harness) waitEither(a, b string, n int) bool {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.t.Context(), 60*time.Second)
	defer cancel()
	if !h.plat.Wait(ctx, func() bool { return h.count(a) >= n || h.count(b) >= n }) {
		h.t.Fatalf("want %d messages containing %q or %q; messages: %q", n, a, b, h.plat.Texts(conv))
	}
	return h.count(a) >= n
}

// press hands a to plat and returns the private answer it got: every press
// gets exactly one, "" when there is nothing to say.
func press(t *testing.T, plat *platformtest.Platform, a core.Action) string {
	t.Helper()
	got := make(chan string, 1)
	a.Reply = func(s string) { got <- s }
	plat.Press(t.Context(), a)
	select {
	case r := <-got:
		return r
	case <-time.After(60 * time.Second):
		t.Fatal("no reply to the press")
		return ""
	}
}

// Issue 27, item 5: in a group conversation (one session shared by all its
// members), Alice's "Allow for this session" covers Alice's later requests
// and nobody else's: Bob's request for the same tool is asked about, and
// the request her grant allows is shown in the reply (D-PERM-3).
func TestSessionGrantCoversOnlyItsGranter(t *testing.T) {
	h := newHarness(t, "", nil)
	h.send(alice, "perm")
	h.waitText("Permission needed")
	p := h.pending()
	h.plat.Press(t.Context(), core.Action{Conv: conv, From: alice, Value: p.Post.Buttons[2].Value, Ref: p.Ref})
	h.waitText("✅ Allowed for this session by Alice.")
	h.waitTextN("answer=allow:", 1)
	h.idle()

	// Bob, in the same conversation and session, asks for the same tool.
	h.send(bob, "perm")
	if !h.waitEither("Permission needed", "answer=allow:", 2) {
		t.Fatalf("Bob's request ran on Alice's grant without asking; messages: %q", h.plat.Texts(conv))
	}
	p = h.pending()
	if !strings.Contains(p.Post.Text, "Requested for Bob's message.") {
		t.Errorf("second prompt = %q; want Bob's", p.Post.Text)
	}
	h.plat.Press(t.Context(), core.Action{Conv: conv, From: bob, Value: p.Post.Buttons[1].Value, Ref: p.Ref})
	h.waitText("answer=deny:denied by Bob")
	h.idle()

	// Alice's own next request runs on her grant, and the reply says so.
	h.send(alice, "perm")
	h.waitText("✅ Bash — allowed for this session by Alice")
	h.waitTextN("answer=allow:", 2)
	if n := h.count("Permission needed"); n != 2 {
		t.Errorf("%d prompts; Alice's second request should have run on her grant", n)
	}
	// The line comes before what the agent said after the answer.
	h.idle()
	reply := h.waitText("✅ Bash — allowed for this session by Alice")
	if i, j := strings.Index(reply.Post.Text, "✅ Bash"), strings.Index(reply.Post.Text, "answer=allow:"); j >= 0 && j < i {
		t.Errorf("reply = %q; the auto-allowed line should come before the agent's answer", reply.Post.Text)
	}
}

// Issue 27, item 7: a press is an answer only on the prompt itself. The
// same token pressed in another conversation, or through another platform
// account served by the same engine, changes nothing; the presser is told
// no more than for an unknown token, and once per quiet period.
func TestPermissionPressFromElsewhereIsRefused(t *testing.T) {
	h := newHarness(t, "", func(s *engine.Settings) {
		s.Platforms["other"] = engine.PlatformSettings{AllowUsers: []string{"alice"}}
	})
	other := platformtest.New("other", platformtest.DefaultLimits)
	oh := h.eng.Handler(other)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		other.Run(ctx, oh)
	}()
	t.Cleanup(func() { cancel(); <-done })
	<-other.Running()

	h.send(alice, "perm")
	h.waitText("Permission needed")
	p := h.pending()
	allow := p.Post.Buttons[0].Value

	// Alice's own DM with the bot: another conversation of the platform.
	dm := core.ConversationKey{Platform: "fake", Workspace: "w", Channel: "dm-alice"}
	if r := press(t, h.plat, core.Action{Conv: dm, From: alice, Value: allow, Ref: core.MessageRef{Conv: dm, ID: p.Ref.ID}}); !strings.Contains(r, "no longer waiting") {
		t.Errorf("press from another conversation got %q", r)
	}
	// The same conversation's channel, but not the prompt's message.
	if r := press(t, h.plat, core.Action{Conv: conv, From: alice, Value: allow, Ref: core.MessageRef{Conv: conv, ID: "forged"}}); r != "" {
		t.Errorf("second refused press got %q; want it quiet (told a moment ago)", r)
	}
	// Another platform account, with the very conversation key (its users
	// are other people: its first refusal is said).
	if r := press(t, other, core.Action{Conv: conv, From: alice, Value: allow, Ref: p.Ref}); !strings.Contains(r, "no longer waiting") {
		t.Errorf("press through another platform account got %q", r)
	}
	if got := h.pending(); got.Ref != p.Ref || h.count("answer=") != 0 {
		t.Fatalf("a press from elsewhere answered the prompt; messages: %q", h.plat.Texts(conv))
	}
	// The prompt still takes its own press.
	if r := press(t, h.plat, core.Action{Conv: conv, From: alice, Value: allow, Ref: p.Ref}); r != "" {
		t.Errorf("the requester's press got %q", r)
	}
	h.waitText("answer=allow:")
}

// Issue 27, item 7: a stranger pressing buttons hears why once per quiet
// period, like a stranger sending messages (one rule for both): a flood of
// presses cannot spend the chat's budget on refusals.
func TestStrangerPressesAreRefusedOnce(t *testing.T) {
	h := newHarness(t, "", nil)
	carol := core.User{ID: "carol", Name: "Carol"}
	h.send(alice, "perm")
	h.waitText("Permission needed")
	p := h.pending()
	byCarol := func(value string) core.Action {
		return core.Action{Conv: conv, From: carol, Value: value, Ref: p.Ref}
	}
	if r := press(t, h.plat, byCarol(p.Post.Buttons[0].Value)); !strings.Contains(r, "Only the person who asked") {
		t.Fatalf("stranger's first press got %q", r)
	}
	for i, v := range []string{p.Post.Buttons[0].Value, p.Post.Buttons[2].Value, "no-such-token:a", "agent:test"} {
		if r := press(t, h.plat, byCarol(v)); r != "" {
			t.Errorf("stranger's press %d (%s) got %q; want no answer this quiet period", i+2, v, r)
		}
	}
	// Their message is refused under the same rule: they were told.
	refusals := make(chan string, 1)
	h.plat.Deliver(t.Context(), core.Message{Conv: conv, ID: "carol-1", From: carol, Text: "hello", Reply: func(s string) { refusals <- s }})
	h.plat.Press(t.Context(), core.Action{Conv: conv, From: alice, Value: p.Post.Buttons[1].Value, Ref: p.Ref})
	h.waitText("answer=deny:")
	h.idle()
	select {
	case r := <-refusals:
		t.Errorf("stranger's message got %q after their press was refused", r)
	default:
	}
	if n := h.count("not allowed"); n != 0 {
		t.Errorf("%d public refusals", n)
	}
}
