package core

import (
	"errors"
	"fmt"
	"time"
)

// Errors adapters return (wrapped) so core can react without knowing the
// platform. Adapters translate SDK errors into these at the edge.
var (
	// ErrMessageTooLong: the platform refused the text as too long.
	ErrMessageTooLong = errors.New("message too long")
	// ErrNotFound: the conversation or message no longer exists (deleted
	// message, archived channel, bot removed).
	ErrNotFound = errors.New("not found")
	// ErrFormatting: the platform rejected the markup; resending as plain
	// text may work.
	ErrFormatting = errors.New("formatting rejected")
	// ErrNotModified: an edit with identical content; callers treat it as
	// success.
	ErrNotModified = errors.New("message not modified")
	// ErrFileTooLarge: the platform refused a file (FileSender) as over
	// its size limit; sending it again cannot succeed.
	ErrFileTooLarge = errors.New("file too large for the platform")
)

// RateLimitError says the platform (or the adapter's own budget) refused a
// call for now. Callers wait RetryAfter before trying again.
type RateLimitError struct {
	RetryAfter time.Duration
	Err        error // the platform's error, if any
	// Turn is set when the adapter's own rate budget refused the call
	// before it reached the platform: RetryAfter is when this caller's turn
	// comes at the post's Priority. A reply's final text (PriorityFinal)
	// asks for its own turn, which comes first, instead of waiting for an
	// interim frame's. Only the budgets (adapters/internal/pace) set it.
	Turn bool
}

func (e *RateLimitError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("rate limited, retry after %s: %v", e.RetryAfter, e.Err)
	}
	return fmt.Sprintf("rate limited, retry after %s", e.RetryAfter)
}

// Unwrap returns the underlying platform error.
func (e *RateLimitError) Unwrap() error { return e.Err }

// RetryAfter reports how long err asks the caller to wait, and whether err is
// a rate limit at all.
func RetryAfter(err error) (time.Duration, bool) {
	var rl *RateLimitError
	if errors.As(err, &rl) {
		return rl.RetryAfter, true
	}
	return 0, false
}

// ErrFatal marks an error from Platform.Run that retrying cannot fix, such
// as a rejected token or a missing privileged intent: the supervisor stops
// restarting that adapter and reports it. Wrap errors with Fatal.
var ErrFatal = errors.New("fatal adapter error")

// Fatal marks err as one that retrying cannot fix; its message is err's.
func Fatal(err error) error { return fatalError{err} }

type fatalError struct{ err error }

func (e fatalError) Error() string        { return e.err.Error() }
func (e fatalError) Unwrap() error        { return e.err }
func (e fatalError) Is(target error) bool { return target == ErrFatal }
