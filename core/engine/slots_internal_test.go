package engine

import (
	"context"
	"errors"
	"runtime"
	"testing"
)

// TestSlotsOrderAndShare: free slots go to waiting turns in arrival order,
// skipping a user at their share; a cancelled wait leaves the queue.
func TestSlotsOrderAndShare(t *testing.T) {
	s := newSlots(func() (int, int) { return 2, 1 })
	ctx := context.Background()
	var n uint64
	seq := func() uint64 { n++; return n }
	take := func(user string) (func(), slotFull, bool) {
		var full slotFull
		waited := false
		rel, _, err := s.acquire(ctx, slotAsk{user: user, seq: seq()}, func(_ *slotWait, f slotFull) { full, waited = f, true })
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
	// Each wait's notices: the first, then one per change of why it waits.
	waitsA, waitsC := make(chan slotFull, 10), make(chan slotFull, 10)
	go func() {
		rel, _, _ := s.acquire(ctx, slotAsk{user: "a", seq: seq()}, func(_ *slotWait, f slotFull) { waitsA <- f })
		gotA2 <- rel
	}()
	if f := <-waitsA; !f.perUser || f.mine != 1 {
		t.Errorf("a's second turn waits for %+v, want its share", f)
	}
	relB, _, waited := take("b")
	if waited {
		t.Fatal("b waited although a slot was free")
	}
	cctx, cancel := context.WithCancelCause(ctx)
	cErr := make(chan error)
	go func() {
		_, _, err := s.acquire(cctx, slotAsk{user: "c", seq: seq()}, func(_ *slotWait, f slotFull) { waitsC <- f })
		cErr <- err
	}()
	if f := <-waitsC; f.perUser || f.ahead != 1 || f.total != 2 {
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

// TestSlotsWaitForEarlierArrivals: a turn does not take a free slot while a
// message handed over before it may still become a turn (arrival order
// over conversations whose intakes run side by side); a message settled as
// no turn, or whose turn asks, lets it go on.
func TestSlotsWaitForEarlierArrivals(t *testing.T) {
	s := newSlots(func() (int, int) { return 5, 5 })
	ctx := context.Background()
	// later asks for a slot as turn seq, which is not told it waits: no
	// cap is reached, it only lets an earlier arrival go first.
	later := func(seq uint64) <-chan func() {
		got := make(chan func(), 1)
		go func() {
			rel, _, _ := s.acquire(ctx, slotAsk{user: "b", seq: seq}, func(_ *slotWait, f slotFull) { t.Errorf("turn %d told it waits: %+v", seq, f) })
			got <- rel
		}()
		for {
			s.mu.Lock()
			n := len(s.waiting)
			s.mu.Unlock()
			if n == 1 {
				return got
			}
			runtime.Gosched()
		}
	}
	s.arrive(1)
	s.handoff(1)
	got := later(2)
	s.settle(1) // handed off: its turn is on its way, settle leaves it
	select {
	case <-got:
		t.Fatal("a later turn took a slot before an earlier one asked")
	default:
	}
	rel1, _, err := s.acquire(ctx, slotAsk{user: "a", seq: 1}, func(*slotWait, slotFull) { t.Error("the earlier turn waited") })
	if err != nil {
		t.Fatal(err)
	}
	rel2 := <-got

	s.arrive(3)
	got = later(4)
	s.settle(3) // a command, say: no turn comes of it
	rel4 := <-got
	rel1()
	rel2()
	rel4()
	if s.running != 0 || len(s.pending) != 0 || len(s.waiting) != 0 {
		t.Errorf("slots left: %d running, %d pending, %d waiting", s.running, len(s.pending), len(s.waiting))
	}
}
