package stream

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge/core/render"
)

// waitingText replaces the placeholder while a permission prompt waits for
// an answer: the agent is not busy then, the person is.
const waitingText = "⏸ waiting for an answer to the permission request"

// thinkingTail bounds how much thinking text stays visible: reasoning can be
// long, and the answer is what matters.
const thinkingTail = 1200

// thinkingKept is how much thinking text a reply keeps: only its tail is
// ever shown, so reasoning of any length costs no more memory than this
// (and twice it at most, between trims).
const thinkingKept = 8 << 10 // at least thinkingTail characters of 4 bytes, and the "…" before them

// keepTail trims b to its last n bytes (from a character's start) once it
// holds twice as many.
func keepTail(b *strings.Builder, n int) {
	if b.Len() <= 2*n {
		return
	}
	tail := b.String()
	tail = tail[len(tail)-n:]
	for tail != "" && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	b.Reset() // a new buffer: tail still reads the old one
	b.WriteString(tail)
}

func joinBlocks(a, b string) string {
	var sb strings.Builder
	sb.WriteString(a)
	appendBlock(&sb, b)
	return sb.String()
}

// placeholderText returns what the placeholder should say after elapsed
// ("" for nothing: none is due, or a prompt is open (waiting) and none is
// shown yet) and the elapsed time at which that changes next (0: only on a
// change).
func placeholderText(o *Options, elapsed time.Duration, shown, waiting bool) (string, time.Duration) {
	delay, beat := o.PlaceholderDelay, o.Heartbeat
	if delay <= 0 {
		return "", 0
	}
	switch {
	case waiting && shown:
		return waitingText, 0
	case waiting:
		return "", 0
	case elapsed < delay:
		return "", delay
	}
	beats := elapsed.Truncate(beat)
	if beats == 0 {
		return o.Placeholder, beat
	}
	return o.Placeholder + " (" + clock(beats) + ")", beats + beat
}

// quietText is the line under a streamed reply whose agent has shown
// nothing new for a Heartbeat or more.
const quietText = "⏳ still working…"

// quietLine returns the line that ends the reply while the agent has shown
// nothing new since since for a heartbeat beat or more ("" before that, or
// while a permission prompt is open (waiting): the prompt shows what the
// turn waits for), and when it changes next (zero: only on a change).
func quietLine(beat time.Duration, now, since time.Time, waiting bool) (string, time.Time) {
	if waiting || since.IsZero() {
		return "", time.Time{}
	}
	q := now.Sub(since).Truncate(beat)
	if q < beat {
		return "", since.Add(beat)
	}
	return quietText + " (" + clock(q) + ")", since.Add(q + beat)
}

// earliest is the earlier of two times, ignoring zero ones.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}

// clock shows a whole number of seconds as "40 s" or "2 min 20 s".
func clock(d time.Duration) string {
	sec := int(d / time.Second)
	if sec < 60 {
		return fmt.Sprintf("%d s", sec)
	}
	if sec%60 == 0 {
		return fmt.Sprintf("%d min", sec/60)
	}
	return fmt.Sprintf("%d min %d s", sec/60, sec%60)
}

// window is the part of the output a group of messages shows: output[from:to]
// (to < 0: to the end). A reply moves to a new group of messages when its
// messages get too old to edit (Limits.EditWindow).
type window struct {
	from, to int
	// lead is the code fence line output[from] is inside of, if any: the
	// group's Markdown starts with it, so a continued code block stays
	// one (with its indentation) in the next message.
	lead string
	// later: not the reply's first group (thinking shows in the first
	// only). afterFile: the group follows a file (files.go): no
	// placeholder, and nothing to say when it stays empty. notes are
	// Markdown lines the group starts with (a file that could not be sent).
	// beforeFile: the group closes (at to) where a file comes.
	later, afterFile, beforeFile bool
	notes                        string
}

// compose builds the Markdown source of the group of messages showing w
// as v stands, and returns the final parts it shows (none while
// streaming) and the output offset it shows up to. The final parts (error,
// notice, footer) belong to the open-ended last group only.
func compose(v *view, showThinking bool, w window) (md string, final *Final, end int) {
	var b strings.Builder
	if w.from == 0 && !w.later && showThinking && v.thinking != "" {
		b.WriteString(quote(v.thinking))
	}
	out := v.output
	to := len(out)
	if w.to >= 0 {
		to = w.to
	}
	body := out[w.from:to]
	if w.lead != "" && body != "" {
		body = w.lead + "\n" + body
	}
	body = joinBlocks(w.notes, body)
	final = v.final
	if w.to >= 0 {
		final = nil // a closing group gets no final parts
	} else if final != nil && final.Reply != "" {
		// Reply is the agent's answer when it streamed none of it, so any
		// output here is the bridge's own notes: the answer follows them.
		body = joinBlocks(body, final.Reply)
	}
	appendBlock(&b, body)
	if final != nil {
		appendBlock(&b, ending(final, b.Len() == 0 && w.from == 0 && !w.later))
	}
	return b.String(), final, to
}

// ending is the Markdown that closes a reply: the error, the notice, a
// word when there was no reply at all, and the footer.
func ending(f *Final, empty bool) string {
	var b strings.Builder
	if f.Error != "" {
		appendBlock(&b, "⚠️ **Error:** "+render.EscapeMarkdown(f.Error))
	}
	if f.Notice != "" {
		appendBlock(&b, "_"+render.EscapeMarkdown(f.Notice)+"_")
	}
	if empty && b.Len() == 0 {
		appendBlock(&b, "_(the agent finished without a reply)_")
	}
	if f.Footer != "" {
		appendBlock(&b, "_"+render.EscapeMarkdown(f.Footer)+"_")
	}
	return b.String()
}

// keepCut returns where a group showing out[from:shown] closes so that
// its message keeps the text it shows: at shown when that is a word
// boundary, else before the word it showed only in part, which moves to
// the next message whole (a complete word never leaves a message).
func keepCut(out string, from, shown int) int {
	if shown >= len(out) || isSpace(out[shown]) || isSpace(out[shown-1]) {
		return shown
	}
	if i := strings.LastIndexAny(out[from:shown], " \t\n"); i >= 0 {
		return from + i + 1
	}
	return shown
}

// wordEnd returns where the word out[at] is inside of ends, when out[at-1]
// and out[at] are both in it and something follows it; else -1.
func wordEnd(out string, at int) int {
	if at <= 0 || at >= len(out) || isSpace(out[at]) || isSpace(out[at-1]) {
		return -1
	}
	if i := strings.IndexAny(out[at:], " \t\n"); i >= 0 {
		return at + i
	}
	return -1 // the word may go on
}

// headingTail returns where the line that ends out[from:to] starts when
// it is an ATX heading (trailing blank lines aside) outside any code fence
// and something comes before it, else -1.
func headingTail(out string, from, to int) int {
	end := from + len(strings.TrimRight(out[from:to], " \t\n"))
	if end <= from {
		return -1
	}
	start := from + strings.LastIndexByte(out[from:end], '\n') + 1
	if start == from || fenceAt(out, start) != "" {
		return -1
	}
	line := strings.TrimLeft(out[start:end], " ")
	if end-start-len(line) > 3 {
		return -1 // indented four or more: code, not a heading
	}
	level := len(line) - len(strings.TrimLeft(line, "#"))
	if level < 1 || level > 6 || len(line) > level && line[level] != ' ' && line[level] != '\t' {
		return -1
	}
	return start
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' }

// isFence reports whether line opens or closes a code fence.
func isFence(line string) bool {
	trimmed := strings.TrimLeft(line, " ")
	return strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")
}

// fenceAt returns the opening line of the code fence out[at] is inside of
// ("```go"), or "" outside any fence.
func fenceAt(out string, at int) string {
	open := ""
	pos := 0
	for pos < at {
		end := strings.IndexByte(out[pos:], '\n')
		if end < 0 || pos+end >= at {
			break // the line at is in is not complete: it cannot open or close
		}
		line := out[pos : pos+end]
		if isFence(line) {
			if open == "" {
				open = line
			} else {
				open = ""
			}
		}
		pos += end + 1
	}
	return open
}

// blockCut returns the end of the last complete top-level block in
// out[from:] — just after a blank line outside any code fence — or -1.
func blockCut(out string, from int) int {
	cut, fenced := -1, false
	pos := from
	for pos < len(out) {
		end := strings.IndexByte(out[pos:], '\n')
		if end < 0 {
			break
		}
		line := out[pos : pos+end]
		next := pos + end + 1
		if isFence(line) {
			fenced = !fenced
		}
		if !fenced && strings.TrimSpace(line) == "" && next-from > 1 {
			cut = next
		}
		pos = next
	}
	return cut
}

func appendBlock(b *strings.Builder, block string) {
	if strings.TrimSpace(block) == "" {
		return
	}
	if b.Len() > 0 {
		b.WriteString("\n\n")
	}
	b.WriteString(block)
}

// quote shows the tail of the thinking text as a Markdown block quote.
func quote(thinking string) string {
	thinking = strings.TrimSpace(thinking)
	if r := []rune(thinking); len(r) > thinkingTail {
		thinking = "…" + string(r[len(r)-thinkingTail:])
	}
	return render.QuoteMarkdown("💭 " + thinking)
}
