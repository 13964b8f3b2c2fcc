package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/core/lane"
	"github.com/agentbridge/agentbridge/core/render"
	"github.com/agentbridge/agentbridge/core/stream"
)

// What recovery says about a turn a crash interrupted.
const (
	// interruptedNotice ends a half-written reply (its text stays) or
	// replaces a placeholder.
	interruptedNotice = "⚠️ The bridge restarted, so this answer was interrupted. Please send your message again."
	// notAnsweredNotice answers a message whose reply never appeared.
	notAnsweredNotice = "⚠️ The bridge restarted before answering your message. Please send it again."
	// expiredNotice ends a permission prompt that lost its buttons.
	expiredNotice = "⌛ Expired: the bridge restarted before this request was answered."
	// interruptedRetry and notAnsweredRetry are the two notices above for
	// a turn whose message was kept: they come with a ↻ Retry button.
	interruptedRetry = "⚠️ The bridge restarted, so this answer was interrupted. Press ↻ Retry to run your message again."
	notAnsweredRetry = "⚠️ The bridge restarted before answering your message. Press ↻ Retry to run it again."
	// stillQueued (with its position) and stillQueuedNow replace the
	// queued notice of a message whose turn a restart runs again.
	stillQueued    = "⏳ Still queued after a restart — position %d. I'll answer when the turns before it are done."
	stillQueuedNow = "⏳ Still queued after a restart — answering it now."
)

// Recover picks up after turns that a previous run of the bridge left in
// flight. A turn whose agent never started (a queued message) runs again,
// in its conversation's order, and its queued notice says so. Of the
// others, what is left of each one's agent process group is killed (only
// processes proven to be that group's: a recycled pid is never
// signalled), each half-written reply or placeholder is edited to say it
// was interrupted, each open permission prompt loses its buttons and says
// it expired, what is left of a container or pod an isolated turn ran in
// is removed, the sender of a message that got no reply is told, and the
// journal entry is cleared. None of those is re-run: its tools may have
// acted; its notice offers ↻ Retry instead.
// Call it after every platform has been registered with Handler.
func (e *Engine) Recover(ctx context.Context) error {
	entries, err := e.store.Journal(ctx)
	if err != nil {
		return err
	}
	// Agents first, all of them: an agent left running goes on working on
	// the session and workspace the next turn will use.
	for _, j := range entries {
		if j.Agent.PID == 0 {
			continue
		}
		n, err := agentproc.KillStale(agentproc.Group(j.Agent))
		switch {
		case err != nil:
			e.log.WarnContext(ctx, "could not stop the agent of an interrupted turn", "turn", j.TurnID, "pgid", j.Agent.PID, "err", err)
		case n > 0:
			e.log.InfoContext(ctx, "killed the agent of an interrupted turn", "turn", j.TurnID, "pgid", j.Agent.PID, "processes", n)
		}
	}
	// Then the containers and pods they ran: the killed wrapper could not.
	e.removeRemotes(ctx, entries)
	var errs []error
	ahead := map[core.ConversationKey]int{} // turns requeued so far, by lane
	for _, j := range entries {
		e.mu.Lock()
		p := e.platforms[j.Conv.Platform]
		e.mu.Unlock()
		switch {
		case p == nil:
			e.log.WarnContext(ctx, "interrupted turn on a platform that is not running; dropping", "conv", j.Conv, "turn", j.TurnID)
		case j.Waiting():
			e.requeue(ctx, p, j, ahead)
			continue // its entry stays until it ran
		default:
			if err := e.markInterrupted(ctx, p, j); err != nil {
				// Keep the entry: the next start tries again.
				errs = append(errs, err)
				continue
			}
		}
		if err := e.store.JournalDelete(ctx, j.TurnID); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// requeue puts a turn whose agent never started back on its lane, behind
// the ones requeued before it (ahead counts them by lane), after saying
// so in its queued notice: edited when it was posted, else posted. Its
// journal entry stays, so a second restart before it runs requeues it
// again.
func (e *Engine) requeue(ctx context.Context, p core.Platform, j core.JournalEntry, ahead map[core.ConversationKey]int) {
	t := &turn{id: j.TurnID, plat: p, msg: *j.Message, key: j.Key, queuedAt: j.StartedAt, notice: j.Notice}
	pos := ahead[t.key]
	ahead[t.key]++
	post := core.Post{Text: stillQueuedNow, Plain: true}
	if pos > 0 {
		post.Text = fmt.Sprintf(stillQueued, pos)
	}
	err := core.ErrNotFound
	if t.notice.ID != "" {
		err = stream.Edit(ctx, p, t.notice, post)
	}
	if err != nil && !errors.Is(err, core.ErrNotModified) {
		post.ReplyTo = t.msg.ID
		ref, err := e.post(ctx, p, t.msg.Conv, post)
		if err != nil {
			e.log.WarnContext(ctx, "could not say a queued message is still queued", "conv", t.msg.Conv, "turn", t.id, "err", err)
		}
		t.notice = ref
		if err := e.store.JournalPut(ctx, t.entry()); err != nil {
			e.log.WarnContext(ctx, "journal update of a requeued turn failed", "turn", t.id, "err", err)
		}
	}
	e.log.InfoContext(ctx, "queued message requeued after a restart", "conv", t.msg.Conv, "turn", t.id, "position", pos)
	e.mu.Lock()
	e.queued[t.id] = t
	e.mu.Unlock()
	if _, err := e.lanes.Enqueue(t.key, lane.Job{ID: t.id, Run: func(ctx context.Context) { e.run(ctx, t) }}); err != nil {
		e.log.WarnContext(ctx, "could not requeue a queued message", "turn", t.id, "err", err)
		e.mu.Lock()
		delete(e.queued, t.id)
		e.mu.Unlock()
	}
}

func (e *Engine) markInterrupted(ctx context.Context, p core.Platform, j core.JournalEntry) error {
	lim := p.Limits()
	var errs []error
	for _, pr := range j.Prompts {
		// Edited without buttons: a press could reach no one.
		err := stream.Edit(ctx, p, pr.Ref, withNotice(p, pr, expiredNotice))
		if errors.Is(err, core.ErrNotFound) {
			// Gone (or, in chat, printed by an earlier process): say it.
			_, err = e.post(ctx, p, j.Conv, core.Post{Text: expiredNotice, Plain: true, ReplyTo: j.MessageID})
		}
		if err != nil && !errors.Is(err, core.ErrNotModified) {
			errs = append(errs, fmt.Errorf("expire permission prompt: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// A turn whose message was kept offers to run it again.
	interrupted, notAnswered := interruptedNotice, notAnsweredNotice
	var retry *retryOffer
	if j.Message != nil {
		retry = e.offerRetry(ctx, j)
	}
	if retry != nil {
		interrupted, notAnswered = interruptedRetry, notAnsweredRetry
	}
	shown, err := e.sayInterrupted(ctx, p, lim, j, interrupted, notAnswered, retry.buttons())
	if err == nil {
		retry.shown(ctx, shown)
	}
	return err
}

// sayInterrupted ends the reply of an interrupted turn with the notice
// (interrupted; notAnswered when nothing of it was shown), with buttons,
// and returns the message that now carries them.
func (e *Engine) sayInterrupted(ctx context.Context, p core.Platform, lim core.Limits, j core.JournalEntry, interrupted, notAnswered string, buttons []core.Button) (core.Shown, error) {
	r := j.Reply
	switch {
	case r.Ref.ID == "":
		// Queued, or running with nothing shown yet.
	case j.Placeholder:
		// The reply shows only "thinking…": replace it rather than leave it stuck.
		post := core.Post{Text: interrupted, Plain: true, Buttons: buttons}
		err := stream.Edit(ctx, p, r.Ref, post)
		if err == nil || errors.Is(err, core.ErrNotModified) {
			return core.Shown{Ref: r.Ref, Text: post.Text, Plain: true}, nil
		}
		e.log.WarnContext(ctx, "could not edit interrupted placeholder; sending a notice", "conv", j.Conv, "err", err)
	case r.Text != "" && render.Length(r.Text)+render.Length(interrupted)+2 <= maxText(lim):
		post := withNotice(p, r, interrupted)
		post.Buttons = buttons
		shown := core.Shown{Ref: r.Ref, Text: post.Text, Plain: post.Plain}
		err := stream.Edit(ctx, p, r.Ref, post)
		if err == nil || errors.Is(err, core.ErrNotModified) {
			return shown, nil
		}
		if errors.Is(err, core.ErrNotFound) {
			// Gone — a Telegram draft does not outlive the process that
			// streamed it — so post what it showed again: the user keeps it.
			post.ReplyTo = j.MessageID
			shown.Ref, err = e.post(ctx, p, j.Conv, post)
			return shown, err
		}
		e.log.WarnContext(ctx, "could not edit interrupted reply; sending a notice", "conv", j.Conv, "err", err)
	}
	text := notAnswered
	if r.Ref.ID != "" {
		text = interrupted
	}
	ref, err := e.post(ctx, p, j.Conv, core.Post{Text: text, Plain: true, ReplyTo: j.MessageID, Buttons: buttons})
	return core.Shown{Ref: ref, Text: text, Plain: true}, err
}

// post sends a recovery message and marks it final at once, so a platform
// that keeps streamed messages provisional (a Telegram draft) shows it for
// good.
func (e *Engine) post(ctx context.Context, p core.Platform, conv core.ConversationKey, post core.Post) (core.MessageRef, error) {
	ref, err := stream.Send(ctx, p, conv, post)
	if err != nil {
		return ref, err
	}
	if f, ok := p.(core.MessageFinalizer); ok {
		if err := f.FinalizeMessage(ctx, ref); err != nil {
			e.log.WarnContext(ctx, "could not finalize a recovery message", "conv", conv, "err", err)
		}
	}
	return ref, nil
}

// withNotice is m as it was shown plus a closing notice, without buttons.
func withNotice(p core.Platform, m core.Shown, notice string) core.Post {
	if m.Plain {
		return core.Post{Text: m.Text + "\n\n" + notice, Plain: true}
	}
	return core.Post{Text: m.Text + "\n\n" + render.Render(render.EscapeMarkdown(notice), p.Limits().Dialect)}
}

// Idle waits until no conversation has an event waiting on its intake or
// a turn running or queued, or ctx ends.
func (e *Engine) Idle(ctx context.Context) error {
	if err := e.intake.Idle(ctx); err != nil {
		return err
	}
	return e.lanes.Idle(ctx)
}

// Shutdown drains: events handed over before it are handled as usual and
// running turns may finish, until ctx ends; adapters whose platform holds
// events stop taking new ones (core.Drainer), later events elsewhere are
// refused, once per conversation. When ctx ends the intake stops (its
// pending notices are not sent), the agents still running are stopped
// (their replies say so), and Shutdown waits at most stopGrace more for
// their final edits. Queued messages that never ran are answered. After
// Shutdown the engine takes no more events.
func (e *Engine) Shutdown(ctx context.Context, stopGrace time.Duration) {
	e.shutdown(ctx, stopGrace, ErrShuttingDown)
}

// Interrupt is Shutdown for an interactive Ctrl-C: running turns are
// stopped at once with agentproc.ErrInterrupted (exit 130, "Stopped."),
// and Interrupt waits at most stopGrace for their final edits.
func (e *Engine) Interrupt(stopGrace time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e.shutdown(ctx, stopGrace, agentproc.ErrInterrupted)
}

// InterruptPlatform stops every turn running on platform as an interactive
// Ctrl-C would (exit 130, the reply says "Stopped.") and cancels the
// messages queued behind them, telling their senders. Unlike Interrupt the
// engine goes on taking turns. It reports whether anything was running or
// queued there.
func (e *Engine) InterruptPlatform(platform string) bool {
	e.mu.Lock()
	keys := map[core.ConversationKey]bool{}
	for k, t := range e.running {
		if t.plat.Name() == platform {
			keys[k] = true
		}
	}
	for _, t := range e.queued {
		if t.plat.Name() == platform {
			keys[t.key] = true
		}
	}
	e.mu.Unlock()
	any := false
	for k := range keys {
		stopped, dropped := e.lanes.Stop(k, agentproc.ErrInterrupted, true)
		e.dropped(context.Background(), dropped, "⏹ Cancelled: the running turn was interrupted before this message ran.")
		any = any || stopped || len(dropped) > 0
	}
	return any
}

func (e *Engine) shutdown(ctx context.Context, stopGrace time.Duration, cause error) {
	e.gate.begin()
	defer e.stop()
	// The intake stops when the drain ends, so a notice waiting out a rate
	// limit cannot hold the exit; later events are dropped.
	stopIntake := func() {
		e.intake.Close()
		e.intake.CancelAll(cause)
	}
	defer e.intake.Wait()
	defer stopIntake()
	// Messages handed over before the drain began become turns (or get
	// their answer) first; only then are the lanes closed.
	if e.gate.wait(ctx) == nil {
		e.lanes.Close()
		if e.lanes.Idle(ctx) == nil {
			stopIntake()
			e.lanes.Wait()
			return
		}
	}
	stopIntake()
	e.lanes.Close()
	e.log.Warn("stopping running turns", "cause", cause)
	dropped := e.lanes.CancelAll(cause)
	grace, cancel := context.WithTimeout(context.Background(), stopGrace)
	defer cancel()
	e.dropped(grace, dropped, "⏹ Not run: the bridge is shutting down. Please send this again in a minute.")
	if err := e.lanes.Idle(grace); err != nil {
		e.log.Error("turns still finishing after the stop grace; their replies may be incomplete")
		return
	}
	e.lanes.Wait()
}

// maxText is the platform's message limit, or the presenter's default.
func maxText(lim core.Limits) int {
	if lim.MaxText > 0 {
		return lim.MaxText
	}
	return 4000
}
