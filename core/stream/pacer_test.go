package stream

import (
	"testing"
	"time"
)

// t0 is an arbitrary instant: the pacer holds no clock, so its tests give
// it times directly.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func TestPacerCadence(t *testing.T) {
	p := newPacer(time.Second)
	if got := p.next(false); !got.IsZero() {
		t.Fatalf("first write may go at %v, want at once (zero time)", got)
	}
	p.record(at(0), outcome{kind: shown, reached: true})
	if got := p.next(false); !got.Equal(at(time.Second)) {
		t.Errorf("interim write after one at +0 may go at %v, want +1s", got.Sub(t0))
	}
	if got := p.next(true); !got.Equal(at(0)) {
		t.Errorf("final write may go at %v, want at once: the final text skips the cadence", got.Sub(t0))
	}
	// A refusal by the adapter's budget reached nobody: the cadence still
	// counts from the last write that did.
	p.record(at(500*time.Millisecond), outcome{kind: wait, after: 3 * time.Second, turn: true})
	if got := p.next(false); !got.Equal(at(3500 * time.Millisecond)) {
		t.Errorf("after a turn refusal the interim write may go at %v, want its turn at +3.5s", got.Sub(t0))
	}
}

func TestPacerFinalOverridesATurnWaitButNotARateLimit(t *testing.T) {
	p := newPacer(time.Second)
	p.record(at(0), outcome{kind: shown, reached: true})
	p.record(at(2*time.Second), outcome{kind: wait, after: 10 * time.Second, turn: true})
	if got := p.next(false); !got.Equal(at(12 * time.Second)) {
		t.Errorf("interim write waits until %v, want its turn at +12s", got.Sub(t0))
	}
	if got := p.next(true); !got.Equal(at(0)) {
		t.Errorf("final write waits until %v, want at once: it asks for its own turn", got.Sub(t0))
	}

	// A platform 429 (Retry-After) holds every write, the final one too.
	p.record(at(3*time.Second), outcome{kind: wait, after: 5 * time.Second, reached: true})
	for _, final := range []bool{false, true} {
		if got := p.next(final); !got.Equal(at(8 * time.Second)) {
			t.Errorf("final=%v: write after a 429 at +3s with Retry-After 5s may go at %v, want +8s", final, got.Sub(t0))
		}
	}
	// The final text's own turn refused too: it waits for that one.
	p.record(at(8*time.Second), outcome{kind: wait, after: 2 * time.Second})
	if got := p.next(true); !got.Equal(at(10 * time.Second)) {
		t.Errorf("final write refused its turn may go at %v, want +10s", got.Sub(t0))
	}
}

func TestPacerRetryAfterLongerThanCadence(t *testing.T) {
	p := newPacer(100 * time.Millisecond)
	p.record(at(0), outcome{kind: wait, after: 3 * time.Second, reached: true})
	if got := p.next(false); !got.Equal(at(3 * time.Second)) {
		t.Errorf("write may go at %v, want the Retry-After's end, +3s", got.Sub(t0))
	}
	p.record(at(3*time.Second), outcome{kind: shown, reached: true})
	if got := p.next(false); !got.Equal(at(3100 * time.Millisecond)) {
		t.Errorf("after the retry succeeded the next write may go at %v, want one cadence later", got.Sub(t0))
	}
}

func TestPacerBackoffDoublesCapsAndResets(t *testing.T) {
	p := newPacer(0)
	now := t0
	var waits []time.Duration
	for range 9 {
		p.record(now, outcome{kind: failed, reached: true})
		next := p.next(true)
		waits = append(waits, next.Sub(now))
		now = next
	}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
		16 * time.Second, maxBackoff, maxBackoff, maxBackoff}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("backoffs %v, want %v", waits, want)
		}
	}
	p.record(now, outcome{kind: shown, reached: true})
	p.record(now, outcome{kind: failed, reached: true})
	if got := p.next(true).Sub(now); got != minBackoff {
		t.Errorf("first backoff after a success = %v, want %v", got, minBackoff)
	}
}

func TestPacerBackoffIsNotATurn(t *testing.T) {
	p := newPacer(time.Second)
	p.record(at(0), outcome{kind: wait, after: 10 * time.Second, turn: true})
	p.record(at(time.Second), outcome{kind: failed, reached: true})
	if got := p.next(true); !got.Equal(at(1500 * time.Millisecond)) {
		t.Errorf("final write after a failure may go at %v, want after the backoff (+1.5s)", got.Sub(t0))
	}
}

func TestPacerTurnHolds(t *testing.T) {
	p := newPacer(time.Second)
	if p.turnHolds() {
		t.Error("a new pacer says a turn holds it")
	}
	p.record(at(0), outcome{kind: shown, reached: true})
	p.record(at(100*time.Millisecond), outcome{kind: wait, after: 200 * time.Millisecond, turn: true})
	if p.turnHolds() {
		t.Error("a turn that ends before the cadence does holds the write")
	}
	p.record(at(1100*time.Millisecond), outcome{kind: wait, after: 5 * time.Second, turn: true})
	if !p.turnHolds() {
		t.Error("a turn 5 s away does not hold the write")
	}
	p.record(at(1200*time.Millisecond), outcome{kind: wait, after: 5 * time.Second, reached: true})
	if p.turnHolds() {
		t.Error("a platform 429 counts as a turn")
	}
}
