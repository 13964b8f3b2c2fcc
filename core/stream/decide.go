package stream

import (
	"time"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/render"
)

// settings are what a reply's presentation does not change.
type settings struct {
	lim   core.Limits
	opts  Options
	start time.Time // when the turn began: the placeholder counts from it
}

// view is the turn as it stands at one instant: what the decision reads
// besides the reply's own state.
type view struct {
	output, thinking string
	final            *Final
	waiting          bool      // a permission prompt is open
	lastVisible      time.Time // when the last partial that changes what the reply shows arrived
	now              time.Time
}

// reply is what a reply's messages show: the state the decision of what
// to send next reads, updated from the platform's answers by record.
type reply struct {
	sent        []sentMsg // the current group's messages
	placeholder bool      // sent[0] holds only the placeholder
	plain       bool      // pieces are plain text (the platform's dialect, or it rejected the markup)
	maxText     int       // the length pieces are split at
	win         window    // the part of the output the current group shows
	groupStart  time.Time // when the group's first message was sent
	replied     bool      // a message carrying Options.ReplyTo is on the platform
	finalized   int       // sent[:finalized] were finalized (core.MessageFinalizer)
	shownTo     int       // the output offset the group's last message shows up to,
	shownLen    int       // in a piece this long (render.Length, without the quiet line)
}

// sentMsg is what the platform shows for one message of the reply.
type sentMsg struct {
	ref   core.MessageRef
	text  string
	plain bool
}

func newReply(lim core.Limits, from int) reply {
	r := reply{plain: lim.Dialect == render.Plain, maxText: lim.MaxText, win: window{from: from, to: -1}}
	if r.maxText <= 0 {
		r.maxText = 4000
	}
	return r
}

// actionKind is what the presenter does next.
type actionKind int

const (
	idle      actionKind = iota // nothing to send: wait for a change, or until action.until
	write                       // post or edit a message of the group
	nextGroup                   // the closing group shows its part: go on in the next one
	finish                      // the final text is shown: the reply is done
)

// action is the decision of what to do next.
type action struct {
	kind actionKind
	// finalize are messages whose text is final, for the platform to
	// hear of first (core.MessageFinalizer).
	finalize []sentMsg
	until    time.Time // idle: when something is due (zero: only on a change)

	// write:
	idx         int       // the group's message
	send        bool      // a new message (else an edit of sent[idx])
	post        core.Post // what it shows; PriorityFinal only with the final text
	placeholder bool      // it shows only the placeholder
	// to: the output offset the post shows up to, in a piece pieceLen
	// long (without the quiet line), when it goes to the group's last
	// message (-1: not known).
	to, pieceLen int
}

// frame is the current group's text as it should stand.
type frame struct {
	want  []string // the pieces, one a message
	final *Final   // the final parts the group shows (none while streaming, nor in a closing group)
	// beforeFile: the group closes where a file comes; its text is final.
	beforeFile bool
	to         int // the output offset the group shows up to
	pieceLen   int // render.Length of want's last piece, before the quiet line
}

// decide says what to do next for reply r in view v, and returns the
// state to go on from. It does no I/O and reads no clock: r, c and v are
// all it knows.
func decide(r reply, c *settings, v view) (reply, action) {
	r.closeAged(c, &v)
	f := r.frame(c, &v)
	if cut := r.freeze(c, &v, f.want); cut >= 0 {
		r.win.to = cut
		f = r.frame(c, &v)
	}
	quietDue := r.quiet(c, &v, &f)
	if idx := r.firstDiff(f.want); idx >= 0 {
		return r, r.writePiece(c, &v, idx, &f)
	}
	var placeholderDue time.Time
	if f.final == nil && len(f.want) == 0 && (len(r.sent) == 0 || r.placeholder) && r.win.to < 0 && !r.win.afterFile {
		text, due := placeholderText(&c.opts, v.now.Sub(c.start), len(r.sent) > 0, v.waiting)
		if due > 0 {
			placeholderDue = c.start.Add(due)
		}
		if text != "" && (len(r.sent) == 0 || r.sent[0].text != text) {
			a := action{kind: write, send: len(r.sent) == 0, placeholder: true, to: -1,
				post: core.Post{Text: text, Plain: true, Priority: core.PriorityInterim}}
			if a.send && !r.replied {
				a.post.ReplyTo = c.opts.ReplyTo
			}
			return r, a
		}
	}
	switch {
	case r.win.to >= 0:
		// The closing group shows its part: open the next group.
		next := reply{plain: r.plain, maxText: r.maxText, replied: r.replied,
			win: window{from: r.win.to, to: -1, lead: fenceAt(v.output, r.win.to), later: true}}
		return next, action{kind: nextGroup, finalize: r.sent[r.finalized:]}
	case f.final != nil:
		return r, action{kind: finish, finalize: r.sent[r.finalized:]}
	}
	return r, action{kind: idle, until: earliest(placeholderDue, quietDue)}
}

// closeAged closes the group at a block boundary when its messages will
// soon be too old to edit (Limits.EditWindow): the reply continues in new
// messages. Not once the final text is known: it goes at once, well
// within the margin, and its ending stays with the text it ends rather
// than alone in a new message.
func (r *reply) closeAged(c *settings, v *view) {
	w := c.lim.EditWindow
	if w <= 0 || r.win.to >= 0 || len(r.sent) == 0 || r.placeholder || v.final != nil ||
		v.now.Sub(r.groupStart) <= w-editMargin(w) {
		return
	}
	if cut := blockCut(v.output, r.win.from); cut > r.win.from {
		r.win.to = cut
	} else {
		r.groupStart = v.now // nowhere to cut yet; look again later
	}
}

// editMargin is how long before the edit window closes a group is closed:
// time for the closing edit even under rate limits.
func editMargin(window time.Duration) time.Duration {
	return min(max(window/12, time.Second), 5*time.Minute)
}

func (r *reply) dialect(c *settings) render.Dialect {
	if r.plain {
		return render.Plain
	}
	return c.lim.Dialect
}

// frame composes and splits the group's text.
func (r *reply) frame(c *settings, v *view) frame {
	md, final, to := compose(v, c.opts.ShowThinking, r.win)
	if cut := headingTail(v.output, r.win.from, to); final == nil && cut >= 0 {
		// A heading the agent has just written waits for its block: a
		// frame that ends with it would let the message that shows it
		// be kept as shown, the heading parted from what it heads.
		if held, _, _ := compose(v, c.opts.ShowThinking, window{from: r.win.from, to: cut, lead: r.win.lead}); held != "" {
			md, to = held, cut
		}
	}
	f := frame{final: final, to: to, beforeFile: r.win.beforeFile}
	if md != "" {
		f.want = render.Split(md, r.dialect(c), r.maxText)
		f.pieceLen = render.Length(f.want[len(f.want)-1])
	}
	return f
}

// freeze returns where to close the group so that its messages stay as
// they are shown, or -1 when there is no need: when the reply outgrew its
// last message and the splitter would now cut that message shorter than
// it is shown, moving text the user read into the next one, or would cut
// an earlier message (finalized, its text final) anew. The reply goes on
// in new messages.
func (r *reply) freeze(c *settings, v *view, want []string) int {
	k := len(r.sent) - 1
	if r.win.to >= 0 || k < 0 || r.placeholder || r.shownTo <= r.win.from {
		return -1
	}
	shorter := len(want) > len(r.sent) && render.Length(want[k]) < r.shownLen
	i := r.firstDiff(want)
	recut := i >= 0 && i < k && r.sent[i].plain == r.plain // not a resend as plain text
	if !shorter && !recut {
		return -1
	}
	// Where the last message showed a word in part, it completes the word
	// if that keeps every message as shown, else it leaves the word to the
	// next message whole; failing both, the group ends where it showed.
	back := keepCut(v.output, r.win.from, r.shownTo)
	for _, cut := range []int{wordEnd(v.output, r.shownTo), back, r.shownTo} {
		if cut > r.win.from && r.keeps(c, v, cut) {
			return cut
		}
	}
	if back > r.win.from {
		return back
	}
	return -1
}

// keeps reports whether the group closed at cut shows its messages but the
// last as they are shown, and no more messages.
func (r *reply) keeps(c *settings, v *view, cut int) bool {
	md, _, _ := compose(v, c.opts.ShowThinking, window{from: r.win.from, to: cut, lead: r.win.lead})
	p := render.Split(md, r.dialect(c), r.maxText)
	if len(p) != len(r.sent) {
		return false
	}
	for i := range len(p) - 1 {
		if p[i] != r.sent[i].text || r.sent[i].plain != r.plain {
			return false
		}
	}
	return true
}

// quiet ends the group's last piece with the quiet line, where it fits,
// while the agent has shown nothing new for a while, and returns when that
// line changes next.
func (r *reply) quiet(c *settings, v *view, f *frame) time.Time {
	if f.final != nil || r.win.to >= 0 || len(f.want) == 0 {
		return time.Time{}
	}
	line, due := quietLine(c.opts.Heartbeat, v.now, v.lastVisible, v.waiting)
	if line == "" {
		return due
	}
	if !r.plain {
		line = render.Render("_"+render.EscapeMarkdown(line)+"_", r.dialect(c))
	}
	if last := len(f.want) - 1; render.Length(f.want[last])+2+render.Length(line) <= r.maxText {
		f.want[last] += "\n\n" + line
	}
	return due
}

// firstDiff returns the first piece that differs from what the platform
// shows, or -1.
func (r *reply) firstDiff(want []string) int {
	for i, text := range want {
		if i >= len(r.sent) || r.sent[i].text != text || r.sent[i].plain != r.plain {
			return i
		}
	}
	return -1
}

// piecePriority is what piece idx of f is to the adapters: final text
// once the reply ended or when a file follows the group, else a full piece when more follows it, else an
// interim frame.
func piecePriority(f *frame, idx int) core.Priority {
	switch {
	case f.final != nil, f.beforeFile:
		return core.PriorityFinal
	case idx < len(f.want)-1:
		return core.PriorityFull
	}
	return core.PriorityInterim
}

// writePiece is the write of piece idx of f.
func (r *reply) writePiece(c *settings, v *view, idx int, f *frame) action {
	// A piece with more after it is full, its text final (freeze keeps
	// it as shown): a Telegram draft showing it becomes a real message
	// with this one call, not a draft update and then the message.
	a := action{kind: write, idx: idx, send: idx >= len(r.sent),
		post: core.Post{Text: f.want[idx], Plain: r.plain, Priority: piecePriority(f, idx)}}
	if a.send && len(r.sent) == 0 && !r.replied {
		a.post.ReplyTo = c.opts.ReplyTo
	}
	if a.send && idx > r.finalized {
		// The messages before this one show full pieces (the splitter
		// fills every piece but the last; freeze keeps them as shown):
		// their text is final, so a Telegram draft becomes a real
		// message now, not at the end.
		a.finalize = r.sent[r.finalized:idx]
		r.finalized = idx
	}
	switch {
	case idx == len(f.want)-1:
		a.to, a.pieceLen = f.to, f.pieceLen
	case idx >= len(r.sent)-1:
		// A full piece with more to follow goes to the group's last
		// message (a burst of output): where it ends keeps the freeze
		// about this message, not an earlier one.
		a.to, a.pieceLen = r.pieceEnd(c, v, idx, f.want[idx], f.to)
	default:
		a.to = -1
	}
	return a
}

// pieceEnd returns the output offset the group's pieces through piece idx
// (which is piece) show the output up to, and piece's length: the longest
// prefix of output[win.from:to] that splits into idx+1 pieces, the last no
// longer than piece, when that split ends in piece. Otherwise (piece holds
// final parts, not output) it returns (win.from, 0): nothing known, no
// freeze for this message. A binary search of splits, but only for a
// burst of output that fills a message and goes on.
func (r *reply) pieceEnd(c *settings, v *view, idx int, piece string, to int) (int, int) {
	split := func(end int) []string {
		md, _, _ := compose(v, c.opts.ShowThinking, window{from: r.win.from, to: end, lead: r.win.lead})
		return render.Split(md, r.dialect(c), r.maxText)
	}
	lo, hi := r.win.from, to
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		if p := split(mid); len(p) < idx+1 || len(p) == idx+1 && render.Length(p[idx]) <= render.Length(piece) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	for lo > r.win.from && lo < len(v.output) && !utf8.RuneStart(v.output[lo]) {
		lo-- // never inside a character
	}
	if p := split(lo); len(p) == idx+1 && p[idx] == piece {
		return lo, render.Length(piece)
	}
	return r.win.from, 0
}

// record updates r after write a, made at now, ended as o; ref names the
// message a send created. It returns the message as the platform now shows
// it and whether it is the reply's last one (the one the journal follows).
func (r *reply) record(a *action, ref core.MessageRef, o outcome, now time.Time) (sentMsg, bool) {
	if o.reached && r.groupStart.IsZero() {
		r.groupStart = now
	}
	switch o.kind {
	case shown:
		r.replied = r.replied || a.send
		m := sentMsg{ref: ref, text: a.post.Text, plain: a.post.Plain}
		if a.send {
			r.sent = append(r.sent, m)
		} else {
			r.sent[a.idx] = m
		}
		r.placeholder = a.placeholder
		if a.idx != len(r.sent)-1 {
			return m, false
		}
		if !a.placeholder && a.to >= 0 {
			r.shownTo, r.shownLen = a.to, a.pieceLen
		}
		return m, true
	case plain:
		r.plain = true
	case smaller:
		r.maxText = r.maxText * 3 / 4
	case gone:
		// The message was deleted: continue the reply in new messages.
		r.sent = r.sent[:a.idx]
		r.finalized = min(r.finalized, a.idx)
	}
	return sentMsg{}, false
}
