package stream

import "time"

// retry bounds for failed platform calls (not rate limits, which say how
// long to wait).
const (
	minBackoff = 500 * time.Millisecond
	maxBackoff = 30 * time.Second
)

// pacer says when a reply's next platform write may go: one cadence
// interval after the last write that reached the platform, so partials
// arriving meanwhile coalesce, and not before a rate limit or a failure's
// backoff ends. The final text skips the cadence (nothing follows it to
// coalesce), and a wait that is only an interim frame's turn in the
// adapter's budget (core.RateLimitError.Turn) does not hold it: it asks
// for its own turn, which comes first. A pacer holds no clock; callers
// pass the time in.
type pacer struct {
	interval  time.Duration
	lastOp    time.Time     // the last write that reached the platform
	notBefore time.Time     // a rate limit's or backoff's end
	turnWait  bool          // notBefore is only an interim frame's turn
	backoff   time.Duration // the next failure's wait
}

func newPacer(interval time.Duration) pacer {
	return pacer{interval: interval, backoff: minBackoff}
}

// next returns when the next write may go; final says it carries the
// reply's final text.
func (p *pacer) next(final bool) time.Time {
	cadence, notBefore := p.interval, p.notBefore
	if final {
		cadence = 0
		if p.turnWait {
			notBefore = time.Time{}
		}
	}
	return nextWrite(p.lastOp, notBefore, cadence)
}

// turnHolds reports whether what holds an interim write is an interim
// frame's turn in the adapter's budget (which the final text does not wait
// for), not the cadence or a rate limit.
func (p *pacer) turnHolds() bool {
	return p.turnWait && (p.lastOp.IsZero() || p.notBefore.After(p.lastOp.Add(p.interval)))
}

// record notes the outcome of a write made at now.
func (p *pacer) record(now time.Time, o outcome) {
	if o.reached {
		p.lastOp = now
	}
	switch o.kind {
	case shown:
		p.backoff = minBackoff
	case wait:
		p.notBefore, p.turnWait = now.Add(o.after), o.turn
	case failed:
		p.notBefore, p.turnWait = now.Add(p.backoff), false
		p.backoff = min(2*p.backoff, maxBackoff)
	}
}

// nextWrite is when the next write of a reply may go: not before notBefore
// (a rate limit's end) and one cadence interval after the last write.
func nextWrite(lastOp, notBefore time.Time, interval time.Duration) time.Time {
	if next := lastOp.Add(interval); !lastOp.IsZero() && next.After(notBefore) {
		return next
	}
	return notBefore
}
