// Package pace holds the rate budgets platform calls are paced by: one
// Budget per platform limit (a Slack workspace's chat.update, a Discord
// route bucket, a Telegram chat), shared fairly by every caller that wants
// it.
//
// A Budget aims at Headroom of the documented or announced rate, so
// scheduling jitter never earns a 429. Callers that want a call queue in
// the order they first asked (round robin: a caller that just spent goes
// to the back), except that calls whose core.Priority is First (a reply's
// final text, a notice, a prompt: text nothing later replaces) go before
// anyone's interim ones, and interim calls leave one call of a burst (or
// Limit.Reserve calls; or one of a Window) free for them. A caller that
// is refused is told when its turn comes (TryTake, or Claim's
// *core.RateLimitError) and keeps its place while it comes back then, so
// a streaming reply can coalesce the text that arrives meanwhile; blocking
// callers use Take. Hold stops the budget until a platform's Retry-After
// or an announced reset. Adapters pass a post's Priority as it is: the
// ranking is decided here, once.
package pace

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbridge/agentbridge/core"
)

// Headroom is the share of a platform's rate a Budget aims at: under it,
// a few milliseconds of jitter never meet the platform's limit.
const Headroom = 0.9

// keepPlace is how long past its turn a queued caller keeps its place
// without coming back (it may have given up; then the next one goes).
const keepPlace = time.Second

// Limit is a platform rate: N calls per Per, with bursts of up to Burst
// calls at once (at least 1).
type Limit struct {
	N     int
	Per   time.Duration
	Burst int
	// Window says the platform counts calls per window of Per (Discord's
	// route buckets: N calls, then none until the reset announced in
	// X-RateLimit-Reset-After) rather than refilling at a steady rate.
	// The budget then keeps its last N calls' times: no stretch of
	// Per/Headroom holds more than N calls (so neither a fixed window nor
	// a sliding one is met), and interim calls go evenly at InterimShare
	// of the rate, never taking the N-th call of a stretch of N−1
	// spacings, so a first call finds one free or freed within
	// Per/Headroom − (N−1)·spacing (0.85 s at 5 per 5 s, where a token
	// bucket at 90 % makes it wait up to 1.1 s). Burst is ignored.
	Window bool
	// Reserve is how many calls of a burst interim calls leave for calls
	// marked first, so that many replies ending at once all send their
	// final text at once; 0 means one when Burst is 2 or more. At most
	// Burst−1. It costs no rate: interim calls go as often, with the
	// budget fuller. A Window limit ignores it.
	Reserve int
}

// reserve returns l's Reserve with its default and bound applied.
func (l Limit) reserve() float64 {
	burst := max(l.Burst, 1)
	r := l.Reserve
	if r <= 0 && burst >= 2 {
		r = 1
	}
	return float64(min(r, burst-1))
}

// InterimShare is the share of a Window limit's rate interim calls aim at:
// under Headroom, so the calls a first one needs come free soon, and over
// the 80 % of the rate a platform's budget should see used.
const InterimShare = 0.85

// rate is the steady rate, in calls per second: Headroom·N − (Burst−1)
// calls per Per, so a window of Per holds at most a full bucket's Burst
// calls plus what it earns, Headroom·N + 1 (one call over the aim at worst,
// still short of N), while the steady rate stays under Headroom.
func (l Limit) rate() float64 {
	burst := float64(max(l.Burst, 1))
	n := Headroom*float64(l.N) - (burst - 1)
	if n <= 0 {
		n = Headroom * float64(l.N) / 2
	}
	return n / l.Per.Seconds()
}

// window is the stretch of time a Window limit's N calls may share:
// Per/Headroom.
func (l Limit) window() time.Duration {
	return time.Duration(float64(l.Per) / Headroom)
}

// Budget is one platform rate budget. Its methods may be called from any
// goroutine.
type Budget struct {
	mu      sync.Mutex
	limit   Limit
	rate    float64 // calls per second
	burst   float64
	reserve float64 // calls interim ones leave for first ones (a token bucket's)
	tokens  float64
	last    time.Time   // when tokens was computed
	hold    time.Time   // nothing goes before this (a 429, a spent bucket)
	queue   []*waiter   // callers that were refused, in the order they go
	calls   []time.Time // a Window limit's last N calls
	// refused counts the platform's 429s (Refused); a set's budgets share
	// the set's, so a forgotten budget's count stays.
	refused *atomic.Int64
}

type waiter struct {
	key   string
	first bool
	due   time.Time // when it was told to come back
}

// NewBudget returns a full budget for l.
func NewBudget(l Limit) *Budget {
	b := &Budget{refused: new(atomic.Int64)}
	b.set(l)
	b.tokens = b.burst
	return b
}

func (b *Budget) set(l Limit) {
	if l.N <= 0 || l.Per <= 0 {
		panic(fmt.Sprintf("pace: bad limit %d per %s", l.N, l.Per))
	}
	b.limit, b.rate, b.burst, b.reserve = l, l.rate(), float64(max(l.Burst, 1)), l.reserve()
}

// SetLimit changes the budget's limit, e.g. to the one a platform announces
// in its response headers; an invalid one is ignored.
func (b *Budget) SetLimit(l Limit) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if l == b.limit || l.N <= 0 || l.Per <= 0 {
		return
	}
	b.refill(time.Now())
	b.set(l)
	b.tokens = min(b.tokens, b.burst)
	b.calls = b.calls[max(len(b.calls)-l.N, 0):]
}

// Hold stops the budget until until (a platform's Retry-After, or the reset
// of a bucket it said is spent). An earlier until than the current hold
// changes nothing.
func (b *Budget) Hold(until time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if until.After(b.hold) {
		b.hold = until
	}
}

// Held reports how long the budget is still held (0: not held).
func (b *Budget) Held() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return max(time.Until(b.hold), 0)
}

// Spent says the platform reported the budget's bucket as spent until
// until (Discord's X-RateLimit-Remaining: 0 with its Reset-After): it holds
// the budget and empties it, so the calls after the reset are paced again.
func (b *Budget) Spent(until time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if until.After(b.hold) {
		b.hold = until
	}
	b.refill(time.Now())
	b.tokens = 0
}

// refill adds the tokens earned since the last call. b.mu is held.
func (b *Budget) refill(now time.Time) {
	if !b.last.IsZero() && now.After(b.last) {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	}
	if now.After(b.last) {
		b.last = now
	}
}

// TryTake takes one call for key at priority p if it is key's turn and
// returns 0; otherwise it takes nothing, keeps key's place in the queue and
// returns how long until key's turn. A First priority goes before every
// interim call (a reply's final text, a notice). key names the caller (a
// conversation): one key holds one place.
func (b *Budget) TryTake(key string, p core.Priority) time.Duration {
	first := p.First()
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	b.refill(now)
	b.expire(now)
	pos := b.place(key, first)
	var wait time.Duration
	if b.limit.Window {
		wait = b.windowTurn(now, pos, first).Sub(now)
	} else {
		wait = b.bucketTurn(now, pos, first)
	}
	if wait > 0 {
		b.queue[pos].due = now.Add(wait)
		return wait
	}
	if b.limit.Window {
		b.calls = append(b.calls[max(len(b.calls)+1-b.limit.N, 0):], now)
	} else {
		b.tokens--
	}
	b.queue = append(b.queue[:pos], b.queue[pos+1:]...)
	return 0
}

// bucketTurn returns how long until the caller at queue position pos may
// go, with a steady refill. b.mu is held.
func (b *Budget) bucketTurn(now time.Time, pos int, first bool) time.Duration {
	// The first floor(tokens) callers in the queue may go now, except
	// that interim calls leave the reserve of a burst for first ones, so
	// a reply's end goes at once even while other replies use the budget.
	need := float64(pos+1) - b.tokens
	if !first {
		need += b.reserve
	}
	var wait time.Duration
	if need > 0 {
		wait = time.Duration(need / b.rate * float64(time.Second))
	}
	if h := b.hold.Sub(now); h > 0 {
		wait = max(wait, h+time.Duration(float64(pos)/b.rate*float64(time.Second)))
	}
	return wait
}

// windowTurn returns when the caller at queue position pos may go under a
// Window limit: each caller ahead of it goes at its own earliest time
// first. b.mu is held.
func (b *Budget) windowTurn(now time.Time, pos int, first bool) time.Time {
	n, window := b.limit.N, b.limit.window()
	spacing := time.Duration(float64(b.limit.Per) / (InterimShare * float64(n)))
	calls := slices.Clone(b.calls)
	t := now
	if b.hold.After(t) {
		t = b.hold
	}
	for k := 0; k <= pos; k++ {
		f := first
		if k < pos {
			f = b.queue[k].first
		}
		c := len(calls)
		if c >= n { // the window must not hold an (N+1)-th call
			t = later(t, calls[c-n].Add(window))
		}
		if !f && n >= 2 {
			if c >= 1 { // evenly
				t = later(t, calls[c-1].Add(spacing))
			}
			if c >= n-1 { // leaving the N-th call for a first one
				t = later(t, calls[c-(n-1)].Add(time.Duration(n-1)*spacing))
			}
		}
		calls = append(calls, t)
	}
	return t
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Take waits for key's turn and takes one call, or returns ctx's error.
func (b *Budget) Take(ctx context.Context, key string, p core.Priority) error {
	_, err := b.TakeWithin(ctx, key, p, -1)
	return err
}

// Claim is TakeWithin for a platform call: a turn further off than maxWait
// (0: any wait at all) is a *core.RateLimitError with Turn set, saying
// when it comes, so the caller neither calls the platform nor mistakes
// its place in the queue for the platform's refusal.
func (b *Budget) Claim(ctx context.Context, key string, p core.Priority, maxWait time.Duration) error {
	d, err := b.TakeWithin(ctx, key, p, maxWait)
	if err != nil {
		return err
	}
	if d > 0 {
		return &core.RateLimitError{RetryAfter: d, Turn: true}
	}
	return nil
}

// TakeWithin waits for key's turn if it comes within maxWait (negative:
// however long) and takes one call, returning 0. If the turn is further
// off it takes nothing and returns how long until it comes (key keeps its
// place meanwhile, as with TryTake). It returns ctx's error if ctx ends
// first.
func (b *Budget) TakeWithin(ctx context.Context, key string, p core.Priority, maxWait time.Duration) (time.Duration, error) {
	deadline := time.Now().Add(maxWait)
	for {
		d := b.TryTake(key, p)
		if d == 0 {
			return 0, nil
		}
		if maxWait >= 0 && time.Now().Add(d).After(deadline) {
			return d, nil
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			b.Leave(key)
			return 0, fmt.Errorf("wait for the rate budget: %w", context.Cause(ctx))
		}
	}
}

// Leave gives up key's place in the queue, if it has one.
func (b *Budget) Leave(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, w := range b.queue {
		if w.key == key {
			b.queue = append(b.queue[:i], b.queue[i+1:]...)
			return
		}
	}
}

// place returns key's index in the queue, queueing it if needed: a first
// call goes after the other first ones and before every interim one.
// b.mu is held.
func (b *Budget) place(key string, first bool) int {
	for i, w := range b.queue {
		if w.key != key {
			continue
		}
		if !first || w.first {
			return i
		}
		b.queue = append(b.queue[:i], b.queue[i+1:]...) // moves up below
		break
	}
	at := len(b.queue)
	if first {
		at = 0
		for at < len(b.queue) && b.queue[at].first {
			at++
		}
	}
	b.queue = append(b.queue, nil)
	copy(b.queue[at+1:], b.queue[at:])
	b.queue[at] = &waiter{key: key, first: first}
	return at
}

// expire drops callers that did not come back within keepPlace of their
// turn. b.mu is held.
func (b *Budget) expire(now time.Time) {
	kept := b.queue[:0]
	for _, w := range b.queue {
		if w.due.IsZero() || now.Sub(w.due) <= keepPlace {
			kept = append(kept, w)
		}
	}
	clear(b.queue[len(kept):])
	b.queue = kept
}

// Budgets is a set of budgets of one limit, one per key (a workspace, a
// channel, a route), made on first use. A set grown past a bound forgets
// its idle budgets.
type Budgets struct {
	limit   Limit
	refused atomic.Int64 // its budgets' 429s
	mu      sync.Mutex
	m       map[string]*Budget
}

// maxBudgets bounds a Budgets set; past it, full idle budgets are dropped.
const maxBudgets = 10000

// NewBudgets returns an empty set whose budgets start at l.
func NewBudgets(l Limit) *Budgets {
	NewBudget(l) // check l now, not on first use
	return &Budgets{limit: l, m: map[string]*Budget{}}
}

// Get returns key's budget.
func (s *Budgets) Get(key string) *Budget {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.m[key]
	if b == nil {
		if len(s.m) >= maxBudgets {
			s.forgetIdle()
		}
		b = NewBudget(s.limit)
		b.refused = &s.refused
		s.m[key] = b
	}
	return b
}

// Refused counts a 429 the platform answered a call of this budget with
// (the operator console shows them); the caller holds the budget too.
func (b *Budget) Refused() { b.refused.Add(1) }

// InUse reports the share of the budget in use now, from 0 (full: a
// burst could go at once) to 1 (spent, or held).
func (b *Budget) InUse() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	if b.hold.After(now) {
		return 1
	}
	if b.limit.Window {
		n := 0
		for _, c := range b.calls {
			if now.Sub(c) < b.limit.window() {
				n++
			}
		}
		return min(1, float64(n)/float64(b.limit.N))
	}
	b.refill(now)
	return min(1, max(0, 1-b.tokens/b.burst))
}

// Use reports a budget's or a set's use: the fullest budget's share in
// use and the 429s counted.
func (b *Budget) Use() (inUse float64, refused int64) { return b.InUse(), b.refused.Load() }

// Use reports the fullest budget's share in use and the 429s the set's
// budgets counted.
func (s *Budgets) Use() (inUse float64, refused int64) {
	s.mu.Lock()
	list := make([]*Budget, 0, len(s.m))
	for _, b := range s.m {
		list = append(list, b)
	}
	s.mu.Unlock()
	for _, b := range list {
		inUse = max(inUse, b.InUse())
	}
	return inUse, s.refused.Load()
}

// forgetIdle drops the budgets nobody waits for that are full again (a
// new one would be the same). s.mu is held.
func (s *Budgets) forgetIdle() {
	now := time.Now()
	for k, b := range s.m {
		b.mu.Lock()
		b.refill(now)
		rested := b.tokens >= b.burst
		if b.limit.Window {
			rested = len(b.calls) == 0 || now.Sub(b.calls[len(b.calls)-1]) >= b.limit.window()
		}
		idle := len(b.queue) == 0 && rested && !b.hold.After(now)
		b.mu.Unlock()
		if idle {
			delete(s.m, k)
		}
	}
}
