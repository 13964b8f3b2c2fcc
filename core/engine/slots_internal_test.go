package engine

import (
	"context"
	"errors"
	"testing"
)

// TestSlotsOrderAndShare: free slots go to waiting turns in arrival order,
// skipping a user at their share; a cancelled wait leaves the queue.
func TestSlotsOrderAndShare(t *testing.T) {
	s := newSlots(func() (int, int) { return 2, 1 })
	ctx := context.Background()
	take := func(user string) (func(), slotFull, bool) {
		var full slotFull
		waited := false
		rel, err := s.acquire(ctx, user, func(_ *slotWait, f slotFull) { full, waited = f, true })
		if err != nil {
			t.Fatal(err)
		}
		return rel, full, waited
	}
	relA, _, waited := take("a")
	if waited {
		t.Fatal("the first turn waited")
	}
	// A second turn of a waits for a's share; c's ctx is cancelled while it waits.
	gotA2 := make(chan func())
	waits := make(chan slotFull, 2)
	go func() {
		rel, _ := s.acquire(ctx, "a", func(_ *slotWait, f slotFull) { waits <- f })
		gotA2 <- rel
	}()
	if f := <-waits; !f.perUser || f.mine != 1 {
		t.Errorf("a's second turn waits for %+v, want its share", f)
	}
	relB, _, waited := take("b")
	if waited {
		t.Fatal("b waited although a slot was free")
	}
	cctx, cancel := context.WithCancelCause(ctx)
	cErr := make(chan error)
	go func() {
		_, err := s.acquire(cctx, "c", func(_ *slotWait, f slotFull) { waits <- f })
		cErr <- err
	}()
	if f := <-waits; f.perUser || f.ahead != 1 || f.total != 2 {
		t.Errorf("c waits for %+v, want the cap with a's turn ahead", f)
	}
	stop := errors.New("stop")
	cancel(stop)
	if err := <-cErr; !errors.Is(err, stop) {
		t.Errorf("cancelled wait returned %v", err)
	}
	relA()
	relA2 := <-gotA2 // a's turn came first and a is under its share again
	relA2()
	relB()
	if s.running != 0 || len(s.byUser) != 0 || len(s.waiting) != 0 {
		t.Errorf("slots left: %d running, %v, %d waiting", s.running, s.byUser, len(s.waiting))
	}
}
