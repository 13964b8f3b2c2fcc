// This file: the reply limit — a bound on the text of one turn that the
// runner forwards and keeps, so a turn's memory stays flat however much
// its agent prints, and the stop of an agent that floods past it.

package agentproc

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge/core"
)

// DefaultMaxReplyBytes is the reply limit `serve`, `chat` and `run` use
// unless configured otherwise: 64 KiB, some 16 chat messages of Slack's or
// Telegram's length (32 of Discord's), more than a person reads in a chat
// and far below what would weigh on the bridge's memory.
const DefaultMaxReplyBytes = 64 << 10

// FloodFactor: an agent that has printed this many times the reply limit is
// stopped (Outcome.Stopped is ErrFlooding).
const FloodFactor = 4

// ThinkingFloodFactor: thinking is no part of the reply, so it is never
// cut, but an agent whose thinking passes this many times the reply limit
// (1 MiB by default, far more than any real reasoning) is stopped as
// flooding all the same: its text would go on costing CPU and, in `run`,
// the terminal until the turn's timeout.
const ThinkingFloodFactor = 4 * FloodFactor

// ErrFlooding is Outcome.Stopped for an agent stopped because it went on
// printing past FloodFactor times the reply limit.
var ErrFlooding = errors.New("the agent went on printing past the reply limit")

// replyLimit counts what the agent prints against Options.MaxReplyBytes.
// The reply is every role's text but thinking's: a presenter shows other
// roles as output (P-PART-2 names only two), so they count as output.
// Thinking is shown only in part (a presenter keeps its tail), so it is
// forwarded whole and only bounded where it is kept (Outcome.Partials). Only the
// stdout reader goroutine touches it until Run reads the result.
type replyLimit struct {
	max       int           // 0: no limit
	printed   int64         // output partial text received (every role but thinking)
	other     int64         // thinking's text kept in Outcome.Partials
	thought   int64         // thinking's text received
	truncated bool          // output was not forwarded or kept
	flooded   bool          // flood is closed
	flood     chan struct{} // closed once printed passes FloodFactor × max, or thought ThinkingFloodFactor × max
}

func newReplyLimit(max int) *replyLimit {
	return &replyLimit{max: max, flood: make(chan struct{})}
}

// partial counts one partial's text and returns what of it may be
// forwarded: all of it while under the limit, the part up to the limit
// (cut at a character boundary) at the crossing, nothing after.
// Thinking's text is forwarded as it is.
func (l *replyLimit) partial(role, text string) string {
	if l.max <= 0 {
		return text
	}
	if role == core.RoleThinking {
		l.thought += int64(len(text))
		if l.thought > int64(l.max)*ThinkingFloodFactor {
			l.stop()
		}
		return text
	}
	before := l.printed
	l.printed += int64(len(text))
	if l.printed > int64(l.max)*FloodFactor {
		l.stop()
	}
	if l.printed <= int64(l.max) {
		return text
	}
	l.truncated = true
	if before >= int64(l.max) {
		return ""
	}
	return cut(text, l.max-int(before))
}

// stop closes flood, once.
func (l *replyLimit) stop() {
	if !l.flooded {
		l.flooded = true
		close(l.flood)
	}
}

// keep reports whether a forwarded partial of n bytes may be kept in
// Outcome.Partials: output always (partial bounds it), thinking while its
// total stays within the limit.
func (l *replyLimit) keep(role string, n int) bool {
	if l.max <= 0 || role != core.RoleThinking {
		return true
	}
	l.other += int64(n)
	return l.other <= int64(l.max)
}

// whole cuts a text the agent sent in one piece (a result, an error) to
// the limit.
func (l *replyLimit) whole(text string) string {
	if l.max <= 0 || len(text) <= l.max {
		return text
	}
	l.truncated = true
	return cut(text, l.max)
}

// cut returns the longest prefix of s of at most n bytes that does not end
// inside a character.
func cut(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Truncation is the line that ends a reply cut at the reply limit, such as
// "… output truncated (the agent printed more than 64 KiB)"; "" when the
// reply was whole.
func (o Outcome) Truncation() string {
	if !o.Truncated {
		return ""
	}
	return "… output truncated (the agent printed more than " + Size(o.ReplyLimit) + ")"
}

// Size shows a byte count as people read it: "64 KiB", "1 MiB", "1500 bytes".
func Size(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
