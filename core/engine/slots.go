package engine

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// Defaults of the cap on agents running at once.
const (
	// DefaultMaxTurns bounds a burst (25 mentions in a second no longer
	// start 25 CLIs of a few hundred MB each) while its per-user half, 10,
	// still lets one person's ten conversations stream at once as they did
	// before the cap. A small host lowers it.
	DefaultMaxTurns = 20
)

// defaultPerUser is a user's share of max slots when none is set: half,
// rounded up, so one person can never hold every slot while anyone else
// waits, yet alone they still get most of the bridge.
func defaultPerUser(max int) int { return (max + 1) / 2 }

// slots bounds the agents running at once, over the bridge and per user.
// A turn takes a slot before its agent starts and gives it back when the
// agent is done; a turn that finds none free waits, on its conversation's
// lane, and the free slots go to the waiting turns in arrival order,
// skipping those whose user already runs their share.
type slots struct {
	limits func() (total, perUser int) // read at each grant: a reload applies at once

	mu      sync.Mutex
	running int
	byUser  map[string]int
	waiting []*slotWait // in arrival order
}

type slotWait struct {
	user  string
	ready chan struct{} // closed when granted
}

func newSlots(limits func() (int, int)) *slots {
	return &slots{limits: limits, byUser: map[string]int{}}
}

// slotFull says why a turn waits, for its sender and /status.
type slotFull struct {
	ahead   int  // turns that came before it and wait too
	mine    int  // agents its user runs
	perUser bool // it waits for its user's share, not for the bridge's cap
	total   int  // the cap (the share when perUser)
}

// acquire takes a slot for user, waiting until one is free or ctx ends
// (returning the context's cause). waiting is called once, before the
// wait, when there is none free at once, with the wait (for describe) and
// why. release gives the slot back.
func (s *slots) acquire(ctx context.Context, user string, waiting func(*slotWait, slotFull)) (release func(), err error) {
	w := &slotWait{user: user, ready: make(chan struct{})}
	s.mu.Lock()
	s.waiting = append(s.waiting, w)
	s.grant()
	full, granted := s.full(w)
	s.mu.Unlock()
	release = func() { s.release(user) }
	if granted {
		return release, nil
	}
	waiting(w, full)
	select {
	case <-w.ready:
		return release, nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	i := slices.Index(s.waiting, w)
	if i >= 0 {
		s.waiting = slices.Delete(s.waiting, i, i+1)
	}
	s.mu.Unlock()
	if i < 0 {
		s.release(user) // granted meanwhile: hand it on
	}
	return nil, context.Cause(ctx)
}

// full reports whether w was granted and, when not, why it waits. s.mu is held.
func (s *slots) full(w *slotWait) (slotFull, bool) {
	i := slices.Index(s.waiting, w)
	if i < 0 {
		return slotFull{}, true
	}
	total, perUser := s.limits()
	mine := s.byUser[w.user]
	if mine >= perUser && s.running < total {
		return slotFull{ahead: i, mine: mine, perUser: true, total: perUser}, false
	}
	return slotFull{ahead: i, mine: mine, total: total}, false
}

// describe reports why w waits, live; false once it no longer does.
func (s *slots) describe(w *slotWait) (slotFull, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, granted := s.full(w)
	return f, !granted
}

func (s *slots) release(user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running--
	if s.byUser[user]--; s.byUser[user] <= 0 {
		delete(s.byUser, user)
	}
	s.grant()
}

// grant hands free slots to the waiting turns in order, skipping those
// whose user runs their share. s.mu is held.
func (s *slots) grant() {
	total, perUser := s.limits()
	for i := 0; i < len(s.waiting) && s.running < total; {
		w := s.waiting[i]
		if s.byUser[w.user] >= perUser {
			i++
			continue
		}
		s.running++
		s.byUser[w.user]++
		close(w.ready)
		s.waiting = slices.Delete(s.waiting, i, i+1)
	}
}

// status is /status's line for a turn waiting for a slot.
func (f slotFull) status() string {
	if f.perUser {
		return fmt.Sprintf("⏳ Waiting for a free agent slot: its sender already has %d agents running, the most one person may.", f.mine)
	}
	return fmt.Sprintf("⏳ Waiting for a free agent slot (%d ahead): all %d of the bridge's agent slots are busy.", f.ahead, f.total)
}

// notice is what the sender of a turn that waits for a slot is told.
func (f slotFull) notice() string {
	if f.perUser {
		return fmt.Sprintf("⏳ Waiting for a free agent: you already have %d agents running, the most one person may. I'll answer when one of them is done.", f.mine)
	}
	return fmt.Sprintf("⏳ Waiting for a free agent (%d ahead): all %d of the bridge's agent slots are busy. I'll answer when one is free.", f.ahead, f.total)
}
