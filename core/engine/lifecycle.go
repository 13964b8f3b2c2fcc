package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/core/render"
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
)

// Recover cleans up after turns that a previous run of the bridge left in
// flight: what is left of each one's agent process group is killed (only
// processes proven to be that group's: a recycled pid is never signalled),
// each half-written reply or placeholder is edited to say it was
// interrupted, each open permission prompt loses its buttons and says it
// expired, the sender of a message that got no reply is told, and the
// journal entry is cleared. Nothing is re-run.
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
	var errs []error
	for _, j := range entries {
		e.mu.Lock()
		p := e.platforms[j.Conv.Platform]
		e.mu.Unlock()
		if p == nil {
			e.log.WarnContext(ctx, "interrupted turn on a platform that is not running; dropping", "conv", j.Conv, "turn", j.TurnID)
		} else if err := e.markInterrupted(ctx, p, j); err != nil {
			// Keep the entry: the next start tries again.
			errs = append(errs, err)
			continue
		}
		if err := e.store.JournalDelete(ctx, j.TurnID); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (e *Engine) markInterrupted(ctx context.Context, p core.Platform, j core.JournalEntry) error {
	lim := p.Limits()
	var errs []error
	for _, pr := range j.Prompts {
		// Edited without buttons: a press could reach no one.
		err := p.Edit(ctx, pr.Ref, withNotice(p, pr, expiredNotice))
		if errors.Is(err, core.ErrNotFound) {
			// Gone (or, in chat, printed by an earlier process): say it.
			err = e.post(ctx, p, j.Conv, core.Post{Text: expiredNotice, Plain: true, ReplyTo: j.MessageID})
		}
		if err != nil && !errors.Is(err, core.ErrNotModified) {
			errs = append(errs, fmt.Errorf("expire permission prompt: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	r := j.Reply
	switch {
	case r.Ref.ID == "":
		// Queued, or running with nothing shown yet.
	case j.Placeholder:
		// The reply shows only "thinking…": replace it rather than leave it stuck.
		err := p.Edit(ctx, r.Ref, core.Post{Text: interruptedNotice, Plain: true})
		if err == nil || errors.Is(err, core.ErrNotModified) {
			return nil
		}
		e.log.WarnContext(ctx, "could not edit interrupted placeholder; sending a notice", "conv", j.Conv, "err", err)
	case r.Text != "" && render.Length(r.Text)+render.Length(interruptedNotice)+2 <= maxText(lim):
		err := p.Edit(ctx, r.Ref, withNotice(p, r, interruptedNotice))
		if err == nil || errors.Is(err, core.ErrNotModified) {
			return nil
		}
		if errors.Is(err, core.ErrNotFound) {
			// Gone — a Telegram draft does not outlive the process that
			// streamed it — so post what it showed again: the user keeps it.
			post := withNotice(p, r, interruptedNotice)
			post.ReplyTo = j.MessageID
			return e.post(ctx, p, j.Conv, post)
		}
		e.log.WarnContext(ctx, "could not edit interrupted reply; sending a notice", "conv", j.Conv, "err", err)
	}
	text := notAnsweredNotice
	if r.Ref.ID != "" {
		text = interruptedNotice
	}
	return e.post(ctx, p, j.Conv, core.Post{Text: text, Plain: true, ReplyTo: j.MessageID})
}

// post sends a recovery message and marks it final at once, so a platform
// that keeps streamed messages provisional (a Telegram draft) shows it for
// good.
func (e *Engine) post(ctx context.Context, p core.Platform, conv core.ConversationKey, post core.Post) error {
	ref, err := p.Send(ctx, conv, post)
	if err != nil {
		return err
	}
	if f, ok := p.(core.MessageFinalizer); ok {
		if err := f.FinalizeMessage(ctx, ref); err != nil {
			e.log.WarnContext(ctx, "could not finalize a recovery message", "conv", conv, "err", err)
		}
	}
	return nil
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
