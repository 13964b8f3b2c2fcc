package engine

import (
	"context"
	"errors"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
)

// Recover reports turns that a previous run of the bridge left in flight:
// each one's reply is marked interrupted (or, for a message still queued,
// its sender is told), and its journal entry is cleared. Nothing is re-run.
// Call it after every platform has been registered with Handler.
func (e *Engine) Recover(ctx context.Context) error {
	entries, err := e.store.Journal(ctx)
	if err != nil {
		return err
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
	text := "⚠️ The bridge restarted while answering this message, so the answer is incomplete. Please send it again."
	if j.Reply.ID == "" {
		// Queued, or running without a reply yet: the journal does not
		// record the start, to keep a disk sync off the turn's path.
		text = "⚠️ The bridge restarted before answering your message. Please send it again."
	}
	post := core.Post{Text: text, Plain: true, ReplyTo: j.MessageID}
	if j.Reply.ID != "" && j.Placeholder {
		// The reply shows only "thinking…": replace it rather than leave it stuck.
		err := p.Edit(ctx, j.Reply, post)
		if err == nil || errors.Is(err, core.ErrNotModified) {
			return nil
		}
		e.log.WarnContext(ctx, "could not edit interrupted reply; sending a notice", "conv", j.Conv, "err", err)
	}
	_, err := p.Send(ctx, j.Conv, post)
	return err
}

// Idle waits until no conversation has a turn running or queued, or ctx
// ends.
func (e *Engine) Idle(ctx context.Context) error { return e.lanes.Idle(ctx) }

// Shutdown stops intake, lets running turns finish until ctx ends, then
// stops the agents that are still running (their replies say so) and waits,
// at most stopGrace more, for their final edits. Queued messages that never
// ran are answered. After Shutdown the engine takes no more turns.
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

func (e *Engine) shutdown(ctx context.Context, stopGrace time.Duration, cause error) {
	e.draining.Store(true)
	e.lanes.Close()
	defer e.stop()
	if e.lanes.Idle(ctx) == nil {
		e.lanes.Wait()
		return
	}
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
