package stream

import (
	"errors"
	"time"

	"github.com/agentbridge/agentbridge/core"
)

// outcomeKind is what a platform write's result means for the reply.
type outcomeKind int

const (
	shown   outcomeKind = iota // the platform shows the post (an edit to the same text included)
	wait                       // rate limited: write again after outcome.after
	plain                      // markup rejected (core.ErrFormatting): resend as plain text
	smaller                    // too long (core.ErrMessageTooLong): split smaller
	gone                       // the edited message was deleted (core.ErrNotFound): post it again
	ended                      // the context ended: give up
	failed                     // anything else, likely transient: retry after a backoff
)

// outcome is a classified platform write.
type outcome struct {
	kind  outcomeKind
	after time.Duration // wait: how long
	// turn (with wait): the adapter's own budget gave an interim frame a
	// later turn. That is not worth a warning, and the final text does
	// not wait for it.
	turn bool
	// reached: the call got past the adapter's own budget, so it counts
	// for the cadence (a refused turn reached nobody).
	reached bool
}

// attempt describes the write an error came from.
type attempt struct {
	edit    bool // an edit of a message (else a post)
	interim bool // not core.PriorityFinal (a frame or a full piece)
	plain   bool // already plain text: a markup refusal has no fallback
	maxText int  // the length it was split at
}

// minMaxText is how small "split smaller" goes: below it a length refusal
// is retried like any failure.
const minMaxText = 200

// classify says what err, the result of write a, means. ctxErr is the
// reply's context's error after the call.
func classify(err error, a attempt, ctxErr error) outcome {
	o := outcome{reached: !turnRefusal(err)}
	if ra, ok := core.RetryAfter(err); ok {
		o.kind, o.after, o.turn = wait, ra, !o.reached && a.interim
		return o
	}
	switch {
	case err == nil, a.edit && errors.Is(err, core.ErrNotModified):
		o.kind = shown
	case errors.Is(err, core.ErrFormatting) && !a.plain:
		o.kind = plain
	case errors.Is(err, core.ErrMessageTooLong) && a.maxText > minMaxText:
		o.kind = smaller
	case errors.Is(err, core.ErrNotFound) && a.edit:
		o.kind = gone
	case ctxErr != nil:
		o.kind = ended
	default:
		o.kind = failed
	}
	return o
}

// turnRefusal reports whether err is the adapter's own budget refusing a
// call before it reached the platform (core.RateLimitError.Turn).
func turnRefusal(err error) bool {
	var rl *core.RateLimitError
	return errors.As(err, &rl) && rl.Turn
}
