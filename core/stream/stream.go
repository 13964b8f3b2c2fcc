// Package stream presents one streamed agent reply on a chat platform. A
// Presenter owns the reply: it posts when the first output arrives (or a
// placeholder after a delay), edits at most at the platform's cadence while
// coalescing partials so only the latest text is sent, waits out rate limits
// and skips stale frames, continues in follow-up messages past the
// platform's length limit, and always delivers the final text, retrying with
// backoff until its context ends.
package stream

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/pause"
	"github.com/agentbridge/agentbridge/core/render"
)

// Options tune a Presenter.
type Options struct {
	// PlaceholderDelay is how long to wait for output before posting
	// Placeholder; 0 disables the placeholder.
	PlaceholderDelay time.Duration
	// Placeholder is the text shown while the agent has produced nothing;
	// default "thinking…". Every Heartbeat the placeholder is edited to show
	// how long the turn has run ("thinking… (40 s)"), so a long silence
	// still looks alive.
	Placeholder string
	// Heartbeat is how often a placeholder is edited with the elapsed time;
	// default 20 s, a few edits a minute, next to nothing of any platform's
	// budget.
	Heartbeat time.Duration
	// ShowThinking shows the agent's "thinking" partials in a quote above the
	// answer; otherwise they are hidden.
	ShowThinking bool
	// MinEditInterval is a floor on top of the platform's edit cadence.
	MinEditInterval time.Duration
	// OnShow, if set, is called from the presenter's goroutine each time
	// the reply's last message is posted or edited, with what it now shows
	// and whether that is only the placeholder, so the caller can journal
	// it. It must return quickly.
	OnShow func(shown core.Shown, placeholder bool)
	// ReplyTo is the id of the message being answered; the reply's first
	// message carries it (core.Post.ReplyTo), its continuations do not.
	ReplyTo string
	Log     *slog.Logger
}

// Final is how a turn ended, for the last edit.
type Final struct {
	Reply  string // Markdown body the agent did not stream; shown after any streamed text
	Error  string // the agent's error, shown after the streamed text
	Notice string // plain words about how the turn ended, e.g. "Stopped."
	Footer string // e.g. token usage
}

// Role names for Partial.
const (
	RoleOutput   = "output"
	RoleThinking = "thinking"
)

// waitingText replaces the placeholder while a permission prompt waits for
// an answer: the agent is not busy then, the person is.
const waitingText = "⏸ waiting for an answer to the permission request"

// defaultHeartbeat is Options.Heartbeat's default.
const defaultHeartbeat = 20 * time.Second

// thinkingTail bounds how much thinking text stays visible: reasoning can be
// long, and the answer is what matters.
const thinkingTail = 1200

// Presenter streams one reply. Partial may be called from any goroutine;
// Finish once, at the end.
type Presenter struct {
	plat core.Platform
	conv core.ConversationKey
	lim  core.Limits
	opts Options
	log  *slog.Logger

	mu       sync.Mutex
	output   strings.Builder
	thinking strings.Builder
	final    *Final
	prompts  int             // permission prompts open (Prompt)
	flushes  []chan struct{} // Flush callers waiting for the platform to catch up
	// lastVisible is when the last partial that changes what the reply
	// shows arrived, for the quiet line.
	lastVisible time.Time

	wake chan struct{} // capacity 1: a pending "something changed"
	fin  chan struct{} // closed by Finish
	done chan struct{} // closed when the loop returns
	err  error         // the loop's result, read after done
}

// Start begins presenting a reply in conv. ctx bounds every platform call,
// including the final delivery: give it a lifetime that outlasts the turn
// (a stopped turn still needs its "stopped" edit).
func Start(ctx context.Context, p core.Platform, conv core.ConversationKey, opts Options) *Presenter {
	if opts.Placeholder == "" {
		opts.Placeholder = "thinking…"
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = defaultHeartbeat
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Presenter{
		plat: p, conv: conv, lim: p.Limits(), opts: opts, log: log,
		wake: make(chan struct{}, 1),
		fin:  make(chan struct{}),
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		s.err = s.loop(ctx)
	}()
	return s
}

// Partial adds streamed text. role is RoleOutput or RoleThinking; other
// roles are shown as output, since the protocol says they must be forwarded.
func (s *Presenter) Partial(role, text string) {
	if text == "" {
		return
	}
	s.mu.Lock()
	if role == RoleThinking {
		s.thinking.WriteString(text)
	} else {
		s.output.WriteString(text)
	}
	if role != RoleThinking || s.opts.ShowThinking {
		s.lastVisible = time.Now()
	}
	s.mu.Unlock()
	s.poke()
}

// Flush waits until the platform shows all the text added so far (the
// loop has nothing left to send), or ctx ends, or the presenter is done:
// for a message that must come after that text, such as a permission
// prompt the agent asked for after saying what it wants to do.
func (s *Presenter) Flush(ctx context.Context) {
	ch := make(chan struct{})
	s.mu.Lock()
	s.flushes = append(s.flushes, ch)
	s.mu.Unlock()
	s.poke()
	select {
	case <-ch:
	case <-s.done:
	case <-ctx.Done():
	}
}

// caughtUp releases the Flush callers: everything added before they called
// is on the platform.
func (s *Presenter) caughtUp() {
	s.mu.Lock()
	waiting := s.flushes
	s.flushes = nil
	s.mu.Unlock()
	for _, ch := range waiting {
		close(ch)
	}
}

// Prompt notes a permission prompt of this turn opening (open) or closing.
// While one is open no placeholder is posted, and one already shown says
// the turn waits for an answer instead of "thinking…".
func (s *Presenter) Prompt(open bool) {
	s.mu.Lock()
	if open {
		s.prompts++
	} else if s.prompts > 0 {
		s.prompts--
	}
	s.mu.Unlock()
	s.poke()
}

// Finish sets how the turn ended and waits until the final text is
// delivered or the context given to Start ends. It returns an error only if
// the final text could not be delivered.
func (s *Presenter) Finish(f Final) error {
	s.mu.Lock()
	s.final = &f
	s.mu.Unlock()
	close(s.fin)
	s.poke()
	<-s.done
	return s.err
}

func (s *Presenter) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// sentMsg is what the platform shows for one message of the reply.
type sentMsg struct {
	ref   core.MessageRef
	text  string
	plain bool
}

// loop runs until the final text is on the platform or ctx ends.
func (s *Presenter) loop(ctx context.Context) error {
	var (
		sent        []sentMsg
		placeholder bool // sent[0] holds only the placeholder
		plainMode   = s.lim.Dialect == render.Plain
		maxText     = s.lim.MaxText
		interval    = max(s.lim.EditInterval, s.opts.MinEditInterval)
		pace        = newPacer(interval)
		start       = time.Now()
		win         = window{to: -1}
		groupStart  time.Time // when the current group's first message was sent
		replied     bool      // a message carrying opts.ReplyTo is on the platform
		finalized   int       // sent[:finalized] were finalized (core.MessageFinalizer)
		shownTo     int       // the output offset the group's last message shows up to,
		shownLen    int       // in a piece this long (render.Length, without the quiet line)
		pieceLen    int       // render.Length of want's last piece, without the quiet line
	)
	if maxText <= 0 {
		maxText = 4000
	}
	if st, ok := s.plat.(core.Streamer); ok {
		from, done, err := s.native(ctx, st, interval, start)
		if done || err != nil {
			return err
		}
		// No native stream here, or it broke off: post the rest.
		win.from = from
	}
	for {
		if s.lim.EditWindow > 0 && win.to < 0 && len(sent) > 0 && !placeholder &&
			time.Since(groupStart) > s.lim.EditWindow-editMargin(s.lim.EditWindow) {
			// The group's messages will soon be too old to edit: close it at
			// a block boundary and continue in new messages.
			s.mu.Lock()
			cut := blockCut(s.output.String(), win.from)
			s.mu.Unlock()
			if cut > win.from {
				win.to = cut
			} else {
				groupStart = time.Now() // nowhere to cut yet; look again later
			}
		}
		md, final, composedTo := s.compose(win)
		dialect := s.lim.Dialect
		if plainMode {
			dialect = render.Plain
		}
		var want []string
		if md != "" {
			want = render.Split(md, dialect, maxText)
		}
		if k := len(sent) - 1; win.to < 0 && len(want) > len(sent) && k >= 0 && !placeholder && shownTo > win.from &&
			render.Length(want[k]) < shownLen {
			// The reply outgrew its last message, and the splitter would
			// now cut that message shorter than it is shown, moving text
			// the user read into the next one: keep the messages as they
			// are shown and go on in new ones.
			s.mu.Lock()
			out := s.output.String()
			s.mu.Unlock()
			if cut := keepCut(out, win.from, shownTo); cut > win.from {
				win.to = cut
				continue
			}
		}
		var quietDue time.Time // when the quiet line changes next
		if len(want) > 0 {
			pieceLen = render.Length(want[len(want)-1])
		}
		if final == nil && win.to < 0 && len(want) > 0 {
			var line string
			line, quietDue = s.quiet(time.Now())
			last := len(want) - 1
			if line != "" {
				if !plainMode {
					line = render.Render("_"+render.EscapeMarkdown(line)+"_", dialect)
				}
				if render.Length(want[last])+2+render.Length(line) <= maxText {
					want[last] += "\n\n" + line
				}
			}
		}

		// Pick the first message that differs from what the platform shows.
		idx := -1
		for i, text := range want {
			if i >= len(sent) || sent[i].text != text || sent[i].plain != plainMode {
				idx = i
				break
			}
		}
		var (
			wantPlaceholder bool
			placeholderText string
			placeholderDue  time.Time // when the placeholder's text changes next
		)
		if idx < 0 && len(want) == 0 && final == nil && (len(sent) == 0 || placeholder) {
			text, due := s.placeholder(time.Since(start), len(sent) > 0)
			if due > 0 {
				placeholderDue = start.Add(due)
			}
			if text != "" && (len(sent) == 0 || sent[0].text != text) {
				wantPlaceholder, placeholderText = true, text
			}
		}

		if idx < 0 && !wantPlaceholder {
			if win.to >= 0 {
				// The closing group shows its part: open the next group.
				s.finalize(ctx, sent[finalized:])
				s.mu.Lock()
				lead := fenceAt(s.output.String(), win.to)
				s.mu.Unlock()
				win, sent, groupStart, finalized, shownTo, shownLen = window{from: win.to, to: -1, lead: lead}, nil, time.Time{}, 0, 0, 0
				continue
			}
			if final != nil {
				s.finalize(ctx, sent[finalized:])
				return nil
			}
			// Nothing to do until something changes (or the placeholder is due).
			s.caughtUp()
			if err := s.idleUntil(ctx, earliest(placeholderDue, quietDue)); err != nil {
				return fmt.Errorf("present reply in %s: %w", s.conv, err)
			}
			continue
		}

		// Respect the cadence and any rate limit. New partials arriving
		// meanwhile are coalesced: the text is recomputed after the wait.
		if d := time.Until(pace.next(final != nil)); d > 0 {
			if err := s.pauseUntilFinal(ctx, d, final == nil); err != nil {
				return fmt.Errorf("present reply in %s: %w", s.conv, err)
			}
			continue
		}

		var (
			post   core.Post
			err    error
			isSend bool
		)
		switch {
		case wantPlaceholder:
			post = core.Post{Text: placeholderText, Plain: true, Interim: true}
			isSend = len(sent) == 0
			idx = 0
		default:
			post = core.Post{Text: want[idx], Plain: plainMode, Interim: final == nil}
			isSend = idx >= len(sent)
		}
		var ref core.MessageRef
		if isSend {
			if len(sent) == 0 && !replied {
				post.ReplyTo = s.opts.ReplyTo
			}
			if idx > finalized && !wantPlaceholder {
				// The messages before this one show their full pieces
				// (Split packs greedily): their text is final, so a
				// Telegram draft becomes a real message now, not at the end.
				s.finalize(ctx, sent[finalized:idx])
				finalized = idx
			}
			ref, err = s.plat.Send(ctx, s.conv, post)
		} else {
			ref = sent[idx].ref
			err = s.plat.Edit(ctx, ref, post)
		}
		o := classify(err, attempt{edit: !isSend, interim: post.Interim, plain: plainMode, maxText: maxText}, ctx.Err())
		now := time.Now()
		if o.kind == failed {
			s.log.LogAttrs(ctx, slog.LevelWarn, "reply delivery failed; retrying", slog.Any("conv", s.conv), slog.Duration("backoff", pace.backoff), slog.Any("err", err))
		}
		pace.record(now, o)
		if o.reached && groupStart.IsZero() {
			groupStart = now
		}

		switch o.kind {
		case shown:
			replied = replied || isSend
			m := sentMsg{ref: ref, text: post.Text, plain: post.Plain}
			if isSend {
				sent = append(sent, m)
			} else {
				sent[idx] = m
			}
			placeholder = wantPlaceholder
			if idx == len(sent)-1 {
				s.show(m, placeholder)
				if !placeholder && idx == len(want)-1 {
					// It shows the whole text composed (not a piece of it).
					shownTo, shownLen = composedTo, pieceLen
				}
			}
		case wait:
			// The adapter's budget saying when this reply's turn comes is
			// not worth a warning.
			if !o.turn {
				s.log.LogAttrs(ctx, slog.LevelWarn, "reply rate limited", slog.Any("conv", s.conv), slog.Duration("retry_after", o.after))
			}
		case plain:
			s.log.LogAttrs(ctx, slog.LevelWarn, "platform rejected markup; resending as plain text", slog.Any("conv", s.conv), slog.Any("err", err))
			plainMode = true
		case smaller:
			maxText = maxText * 3 / 4
			s.log.LogAttrs(ctx, slog.LevelWarn, "platform said message too long; splitting smaller", slog.Any("conv", s.conv), slog.Int("max_text", maxText))
		case gone:
			// The message was deleted: continue the reply in new messages.
			s.log.LogAttrs(ctx, slog.LevelWarn, "reply message gone; reposting", slog.Any("conv", s.conv))
			sent = sent[:idx]
			finalized = min(finalized, idx)
		case ended:
			return fmt.Errorf("present reply in %s: %w", s.conv, context.Cause(ctx))
		}
	}
}

// native streams the reply through the platform's own stream (the agent's
// output only: thinking is not shown there). It reports
// done once the whole reply went that way; otherwise the output from
// offset from on still has to be posted: there is no native stream for
// this conversation (from is 0), or the stream failed midway.
func (s *Presenter) native(ctx context.Context, st core.Streamer, interval time.Duration, start time.Time) (from int, done bool, err error) {
	// Open the stream with the first output: a turn that fails before
	// saying anything ends as an ordinary message, and one that is due its
	// "thinking…" placeholder first is posted and edited.
	for {
		out, final := s.snapshot()
		if out != "" {
			break
		}
		if final != nil || s.opts.PlaceholderDelay > 0 && time.Since(start) >= s.opts.PlaceholderDelay {
			return 0, false, nil
		}
		s.caughtUp()
		if err := s.idle(ctx, true, start); err != nil {
			return 0, false, fmt.Errorf("present reply in %s: %w", s.conv, err)
		}
	}
	stream, err := st.StartStream(ctx, s.conv)
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "native stream unavailable; posting and editing", slog.Any("conv", s.conv), slog.Any("err", err))
		return 0, false, nil
	}
	if stream == nil {
		return 0, false, nil
	}
	s.show(sentMsg{ref: stream.Ref()}, false)
	pace := newPacer(interval)
	appended := 0
	for {
		out, final := s.snapshot()
		delta := out[appended:]
		if delta == "" && final == nil {
			s.caughtUp()
			if err := s.idle(ctx, false, time.Time{}); err != nil {
				return appended, false, fmt.Errorf("present reply in %s: %w", s.conv, err)
			}
			continue
		}
		if d := time.Until(pace.next(final != nil)); d > 0 {
			// The stream's calls keep the cadence (core.Stream); only an
			// interim append's turn does not hold the end.
			if err := s.pauseUntilFinal(ctx, d, final == nil && pace.turnHolds()); err != nil {
				return appended, false, fmt.Errorf("present reply in %s: %w", s.conv, err)
			}
			continue
		}
		if final != nil {
			err = stream.Stop(ctx, joinBlocks(joinBlocks(delta, final.Reply), ending(final, false)))
		} else {
			err = stream.Append(ctx, delta)
		}
		o := classify(err, attempt{interim: final == nil}, ctx.Err())
		pace.record(time.Now(), o)
		if o.kind == wait {
			continue
		}
		if o.kind != shown {
			s.log.LogAttrs(ctx, slog.LevelWarn, "native stream failed; posting the rest", slog.Any("conv", s.conv), slog.Any("err", err))
			if final == nil {
				stream.Stop(ctx, "")
			}
			return appended, false, nil
		}
		if final != nil {
			s.finalize(ctx, []sentMsg{{ref: stream.Ref()}})
			return len(out), true, nil
		}
		appended = len(out)
		// What a later edit of the message would show, for the journal.
		s.show(sentMsg{ref: stream.Ref(), text: render.Render(out, s.lim.Dialect)}, false)
	}
}

// snapshot returns the output so far and the final state, if set.
func (s *Presenter) snapshot() (string, *Final) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.output.String(), s.final
}

func joinBlocks(a, b string) string {
	var sb strings.Builder
	sb.WriteString(a)
	appendBlock(&sb, b)
	return sb.String()
}

// finalize tells a core.MessageFinalizer that these messages' text is final.
func (s *Presenter) finalize(ctx context.Context, sent []sentMsg) {
	f, ok := s.plat.(core.MessageFinalizer)
	if !ok {
		return
	}
	for _, m := range sent {
		if err := f.FinalizeMessage(ctx, m.ref); err != nil {
			s.log.LogAttrs(ctx, slog.LevelWarn, "finalizing a reply message failed", slog.Any("conv", s.conv), slog.Any("err", err))
		}
	}
}

// pauseUntilFinal waits d (the cadence, or a turn in the platform's
// budget) without looking at new partials, which coalesce meanwhile. With
// interruptible (a wait for interim text) it ends early when the final
// text arrives, since that goes first.
func (s *Presenter) pauseUntilFinal(ctx context.Context, d time.Duration, interruptible bool) error {
	if !interruptible {
		return pause.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.fin:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	return nil
}

// idle waits for a change, or for the placeholder to fall due.
func (s *Presenter) idle(ctx context.Context, noneSent bool, start time.Time) error {
	var at time.Time
	if noneSent && s.opts.PlaceholderDelay > 0 {
		at = start.Add(s.opts.PlaceholderDelay)
	}
	return s.idleUntil(ctx, at)
}

// idleUntil waits for a change, or until at (the zero time: no limit).
func (s *Presenter) idleUntil(ctx context.Context, at time.Time) error {
	var due <-chan time.Time
	if !at.IsZero() {
		t := time.NewTimer(time.Until(at))
		defer t.Stop()
		due = t.C
	}
	select {
	case <-s.wake:
	case <-due:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	return nil
}

// editMargin is how long before the edit window closes a group is closed:
// time for the closing edit even under rate limits.
func editMargin(window time.Duration) time.Duration {
	return min(max(window/12, time.Second), 5*time.Minute)
}

func (s *Presenter) show(m sentMsg, placeholder bool) {
	if s.opts.OnShow != nil {
		s.opts.OnShow(core.Shown{Ref: m.ref, Text: m.text, Plain: m.plain}, placeholder)
	}
}

// placeholder returns what the placeholder should say after elapsed ("" for
// nothing: none is due, or a prompt is open and none is shown yet) and the
// elapsed time at which that changes next (0: only when poked).
func (s *Presenter) placeholder(elapsed time.Duration, shown bool) (string, time.Duration) {
	delay, beat := s.opts.PlaceholderDelay, s.opts.Heartbeat
	if delay <= 0 {
		return "", 0
	}
	s.mu.Lock()
	waiting := s.prompts > 0
	s.mu.Unlock()
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
		return s.opts.Placeholder, beat
	}
	return s.opts.Placeholder + " (" + clock(beats) + ")", beats + beat
}

// quietText is the line under a streamed reply whose agent has shown
// nothing new for a Heartbeat or more.
const quietText = "⏳ still working…"

// quiet returns the line that ends the reply while the agent has shown
// nothing new for a Heartbeat or more ("" before that, or while a
// permission prompt is open: the prompt shows what the turn waits for), and
// when it changes next (zero: only when poked).
func (s *Presenter) quiet(now time.Time) (string, time.Time) {
	s.mu.Lock()
	since, waiting := s.lastVisible, s.prompts > 0
	s.mu.Unlock()
	if waiting || since.IsZero() {
		return "", time.Time{}
	}
	beat := s.opts.Heartbeat
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
}

// compose builds the Markdown source of the reply's current group of
// messages as it stands. The final parts (error, notice, footer) belong to
// the open-ended last group only.
func (s *Presenter) compose(w window) (md string, final *Final, end int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	if w.from == 0 && s.opts.ShowThinking && s.thinking.Len() > 0 {
		b.WriteString(quote(s.thinking.String()))
	}
	out := s.output.String()
	to := len(out)
	if w.to >= 0 {
		to = w.to
	}
	body := out[w.from:to]
	if w.lead != "" && body != "" {
		body = w.lead + "\n" + body
	}
	final = s.final
	if w.to >= 0 {
		final = nil // a closing group gets no final parts
	} else if final != nil && final.Reply != "" {
		// Reply is the agent's answer when it streamed none of it, so any
		// output here is the bridge's own notes: the answer follows them.
		body = joinBlocks(body, final.Reply)
	}
	appendBlock(&b, body)
	if final != nil {
		appendBlock(&b, ending(final, b.Len() == 0 && w.from == 0))
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

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' }

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
		trimmed := strings.TrimLeft(line, " ")
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
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
		trimmed := strings.TrimLeft(line, " ")
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
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
