package platformtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/core"
)

// Hooks let TestPlatform look into a platform's fake and make it
// misbehave. Conv and Shown are required; a nil hook skips the checks that
// need it.
type Hooks struct {
	// Conv is a conversation the fake serves, where Send posts a real
	// message (not a preview such as a Telegram draft).
	Conv core.ConversationKey
	// Shown returns the text the fake holds for ref, and whether it has
	// that message at all.
	Shown func(ref core.MessageRef) (string, bool)
	// Requests returns how many requests the fake has received.
	Requests func() int
	// Missing is a message of Conv the fake does not have (deleted, or
	// never sent); the zero ref skips the not-found check.
	Missing core.MessageRef
	// RateLimitSend makes the fake answer the next send to Conv with a
	// 429 asking to wait retryAfter (whole seconds).
	RateLimitSend func(retryAfter time.Duration)
	// Unbudgeted says the platform has no rate budget of its own (a
	// terminal), so interim frames are never given a later turn.
	Unbudgeted bool
}

// maxFrames bounds how many interim edits TestPlatform makes looking for
// the budget's refusal.
const maxFrames = 200

// TestPlatform checks that p, constructed against its fake but not
// running, keeps the contract core relies on (in the spirit of
// testing/fstest.TestFS): Limits does no I/O, a sent message can be
// edited, an identical edit is no error, a missing message is
// core.ErrNotFound, a final-priority write is not held behind queued
// interim frames, and the platform's 429 is a *core.RateLimitError with
// its Retry-After. Run it from the adapter's own tests.
func TestPlatform(t *testing.T, p core.Platform, h Hooks) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	// A write the adapter's own budget refuses (Turn) is made again when
	// its turn comes, as the presenter and the engine do.
	inTurn := func(write func() error) error {
		for {
			err := write()
			var rl *core.RateLimitError
			if !errors.As(err, &rl) || !rl.Turn {
				return err
			}
			select {
			case <-time.After(rl.RetryAfter):
			case <-ctx.Done():
				return err
			}
		}
	}
	edit := func(ref core.MessageRef, text string) error {
		return inTurn(func() error { return p.Edit(ctx, ref, core.Post{Text: text, Plain: true}) })
	}
	send := func(t *testing.T, text string) core.MessageRef {
		t.Helper()
		var ref core.MessageRef
		err := inTurn(func() (err error) {
			ref, err = p.Send(ctx, h.Conv, core.Post{Text: text, Plain: true})
			return err
		})
		if err != nil {
			t.Fatalf("Send %q: %v", text, err)
		}
		if ref.Conv != h.Conv || ref.ID == "" {
			t.Fatalf("Send %q returned ref %+v, want an id in %v", text, ref, h.Conv)
		}
		return ref
	}
	shows := func(t *testing.T, ref core.MessageRef, want string) {
		t.Helper()
		got, ok := h.Shown(ref)
		if !ok || !strings.Contains(got, want) {
			t.Errorf("message %s shows %q (exists: %v), want %q", ref.ID, got, ok, want)
		}
	}

	t.Run("Limits does no I/O", func(t *testing.T) {
		if h.Requests == nil {
			t.Skip("no Requests hook")
		}
		before := h.Requests()
		lim := p.Limits()
		if n := h.Requests() - before; n != 0 {
			t.Errorf("Limits made %d requests", n)
		}
		if lim.MaxText <= 0 {
			t.Errorf("Limits().MaxText = %d, want the platform's limit", lim.MaxText)
		}
	})

	t.Run("send and edit round trip", func(t *testing.T) {
		ref := send(t, "contract: sent")
		shows(t, ref, "contract: sent")
		if err := edit(ref, "contract: edited"); err != nil {
			t.Fatalf("Edit: %v", err)
		}
		shows(t, ref, "contract: edited")
	})

	t.Run("an identical edit is not a failure", func(t *testing.T) {
		ref := send(t, "contract: same")
		err := edit(ref, "contract: same")
		if err != nil && !errors.Is(err, core.ErrNotModified) {
			t.Errorf("identical Edit = %v, want nil or core.ErrNotModified", err)
		}
		shows(t, ref, "contract: same")
	})

	t.Run("a missing message is not found", func(t *testing.T) {
		if h.Missing == (core.MessageRef{}) {
			t.Skip("no Missing message")
		}
		err := edit(h.Missing, "contract: nobody sees this")
		if !errors.Is(err, core.ErrNotFound) {
			t.Errorf("Edit of a missing message = %v, want core.ErrNotFound", err)
		}
	})

	t.Run("final text goes before interim frames", func(t *testing.T) {
		if h.Unbudgeted {
			t.Skip("no rate budget")
		}
		frames, final := send(t, "contract: frames"), send(t, "contract: final")
		// Interim frames until the budget gives one a later turn: that
		// frame now waits in its queue.
		var queued *core.RateLimitError
		for i := 0; queued == nil; i++ {
			if i == maxFrames {
				t.Fatalf("%d interim edits in a row all went at once: no rate budget paces them", maxFrames)
			}
			err := p.Edit(ctx, frames, core.Post{Text: fmt.Sprintf("contract: frame %d", i), Plain: true, Priority: core.PriorityInterim})
			switch {
			case errors.As(err, &queued) && !queued.Turn:
				t.Fatalf("interim edit %d: the platform refused it (%v): the budget let too many through", i, err)
			case err != nil && queued == nil:
				t.Fatalf("interim edit %d: %v", i, err)
			}
		}
		err := p.Edit(ctx, final, core.Post{Text: "contract: the end", Plain: true, Priority: core.PriorityFinal})
		var rl *core.RateLimitError
		switch {
		case err == nil:
			shows(t, final, "contract: the end")
		case errors.As(err, &rl) && rl.Turn && rl.RetryAfter < queued.RetryAfter:
			// Its own turn, sooner than the queued frame's.
		default:
			t.Errorf("final edit behind a queued interim frame (its turn in %v) = %v, want it at once", queued.RetryAfter, err)
		}
	})

	// Last: an adapter holds its budget for the Retry-After it was told.
	t.Run("a 429 is a rate limit with its Retry-After", func(t *testing.T) {
		if h.RateLimitSend == nil {
			t.Skip("no RateLimitSend hook")
		}
		const retryAfter = time.Second
		h.RateLimitSend(retryAfter)
		err := inTurn(func() error {
			_, err := p.Send(ctx, h.Conv, core.Post{Text: "contract: refused", Plain: true})
			return err
		})
		var rl *core.RateLimitError
		if !errors.As(err, &rl) {
			t.Fatalf("Send answered 429 = %v, want a *core.RateLimitError", err)
		}
		if rl.RetryAfter < retryAfter {
			t.Errorf("RetryAfter = %v, want the platform's %v", rl.RetryAfter, retryAfter)
		}
		if rl.Turn {
			t.Error("the platform's refusal is marked as the adapter's own budget's turn (Turn)")
		}
	})
}
