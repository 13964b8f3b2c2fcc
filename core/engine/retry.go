package engine

import (
	"context"
	"errors"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/stream"
)

// retryButton prefixes the value of a "↻ Retry" button; the rest is the
// token its core.Retry is kept under. Prompt tokens never contain ':'
// before their choice, so the kinds of button cannot be confused.
const retryButton = "retry:"

// Answers to a press of "↻ Retry".
const (
	textRetryGone     = "This retry is no longer available."
	textRetryNotYours = "Only the person who sent the message, or an approver, can retry it."
	textRetried       = "↻ Already retried."
	textRetryStore    = "⚠️ The bridge could not read or record this retry (storage error). Please try again."
)

// retryOffer is a "↻ Retry" offered on an interrupted turn's notice, kept
// in the store so that a press after another restart still finds it.
type retryOffer struct {
	e     *Engine
	token string
	r     core.Retry
}

// offerRetry keeps j's message under a new token, nil when it cannot (the
// notice then offers no button).
func (e *Engine) offerRetry(ctx context.Context, j core.JournalEntry) *retryOffer {
	o := &retryOffer{e: e, token: newToken(), r: core.Retry{Message: *j.Message, Key: j.Key, At: time.Now()}}
	if err := e.store.RetryPut(ctx, o.token, o.r); err != nil {
		e.log.WarnContext(ctx, "could not keep the retry of an interrupted turn", "turn", j.TurnID, "err", err)
		return nil
	}
	return o
}

// buttons are the buttons the notice carries.
func (o *retryOffer) buttons() []core.Button {
	if o == nil {
		return nil
	}
	return []core.Button{{Label: "↻ Retry", Value: retryButton + o.token, Optional: true}}
}

// shown records the message carrying the button, so a press can take it
// off.
func (o *retryOffer) shown(ctx context.Context, s core.Shown) {
	if o == nil {
		return
	}
	o.r.Notice = s
	if err := o.e.store.RetryPut(ctx, o.token, o.r); err != nil {
		o.e.log.WarnContext(ctx, "could not record the retry's notice", "err", err)
	}
}

// offerRetryOnReply puts ↻ Retry under the reply of t, which a shutdown
// stopped after its agent started: its message can be run again after
// the restart, as after a crash.
func (e *Engine) offerRetryOnReply(ctx context.Context, t *turn) {
	j := t.journal.current()
	if j.Reply.Ref.ID == "" || j.Message == nil {
		return
	}
	o := e.offerRetry(ctx, j)
	if o == nil {
		return
	}
	err := stream.Edit(ctx, t.plat, j.Reply.Ref, core.Post{Text: j.Reply.Text, Plain: j.Reply.Plain, Buttons: o.buttons()})
	if err != nil && !errors.Is(err, core.ErrNotModified) {
		e.log.WarnContext(ctx, "could not offer a retry on a stopped reply", "conv", t.msg.Conv, "turn", t.id, "err", err)
		return
	}
	o.shown(ctx, j.Reply)
}

// retryPress runs an interrupted turn's message again as a new turn of
// its session, once, for the person who sent it or an approver; the
// button goes when it is taken.
func (e *Engine) retryPress(ctx context.Context, p core.Platform, a core.Action, token string, answer func(string)) {
	ps := e.cfg().platform(p.Name())
	r, ok, err := e.store.Retry(ctx, token)
	switch {
	case err != nil:
		e.log.ErrorContext(ctx, "reading a retry failed", "conv", a.Conv, "err", err)
		answer(textRetryStore)
		return
	case !ok || r.Message.Conv != a.Conv:
		answer(textRetryGone)
		return
	case (a.From.ID != r.Message.From.ID || !ps.allowed(a.Conv, a.From.ID)) && !ps.approver(a.From.ID):
		e.log.InfoContext(ctx, "retry press refused", "conv", a.Conv, "user", a.From.ID)
		answer(textRetryNotYours)
		return
	case r.Used:
		answer(textRetried)
		return
	}
	// Recorded before the turn is queued: presses of one conversation are
	// handled one at a time, so the second finds it used.
	r.Used = true
	if err := e.store.RetryPut(ctx, token, r); err != nil {
		e.log.ErrorContext(ctx, "recording a retry failed", "conv", a.Conv, "err", err)
		answer(textRetryStore)
		return
	}
	if r.Notice.Ref.ID != "" {
		err := stream.Edit(ctx, p, r.Notice.Ref, withNotice(p, r.Notice, "↻ Retried by "+displayName(a.From)+"."))
		if err != nil && !errors.Is(err, core.ErrNotModified) {
			e.log.WarnContext(ctx, "could not take the retry button off", "conv", a.Conv, "err", err)
		}
	}
	t := &turn{id: newID(), plat: p, msg: r.Message, key: r.Key, queuedAt: time.Now()}
	if err := e.store.JournalPut(ctx, t.entry()); err != nil {
		e.log.ErrorContext(ctx, "journaling a retried turn failed", "conv", a.Conv, "err", err)
		e.say(ctx, p, t.msg, "⚠️ The bridge could not record your message (storage error). Please try again.")
		return
	}
	e.log.InfoContext(ctx, "interrupted turn retried", "conv", a.Conv, "turn", t.id, "by", a.From.ID)
	e.enqueue(ctx, t, e.cfg())
}
