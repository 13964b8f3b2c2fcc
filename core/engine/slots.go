package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
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

// errSaturated is acquire's error for a turn refused at once because a cap
// whose on_saturated is reject is reached.
var errSaturated = errors.New("every agent slot is busy")

// slots bounds the agents running at once: over the bridge, per profile
// (Profile.MaxConcurrent) and per user. A turn takes a slot before its
// agent starts and gives it back when the agent is done; a turn that finds
// none free waits, on its conversation's lane, or is refused when the cap
// that is reached says on_saturated: reject. The free slots go to the
// waiting turns in arrival order (when their message was handed over, not
// when their lane got to them), skipping those whose profile or user runs
// its share.
type slots struct {
	limits func() (total, perUser int) // read at each grant: a reload applies at once

	mu        sync.Mutex
	running   int
	byUser    map[string]int
	byProfile map[string]int
	waiting   []*slotWait // in arrival order
	// pending holds the arrival numbers of messages handed over but not yet
	// at acquire: a turn may be on its way from one of them (true once it
	// is, its lane starting it), and no later turn takes a slot before it.
	pending map[uint64]bool
}

// slotAsk is what a turn asks a slot for.
type slotAsk struct {
	user    string
	profile string
	profCap int    // the profile's own cap; 0 = none
	seq     uint64 // arrival order
	// rejectTotal and rejectProfile refuse the turn at once instead of
	// waiting when the bridge's cap, or the profile's, is reached.
	rejectTotal, rejectProfile bool
}

type slotWait struct {
	slotAsk
	ready chan struct{} // closed when granted
	moved chan struct{} // capacity 1: the turns ahead changed
}

func newSlots(limits func() (int, int)) *slots {
	return &slots{limits: limits, byUser: map[string]int{}, byProfile: map[string]int{}, pending: map[uint64]bool{}}
}

// arrive notes a message handed over (arrival seq) that may become a turn:
// until settle, handoff's acquire or done, later turns wait for it.
func (s *slots) arrive(seq uint64) {
	s.mu.Lock()
	s.pending[seq] = false
	s.mu.Unlock()
}

// handoff notes that seq's turn is on its lane, on its way to acquire:
// settle no longer drops it, only acquire or done do.
func (s *slots) handoff(seq uint64) {
	s.mu.Lock()
	if _, ok := s.pending[seq]; ok {
		s.pending[seq] = true
	}
	s.mu.Unlock()
}

// settle drops seq unless it was handed off: its message is not a turn
// about to ask for a slot (a command, a refusal, queued behind its lane's
// running turn).
func (s *slots) settle(seq uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if handed, ok := s.pending[seq]; ok && !handed {
		delete(s.pending, seq)
		s.grant()
		s.moved()
	}
}

// done drops seq in any case: its turn asked for a slot, or ended before.
func (s *slots) done(seq uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.pending[seq]; ok {
		delete(s.pending, seq)
		s.grant()
		s.moved()
	}
}

// slotFull says why a turn waits, for its sender and /status.
type slotFull struct {
	ahead   int    // turns that came before it and wait for the same cap
	mine    int    // agents its user runs
	perUser bool   // it waits for its user's share
	profile string // it waits for this profile's cap
	total   int    // the cap it waits for (the share when perUser)
	// order: no cap is reached, it only lets a message that arrived
	// before it, still on its way, go first; nobody is told (a moment).
	order bool
}

// acquire takes a slot for a, waiting until one is free or ctx ends
// (returning the context's cause), or refusing at once with errSaturated
// (and why) when the cap reached rejects. waiting is called before the wait
// when there is none free at once, with the wait (for describe), and again
// whenever why it waits changed. release gives the slot back.
func (s *slots) acquire(ctx context.Context, a slotAsk, waiting func(*slotWait, slotFull)) (release func(), full slotFull, err error) {
	w := &slotWait{slotAsk: a, ready: make(chan struct{}), moved: make(chan struct{}, 1)}
	s.mu.Lock()
	at, _ := slices.BinarySearchFunc(s.waiting, a.seq, func(o *slotWait, seq uint64) int {
		return cmpSeq(o.seq, seq)
	})
	s.waiting = slices.Insert(s.waiting, at, w)
	if at < len(s.waiting)-1 {
		s.moved() // it arrived before turns that wait already
	}
	delete(s.pending, a.seq)
	s.grant()
	full, granted := s.full(w)
	if !granted && !full.order && ((full.profile != "" && a.rejectProfile) || (full.profile == "" && !full.perUser && a.rejectTotal)) {
		s.remove(w)
		s.mu.Unlock()
		return nil, full, errSaturated
	}
	s.mu.Unlock()
	release = func() { s.release(a.user, a.profile) }
	if granted {
		return release, full, nil
	}
	var last slotFull // what waiting was last told; zero before
	tell := func(f slotFull) {
		if !f.order && f != last {
			last = f
			waiting(w, f)
		}
	}
	tell(full)
	for {
		select {
		case <-w.ready:
			return release, full, nil
		case <-w.moved:
			if f, waits := s.describe(w); waits {
				tell(f)
			}
			continue
		case <-ctx.Done():
		}
		break
	}
	s.mu.Lock()
	gone := !s.remove(w)
	s.mu.Unlock()
	if gone {
		s.release(a.user, a.profile) // granted meanwhile: hand it on
	}
	return nil, full, context.Cause(ctx)
}

func cmpSeq(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// remove takes w off the waiting list, reporting whether it was on it.
// s.mu is held.
func (s *slots) remove(w *slotWait) bool {
	i := slices.Index(s.waiting, w)
	if i < 0 {
		return false
	}
	s.waiting = slices.Delete(s.waiting, i, i+1)
	s.moved()
	return true
}

// moved tells every waiting turn that the turns ahead may have changed.
// s.mu is held.
func (s *slots) moved() {
	for _, w := range s.waiting {
		select {
		case w.moved <- struct{}{}:
		default:
		}
	}
}

// full reports whether w was granted and, when not, why it waits: the
// bridge's cap when it is reached, else its profile's, else its user's
// share. s.mu is held.
func (s *slots) full(w *slotWait) (slotFull, bool) {
	i := slices.Index(s.waiting, w)
	if i < 0 {
		return slotFull{}, true
	}
	total, perUser := s.limits()
	f := slotFull{mine: s.byUser[w.user], total: total}
	same := func(o *slotWait) bool { return true }
	switch {
	case s.running >= total:
	case w.profCap > 0 && s.byProfile[w.profile] >= w.profCap:
		f.profile, f.total = w.profile, w.profCap
		same = func(o *slotWait) bool { return o.profile == w.profile }
	case f.mine >= perUser:
		f.perUser, f.total = true, perUser
		same = func(o *slotWait) bool { return o.user == w.user }
	default:
		return slotFull{order: true}, false
	}
	for _, o := range s.waiting[:i] {
		if same(o) {
			f.ahead++
		}
	}
	return f, false
}

// describe reports why w waits, live; false once it no longer does.
func (s *slots) describe(w *slotWait) (slotFull, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, granted := s.full(w)
	return f, !granted
}

func (s *slots) release(user, profile string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running--
	if s.byUser[user]--; s.byUser[user] <= 0 {
		delete(s.byUser, user)
	}
	if s.byProfile[profile]--; s.byProfile[profile] <= 0 {
		delete(s.byProfile, profile)
	}
	s.grant()
}

// grant hands free slots to the waiting turns in order, skipping those
// whose profile or user runs its share, and none to a turn that arrived
// after a message still on its way (pending). s.mu is held.
func (s *slots) grant() {
	total, perUser := s.limits()
	first := uint64(math.MaxUint64)
	for seq := range s.pending {
		first = min(first, seq)
	}
	granted := false
	for i := 0; i < len(s.waiting) && s.running < total; {
		w := s.waiting[i]
		if w.seq > first {
			break // the waiting list is in arrival order
		}
		if s.byUser[w.user] >= perUser || (w.profCap > 0 && s.byProfile[w.profile] >= w.profCap) {
			i++
			continue
		}
		s.running++
		s.byUser[w.user]++
		s.byProfile[w.profile]++
		close(w.ready)
		s.waiting = slices.Delete(s.waiting, i, i+1)
		granted = true
	}
	if granted {
		s.moved()
	}
}

// status is /status's line for a turn waiting for a slot.
func (f slotFull) status() string {
	switch {
	case f.perUser:
		return fmt.Sprintf("⏳ Waiting for a free agent slot: its sender already has %d agents running, the most one person may.", f.mine)
	case f.profile != "":
		return fmt.Sprintf("⏳ Waiting for a free agent slot (%d ahead): all %d of profile %s's agent slots are busy.", f.ahead, f.total, f.profile)
	}
	return fmt.Sprintf("⏳ Waiting for a free agent slot (%d ahead): all %d of the bridge's agent slots are busy.", f.ahead, f.total)
}

// notice is what the sender of a turn that waits for a slot is told, kept
// up to date in place while it waits.
func (f slotFull) notice() string {
	switch {
	case f.perUser:
		return fmt.Sprintf("⏳ Waiting for a free agent: you already have %d agents running, the most one person may. I'll answer when one of them is done.", f.mine)
	case f.profile != "":
		return fmt.Sprintf("⏳ Waiting for a free agent (%d ahead): all %d of profile %s's agents are busy. I'll answer when one is free.", f.ahead, f.total, f.profile)
	}
	return fmt.Sprintf("⏳ Waiting for a free agent (%d ahead): all %d of the bridge's agent slots are busy. I'll answer when one is free.", f.ahead, f.total)
}

// rejected is what the sender of a turn refused by a full cap is told.
func (f slotFull) rejected() string {
	if f.profile != "" {
		return fmt.Sprintf("🚦 All %d of profile %s's agents are busy, so this message was not run. Please send it again in a while.", f.total, f.profile)
	}
	return fmt.Sprintf("🚦 All %d of the bridge's agents are busy, so this message was not run. Please send it again in a while.", f.total)
}
