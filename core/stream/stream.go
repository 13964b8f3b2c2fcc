// Package stream presents one streamed agent reply on a chat platform. A
// Presenter owns the reply: it posts when the first output arrives (or a
// placeholder after a delay), edits at most at the platform's cadence while
// coalescing partials so only the latest text is sent, waits out rate limits
// and skips stale frames, continues in follow-up messages past the
// platform's length limit, and always delivers the final text, retrying with
// backoff until its context ends.
//
// Inside, loop drives three parts that each stand alone: decide (what to
// send next, from the reply's state and the turn as it stands; pure), the
// pacer (when the next write may go) and classify (what a platform call's
// error means). The native stream path shares the pacer and classify, and
// so do the turn's one-off writes (notices, permission prompts and their
// outcomes: outbox.go), which the Presenter orders with the reply's.
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
	// OnFile, if set, hears how each file (Presenter.File) went: err is
	// nil when the platform took it, ErrNoFiles when it takes no files.
	// Called from the presenter's goroutine; it must return quickly.
	OnFile func(f core.File, err error)
	// Log is where the presenter logs. It adds no attributes of its own:
	// the caller's logger carries the conversation and turn (the engine's
	// has them already, and a second conv on every line was noise).
	Log *slog.Logger
}

// Final is how a turn ended, for the last edit.
type Final struct {
	Reply  string // Markdown body the agent did not stream; shown after any streamed text
	Error  string // the agent's error, shown after the streamed text
	Notice string // plain words about how the turn ended, e.g. "Stopped."
	Footer string // e.g. token usage
}

// defaultHeartbeat is Options.Heartbeat's default.
const defaultHeartbeat = 20 * time.Second

// Presenter streams one reply. Partial may be called from any goroutine;
// Finish once, at the end.
type Presenter struct {
	plat core.Platform
	conv core.ConversationKey
	lim  core.Limits
	opts Options
	log  *slog.Logger

	// writing is held through every platform write of the turn, the
	// reply's and the one-off ones (outbox.go), so they go one at a time:
	// a prompt or a notice never races one of the reply's writes.
	writing sync.Mutex

	mu       sync.Mutex
	output   strings.Builder
	thinking strings.Builder
	final    *Final
	files    []pendingFile   // files not yet sent, in order (files.go)
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

// Partial adds streamed text. role is core.RoleOutput or core.RoleThinking; other
// roles are shown as output, since the protocol says they must be forwarded.
func (s *Presenter) Partial(role, text string) {
	if text == "" {
		return
	}
	s.mu.Lock()
	if role == core.RoleThinking {
		s.thinking.WriteString(text)
		keepTail(&s.thinking, thinkingKept)
	} else {
		s.output.WriteString(text)
	}
	if role != core.RoleThinking || s.opts.ShowThinking {
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

// view returns the turn as it stands at now.
func (s *Presenter) view(now time.Time) view {
	s.mu.Lock()
	defer s.mu.Unlock()
	return view{output: s.output.String(), thinking: s.thinking.String(), final: s.final,
		waiting: s.prompts > 0, lastVisible: s.lastVisible, now: now}
}

func (s *Presenter) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// loop runs until the final text is on the platform or ctx ends: it
// decides what to send next (decide), waits for the pacer, makes the
// platform call, classifies its result and records it.
func (s *Presenter) loop(ctx context.Context) error {
	start := time.Now()
	interval := max(s.lim.EditInterval, s.opts.MinEditInterval)
	r := newReply(s.lim, 0)
	if st, ok := s.plat.(core.Streamer); ok {
		from, done, err := s.native(ctx, st, interval, start)
		if done || err != nil {
			return err
		}
		// No native stream here, or it broke off: post the rest.
		r.win.from = from
	}
	c := settings{lim: s.lim, opts: s.opts, start: start}
	pace := newPacer(interval)
	for {
		if s.fileStep(ctx, &r) {
			continue
		}
		var a action
		r, a = decide(r, &c, s.view(time.Now()))
		s.finalize(ctx, a.finalize)
		switch a.kind {
		case finish:
			return nil
		case nextGroup:
			continue
		case idle:
			s.caughtUp()
			if err := s.idleUntil(ctx, a.until); err != nil {
				return fmt.Errorf("present reply in %s: %w", s.conv, err)
			}
			continue
		}

		// Respect the cadence and any rate limit. New partials arriving
		// meanwhile are coalesced: the text is decided anew after the wait.
		final := a.post.Priority == core.PriorityFinal
		if d := time.Until(pace.next(final)); d > 0 {
			if err := s.pauseUntilFinal(ctx, d, !final); err != nil {
				return fmt.Errorf("present reply in %s: %w", s.conv, err)
			}
			continue
		}
		var (
			ref core.MessageRef
			err error
		)
		s.writing.Lock()
		if a.send {
			ref, err = s.plat.Send(ctx, s.conv, a.post)
		} else {
			ref = r.sent[a.idx].ref
			err = s.plat.Edit(ctx, ref, a.post)
		}
		s.writing.Unlock()
		o := classify(err, attempt{edit: !a.send, interim: !final, plain: r.plain, maxText: r.maxText}, ctx.Err())
		now, backoff := time.Now(), pace.backoff
		pace.record(now, o)
		if m, last := r.record(&a, ref, o, now); last {
			s.show(m, r.placeholder)
		}
		if o.kind == ended {
			return fmt.Errorf("present reply in %s: %w", s.conv, context.Cause(ctx))
		}
		s.logOutcome(ctx, o, err, backoff, r.maxText)
	}
}

// logOutcome warns about a write that failed, except where the adapter's
// budget only said when this reply's turn comes.
func (s *Presenter) logOutcome(ctx context.Context, o outcome, err error, backoff time.Duration, maxText int) {
	var msg string
	var attrs []slog.Attr
	switch o.kind {
	case wait:
		if o.turn {
			return
		}
		msg, attrs = "reply rate limited", append(attrs, slog.Duration("retry_after", o.after))
	case plain:
		msg, attrs = "platform rejected markup; resending as plain text", append(attrs, slog.Any("err", err))
	case smaller:
		msg, attrs = "platform said message too long; splitting smaller", append(attrs, slog.Int("max_text", maxText))
	case gone:
		msg = "reply message gone; reposting"
	case failed:
		msg, attrs = "reply delivery failed; retrying", append(attrs, slog.Duration("backoff", backoff), slog.Any("err", err))
	default:
		return
	}
	s.log.LogAttrs(ctx, slog.LevelWarn, msg, attrs...)
}

// native streams the reply through the platform's own stream (the agent's
// output only: thinking is not shown there). It reports
// done once the whole reply went that way; otherwise the output from
// offset from on still has to be posted: there is no native stream for
// this conversation (from is 0), or the stream failed midway.
func (s *Presenter) native(ctx context.Context, st core.Streamer, interval time.Duration, start time.Time) (from int, done bool, err error) {
	stream, err := s.openNative(ctx, st, start)
	if stream == nil || err != nil {
		return 0, false, err
	}
	s.show(sentMsg{ref: stream.Ref()}, false)
	pace := newPacer(interval)
	appended := 0
	for {
		v := s.view(time.Now())
		out, final := v.output, v.final
		if pf, ok := s.nextFile(); ok {
			// A file ends the stream where it came; the rest is posted
			// after it (files.go).
			s.writing.Lock()
			err := stream.Stop(ctx, out[appended:pf.at])
			s.writing.Unlock()
			if err != nil {
				s.log.LogAttrs(ctx, slog.LevelWarn, "ending the native stream before a file failed", slog.Any("err", err))
				return appended, false, nil
			}
			s.finalize(ctx, []sentMsg{{ref: stream.Ref()}})
			return pf.at, false, nil
		}
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
		s.writing.Lock()
		if final != nil {
			err = stream.Stop(ctx, joinBlocks(joinBlocks(delta, final.Reply), ending(final, false)))
		} else {
			err = stream.Append(ctx, delta)
		}
		s.writing.Unlock()
		o := classify(err, attempt{interim: final == nil}, ctx.Err())
		pace.record(time.Now(), o)
		if o.kind == wait {
			continue
		}
		if o.kind != shown {
			s.log.LogAttrs(ctx, slog.LevelWarn, "native stream failed; posting the rest", slog.Any("err", err))
			if final == nil {
				s.writing.Lock()
				stream.Stop(ctx, "")
				s.writing.Unlock()
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

// openNative opens the native stream with the first output: a turn that
// fails before saying anything ends as an ordinary message, and one that
// is due its "thinking…" placeholder first is posted and edited. A nil
// Stream and no error: post and edit instead.
func (s *Presenter) openNative(ctx context.Context, st core.Streamer, start time.Time) (core.Stream, error) {
	for {
		v := s.view(time.Now())
		if _, file := s.nextFile(); file {
			return nil, nil // a file before any output: post and edit around it
		}
		if v.output != "" {
			break
		}
		if v.final != nil || s.opts.PlaceholderDelay > 0 && time.Since(start) >= s.opts.PlaceholderDelay {
			return nil, nil
		}
		s.caughtUp()
		if err := s.idle(ctx, true, start); err != nil {
			return nil, fmt.Errorf("present reply in %s: %w", s.conv, err)
		}
	}
	s.writing.Lock()
	stream, err := st.StartStream(ctx, s.conv)
	s.writing.Unlock()
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "native stream unavailable; posting and editing", slog.Any("err", err))
		return nil, nil
	}
	return stream, nil
}

// finalize tells a core.MessageFinalizer that these messages' text is final.
func (s *Presenter) finalize(ctx context.Context, sent []sentMsg) {
	f, ok := s.plat.(core.MessageFinalizer)
	if !ok {
		return
	}
	for _, m := range sent {
		if err := f.FinalizeMessage(ctx, m.ref); err != nil {
			s.log.LogAttrs(ctx, slog.LevelWarn, "finalizing a reply message failed", slog.Any("err", err))
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

func (s *Presenter) show(m sentMsg, placeholder bool) {
	if s.opts.OnShow != nil {
		s.opts.OnShow(core.Shown{Ref: m.ref, Text: m.text, Plain: m.plain}, placeholder)
	}
}
