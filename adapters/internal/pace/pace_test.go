package pace_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentbridge/agentbridge/adapters/internal/pace"
	"github.com/agentbridge/agentbridge/core"
)

// spender calls TryTake like a streaming reply: when refused it sleeps as
// told and asks again; after a call it asks again at once (it always has
// new text). It records when it was granted.
func spender(b *pace.Budget, key string, until time.Time, mu *sync.Mutex, grants map[string][]time.Time) {
	for time.Now().Before(until) {
		if d := b.TryTake(key, core.PriorityInterim); d > 0 {
			time.Sleep(d)
			continue
		}
		mu.Lock()
		grants[key] = append(grants[key], time.Now())
		mu.Unlock()
		time.Sleep(time.Millisecond) // the platform call
	}
}

// allCalls returns every caller's grants together.
func allCalls(grants map[string][]time.Time) []time.Time {
	var all []time.Time
	for _, g := range grants {
		all = append(all, g...)
	}
	return all
}

// busiest returns the most calls in any span d, and when that span begins.
func busiest(calls []time.Time, d time.Duration) (most int, from time.Time) {
	for _, t0 := range calls {
		n := 0
		for _, t1 := range calls {
			if !t1.Before(t0) && t1.Sub(t0) < d {
				n++
			}
		}
		if n > most {
			most, from = n, t0
		}
	}
	return most, from
}

// TestHeadroomUseAndFairness: ten streams sharing Slack's chat.update
// budget (50 a minute) never exceed 90 % of it in any minute, use at least
// 80 % of it, and none waits more than twice its fair share.
func TestHeadroomUseAndFairness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := pace.Limit{N: 50, Per: time.Minute, Burst: 3}
		b := pace.NewBudget(lim)
		const streams = 10
		const run = 5 * time.Minute
		start := time.Now()
		var mu sync.Mutex
		grants := map[string][]time.Time{}
		var wg sync.WaitGroup
		for i := range streams {
			wg.Go(func() { spender(b, fmt.Sprint("s", i), start.Add(run), &mu, grants) })
		}
		wg.Wait()
		all := allCalls(grants)
		// Any minute-long window: at most 45 calls.
		if n, from := busiest(all, time.Minute); n > 45 {
			t.Fatalf("%d calls in the minute from +%v; want ≤ 45 (90 %% of 50)", n, from.Sub(start))
		}
		used := float64(len(all)) / (run.Minutes() * 50)
		if used < 0.8 {
			t.Errorf("used %.0f %% of the budget; want ≥ 80 %%", used*100)
		}
		fair := time.Duration(float64(streams) / (float64(len(all)) / run.Seconds()) * float64(time.Second))
		for k, g := range grants {
			prev := start
			for _, at := range g {
				if gap := at.Sub(prev); gap > 2*fair {
					t.Errorf("%s waited %v between calls; fair share is %v", k, gap, fair)
				}
				prev = at
			}
		}
		t.Logf("%d calls in %v (%.0f %% of the budget), fair share %v", len(all), run, used*100, fair)
	})
}

// TestFinalGoesFirst: a reply's final call goes before interim calls that
// queued earlier.
func TestFinalGoesFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := pace.NewBudget(pace.Limit{N: 10, Per: 10 * time.Second, Burst: 1})
		if d := b.TryTake("a", core.PriorityInterim); d != 0 {
			t.Fatalf("first call waits %v", d)
		}
		b.TryTake("b", core.PriorityInterim)
		b.TryTake("c", core.PriorityInterim)
		wf := b.TryTake("f", core.PriorityFinal)
		wb, wc := b.TryTake("b", core.PriorityInterim), b.TryTake("c", core.PriorityInterim)
		if !(wf < wb && wb < wc) {
			t.Fatalf("waits: final %v, interim b %v, c %v; want final first, then b, then c", wf, wb, wc)
		}
		time.Sleep(wf)
		if d := b.TryTake("f", core.PriorityFinal); d != 0 {
			t.Fatalf("final refused at its turn: wait %v", d)
		}
		if d := b.TryTake("c", core.PriorityInterim); d == 0 {
			t.Fatal("c went before b")
		}
	})
}

// TestFullPieceRanksAsInterim: a full piece (its message's text final, the
// reply going on) keeps an interim frame's place: it leaves the burst's
// reserve to final text, which a Claim then takes at once, and its own
// refusal is a turn (core.RateLimitError.Turn) saying when it comes.
func TestFullPieceRanksAsInterim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := pace.NewBudget(pace.Limit{N: 60, Per: time.Minute, Burst: 2}) // reserve 1
		if err := b.Claim(t.Context(), "a", core.PriorityInterim, 0); err != nil {
			t.Fatalf("first interim call: %v", err)
		}
		err := b.Claim(t.Context(), "b", core.PriorityFull, 0)
		var rl *core.RateLimitError
		if !errors.As(err, &rl) || !rl.Turn || rl.RetryAfter <= 0 {
			t.Fatalf("full piece with only the reserve left: %v, want a turn to wait for", err)
		}
		if err := b.Claim(t.Context(), "c", core.PriorityFinal, 0); err != nil {
			t.Fatalf("final text did not take the reserve: %v", err)
		}
	})
}

// TestHoldAndSpent: nothing goes before a hold ends, and a spent bucket is
// paced again after its reset.
func TestHoldAndSpent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := pace.NewBudget(pace.Limit{N: 5, Per: 5 * time.Second, Burst: 1})
		start := time.Now()
		b.Hold(start.Add(3 * time.Second))
		if err := b.Take(t.Context(), "a", core.PriorityInterim); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got < 3*time.Second {
			t.Fatalf("took after %v; the hold lasts 3s", got)
		}
		b.Spent(time.Now().Add(2 * time.Second))
		at := time.Now()
		b.Take(t.Context(), "a", core.PriorityInterim)
		if got := time.Since(at); got < 2*time.Second {
			t.Fatalf("took %v after the bucket was spent for 2s", got)
		}
	})
}

// TestRefusedCallerKeepsItsPlace: a caller told to wait is not overtaken by
// one that asks later, and gives up its place if it never comes back.
func TestRefusedCallerKeepsItsPlace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := pace.NewBudget(pace.Limit{N: 1, Per: time.Second, Burst: 1})
		b.TryTake("x", core.PriorityInterim)
		da := b.TryTake("a", core.PriorityInterim)
		if da == 0 {
			t.Fatal("a went with the budget spent")
		}
		time.Sleep(da)
		if d := b.TryTake("late", core.PriorityInterim); d == 0 {
			t.Fatal("a caller asking later went before a, whose turn it was")
		}
		if d := b.TryTake("a", core.PriorityInterim); d != 0 {
			t.Fatalf("a refused at its turn: %v", d)
		}
		// "gone" queues and never comes back: after keepPlace, the next goes.
		time.Sleep(2 * time.Second)
		b.TryTake("x", core.PriorityInterim)
		dg := b.TryTake("gone", core.PriorityInterim)
		time.Sleep(dg + 2*time.Second)
		if d := b.TryTake("y", core.PriorityInterim); d != 0 {
			t.Fatalf("y waits %v behind a caller that left", d)
		}
	})
}

func TestTakeEndsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := pace.NewBudget(pace.Limit{N: 1, Per: time.Hour, Burst: 1})
		b.TryTake("x", core.PriorityInterim)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if err := b.Take(ctx, "a", core.PriorityInterim); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Take = %v, want the context's deadline", err)
		}
	})
}

func TestBudgetsPerKey(t *testing.T) {
	s := pace.NewBudgets(pace.Limit{N: 1, Per: time.Hour, Burst: 1})
	first := s.Get("w1")
	if s.Get("w1") != first || first == s.Get("w2") {
		t.Fatal("want one budget per key")
	}
	s.Get("w1").TryTake("a", core.PriorityInterim)
	if d := s.Get("w2").TryTake("a", core.PriorityInterim); d != 0 {
		t.Fatalf("w2 waits %v for w1's budget", d)
	}
}

// TestFinalFindsTheBudgetFree: while interim calls use the budget fully,
// a final call still goes at once.
func TestFinalFindsTheBudgetFree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := pace.NewBudget(pace.Limit{N: 50, Per: time.Minute, Burst: 3})
		for i := range 20 {
			b.Take(t.Context(), fmt.Sprint("s", i%5), core.PriorityInterim)
		}
		if d := b.TryTake("s0", core.PriorityFinal); d != 0 {
			t.Fatalf("final waits %v behind interim calls", d)
		}
	})
}

// TestWindowLeavesACallForTheFinal: on a Window limit (Discord's 5 per
// 5 s route bucket), a stream's interim calls use at least 80 % of the
// rate, a final call that comes at any point of their pacing waits at
// most 0.85 s (where a token bucket at 90 % makes it wait up to 1.1 s), and
// no window of 5 s holds more than 5 calls even with finals mixed in, three
// of them at once.
func TestWindowLeavesACallForTheFinal(t *testing.T) {
	lim := pace.Limit{N: 5, Per: 5 * time.Second, Window: true}
	const maxFinalWait = 850 * time.Millisecond
	for k := range 10 {
		synctest.Test(t, func(t *testing.T) {
			b := pace.NewBudget(lim)
			start := time.Now()
			var mu sync.Mutex
			grants := map[string][]time.Time{}
			var wg sync.WaitGroup
			wg.Go(func() { spender(b, "s", start.Add(40*time.Second), &mu, grants) })
			final := func(key string) {
				asked := time.Now()
				if err := b.Take(t.Context(), key, core.PriorityFinal); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				grants[key] = append(grants[key], time.Now())
				mu.Unlock()
				if d := time.Since(asked); d > maxFinalWait {
					t.Errorf("final %s asked at +%v waited %v; want ≤ %v", key, asked.Sub(start), d, maxFinalWait)
				}
			}
			// A final at a different point of the interim pacing each time.
			time.Sleep(20*time.Second + time.Duration(k)*120*time.Millisecond)
			final("f")
			time.Sleep(5 * time.Second)
			for i := range 3 {
				wg.Go(func() {
					b.Take(t.Context(), fmt.Sprint("g", i), core.PriorityFinal)
					mu.Lock()
					grants["g"] = append(grants["g"], time.Now())
					mu.Unlock()
				})
			}
			wg.Wait()
			mu.Lock()
			defer mu.Unlock()
			if n, from := busiest(allCalls(grants), lim.Per); n > lim.N {
				t.Fatalf("%d calls in the 5 s from +%v; want ≤ 5", n, from.Sub(start))
			}
			// The interim calls before the final, over the rate.
			n := 0
			for _, at := range grants["s"] {
				if at.Before(start.Add(20 * time.Second)) {
					n++
				}
			}
			if used := float64(n) / 20; used < 0.8 {
				t.Errorf("interim calls used %.0f %% of the rate; want ≥ 80 %%", used*100)
			}
		})
	}
}

// TestReserve: with a reserve of two, interim calls using the budget fully
// leave two calls for replies ending at once, and still get the whole
// rate.
func TestReserve(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := pace.Limit{N: 20, Per: time.Minute, Burst: 3, Reserve: 2}
		b := pace.NewBudget(lim)
		start := time.Now()
		const interim = 12
		for i := range interim {
			if err := b.Take(t.Context(), fmt.Sprint("s", i%5), core.PriorityInterim); err != nil {
				t.Fatal(err)
			}
		}
		// 12 interim calls at the rate (18−2 a minute), the first at once.
		if got, want := time.Since(start), time.Duration(float64(interim-1)/16*float64(time.Minute)); got > want+time.Second {
			t.Errorf("%d interim calls took %v; want about %v: the reserve must not cost rate", interim, got, want)
		}
		for _, s := range []string{"s0", "s1"} {
			if d := b.TryTake(s, core.PriorityFinal); d != 0 {
				t.Errorf("final of %s waits %v; want the reserve's two calls free", s, d)
			}
		}
		if d := b.TryTake("s2", core.PriorityFinal); d == 0 {
			t.Errorf("a third final went at once; the reserve is two")
		}
	})
}
