package engine_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/engine"
	"github.com/agentbridge/agentbridge/core/platformtest"
	"github.com/agentbridge/agentbridge/store"
)

// counts is an engine.Observer counting message results.
type counts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counts) Message(_, result string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[result]++
}
func (c *counts) get(result string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[result]
}
func (*counts) TurnStarted(string, string)                         {}
func (*counts) TurnFinished(string, string, string, time.Duration) {}
func (*counts) Permission(string, string)                          {}
func (*counts) Submitted(string, string, string)                   {}
func (*counts) ReplyLost(string)                                   {}
func (*counts) TurnWaiting(string, int)                            {}
func (*counts) Transcribed(string, string, time.Duration)          {}

// File counts a file result as the message result "file:"+result.
func (c *counts) File(_, result string) { c.Message("", "file:"+result) }

// A flood into a busy conversation gets its queue, then one busy notice per
// burst; a new burst (after the queue took a message again) gets another.
func TestBusyNoticeOncePerBurst(t *testing.T) {
	h := newHarness(t, "", nil) // queue_depth 2
	h.send(alice, "hang")
	h.waitText("working")
	for i := range 20 {
		h.send(alice, fmt.Sprintf("flood %d", i))
	}
	// /status is handled after the flood: the intake keeps delivery order.
	h.send(alice, "/status")
	h.waitText("Running for")
	if n := h.count("🚦 Busy"); n != 1 {
		t.Errorf("%d busy notices for one burst, want 1; messages: %q", n, h.plat.Texts(conv))
	}
	if n := h.count("Queued — position"); n != 2 {
		t.Errorf("%d queued notices, want 2 (queue_depth)", n)
	}
	if !strings.Contains(h.waitText("🚦 Busy").Post.Text, "2 messages are already waiting") {
		t.Errorf("busy notice does not say how many wait: %q", h.waitText("🚦 Busy").Post.Text)
	}

	// /stop empties the queue; the next flood is a new burst.
	h.send(alice, "/stop")
	h.waitText("⏹ Stopped.")
	h.idle()
	h.send(alice, "hang")
	h.waitTextN("working", 2)
	for i := range 5 {
		h.send(alice, fmt.Sprintf("second flood %d", i))
	}
	h.send(alice, "/status")
	h.waitTextN("Running for", 2)
	if n := h.count("🚦 Busy"); n != 2 {
		t.Errorf("%d busy notices after two bursts, want 2; messages: %q", n, h.plat.Texts(conv))
	}
}

// A user who is not allowed is refused once, privately through the
// message's Reply, however many messages they send; an allowed user in the
// same conversation is answered after them.
func TestRefusalIsPrivateAndRateLimited(t *testing.T) {
	h := newHarness(t, "", nil)
	mallory := core.User{ID: "mallory"}
	for i := range 100 {
		h.plat.Deliver(t.Context(), core.Message{Conv: conv, ID: fmt.Sprintf("mal-%d", i), From: mallory,
			Text: "let me in", Reply: h.plat.PrivateReply(conv, mallory)})
	}
	h.send(alice, "hello after the stranger")
	h.waitText("hello after the stranger")
	refusals := 0
	for _, c := range h.plat.CallsOf(platformtest.OpNotify) {
		if strings.Contains(c.Post.Text, "not allowed") && c.User == mallory {
			refusals++
		}
	}
	if refusals != 1 {
		t.Errorf("%d private refusals to 100 messages, want 1", refusals)
	}
	if n := h.count("not allowed"); n != 0 {
		t.Errorf("%d refusals posted in the conversation, want 0 (the platform answers privately)", n)
	}
}

// The refusal is repeated after refusalEvery (5 minutes), not before.
func TestRefusalRepeatsAfterFiveMinutes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, p, stop := bareEngine(t, nil)
		defer stop()
		mallory := core.User{ID: "mallory"}
		deliver := func(id string) {
			p.Deliver(t.Context(), core.Message{Conv: conv, ID: id, From: mallory, Text: "hi"})
			if err := e.Idle(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		deliver("a")
		deliver("b")
		time.Sleep(4 * time.Minute)
		deliver("c")
		if n := len(p.CallsOf(platformtest.OpSend)); n != 1 {
			t.Fatalf("%d refusals within 4 minutes, want 1", n)
		}
		time.Sleep(time.Minute)
		deliver("d")
		if n := len(p.CallsOf(platformtest.OpSend)); n != 2 {
			t.Fatalf("%d refusals after 5 minutes, want 2", n)
		}
	})
}

// bareEngine is an engine on a real store and a platformtest platform,
// with no agent: for tests of intake that run no turn (and so may run in a
// synctest bubble).
func bareEngine(t *testing.T, obs engine.Observer) (*engine.Engine, *platformtest.Platform, func()) {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "bridge.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := platformtest.New("fake", platformtest.DefaultLimits)
	e := engine.New(st, settings(testProfile()), engine.Options{TempDir: t.TempDir(), Observer: obs})
	h := e.Handler(p)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(ctx, h)
	}()
	<-p.Running()
	return e, p, func() {
		sctx, scancel := context.WithTimeout(context.Background(), time.Minute)
		defer scancel()
		e.Shutdown(sctx, time.Second)
		cancel()
		<-done
		st.Close()
	}
}

// Shutdown ends at its drain deadline under any load: a flood whose
// notices wait out long rate limits (4 tries of 30 s each) does not hold
// it, and the flood beyond the intake's bound is dropped and counted.
func TestShutdownUnderFloodEndsAtTheGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := &counts{}
		e, p, stop := bareEngine(t, obs)
		defer stop()
		p.RateLimit(platformtest.OpSend, 30*time.Second, 10_000)
		for i := range 1200 {
			user := core.User{ID: fmt.Sprintf("stranger-%d", i%3)}
			p.Deliver(t.Context(), core.Message{Conv: conv, ID: fmt.Sprintf("f-%d", i), From: user, Text: "flood"})
		}
		// Another conversation is handled meanwhile: its refusal is being
		// retried as well, on its own intake.
		other := core.ConversationKey{Platform: "fake", Channel: "other"}
		p.Deliver(t.Context(), core.Message{Conv: other, ID: "o-1", From: core.User{ID: "x"}, Text: "hi"})
		synctest.Wait()
		if n := len(p.CallsOf(platformtest.OpSend)); n != 2 {
			t.Errorf("%d sends before any rate limit passed, want 2 (one refusal per conversation)", n)
		}
		if n := obs.get("overflow"); n == 0 {
			t.Error("a flood of 1200 into one conversation overflowed nothing")
		}

		const grace = 10 * time.Second
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		start := time.Now()
		e.Shutdown(ctx, 5*time.Second)
		if d := time.Since(start); d > grace {
			t.Errorf("Shutdown took %v under a flood, want at most the %v grace", d, grace)
		}
	})
}
