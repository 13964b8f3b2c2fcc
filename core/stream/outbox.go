package stream

import (
	"context"
	"errors"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/pause"
)

// One-off writes are the messages of a conversation that are not a reply's
// text: notices, permission prompts and their outcomes. Nothing later
// replaces them, so they are final text to the platform's budget
// (core.PriorityFinal). A turn's go through its Presenter (Notice, Ask,
// Amend), which orders them with the reply's writes; every one is
// retried by the policy the reply's writes use — classify says what a
// platform's error means, the pacer when to try again — bounded, since
// no later text takes over when one fails.
const (
	oneOffTries   = 4                // attempts at most
	oneOffMaxWait = 30 * time.Second // the longest rate limit waited out
)

// Send posts post in conv as a one-off message (a notice outside any
// turn), retrying as a turn's one-off writes are. Adapters pace their
// calls but hand a refusal back, so no write is retried twice over.
func Send(ctx context.Context, p core.Platform, conv core.ConversationKey, post core.Post) (core.MessageRef, error) {
	var ref core.MessageRef
	err := deliver(ctx, false, func() (err error) {
		ref, err = p.Send(ctx, conv, post)
		return err
	})
	return ref, err
}

// Edit changes ref, a one-off message sent outside any turn (a notice
// kept up to date in place), retrying as Send does.
func Edit(ctx context.Context, p core.Platform, ref core.MessageRef, post core.Post) error {
	return deliver(ctx, true, func() error { return p.Edit(ctx, ref, post) })
}

// deliver runs write, a one-off post (edit: an edit), until the platform
// shows it, ctx ends, or the policy gives up: rate limits are waited out
// (up to oneOffMaxWait each) and other failures retried after the
// pacer's backoff, oneOffTries attempts in all; an identical edit counts
// as shown; a missing message or a text too long is not retried (a
// one-off is neither reposted nor split).
func deliver(ctx context.Context, edit bool, write func() error) error {
	pace := newPacer(0)
	for try := 1; ; try++ {
		err := write()
		// plain: a one-off's markup has no plain fallback here.
		o := classify(err, attempt{edit: edit, plain: true}, ctx.Err())
		now := time.Now()
		pace.record(now, o)
		switch {
		case o.kind == shown:
			return nil
		case o.kind != wait && o.kind != failed,
			errors.Is(err, core.ErrNotFound), errors.Is(err, core.ErrMessageTooLong),
			try == oneOffTries:
			return err
		}
		if pause.Sleep(ctx, min(pace.next(true).Sub(now), oneOffMaxWait)) != nil {
			return err
		}
	}
}

// Notice posts post, a notice of the turn, as a one-off write: never while
// one of the reply's writes is under way.
func (s *Presenter) Notice(ctx context.Context, post core.Post) (core.MessageRef, error) {
	var ref core.MessageRef
	err := deliver(ctx, false, func() (err error) {
		s.writing.Lock()
		defer s.writing.Unlock()
		ref, err = s.plat.Send(ctx, s.conv, post)
		return err
	})
	return ref, err
}

// Ask posts post, a permission prompt of the turn, once the platform shows
// the reply's text so far (what the agent said before asking), waiting at
// most wait for it. From then until done is called the prompt is open: no
// placeholder says the agent is thinking. If the prompt could not be
// shown it is closed already.
func (s *Presenter) Ask(ctx context.Context, post core.Post, wait time.Duration) (ref core.MessageRef, done func(), err error) {
	fctx, cancel := context.WithTimeout(ctx, wait)
	s.Flush(fctx)
	cancel()
	s.Prompt(true)
	ref, err = s.Notice(ctx, post)
	if err != nil {
		s.Prompt(false)
		return ref, func() {}, err
	}
	return ref, func() { s.Prompt(false) }, nil
}

// Amend edits ref, a one-off message of the turn (a prompt, to say how it
// was answered), as a one-off write.
func (s *Presenter) Amend(ctx context.Context, ref core.MessageRef, post core.Post) error {
	return deliver(ctx, true, func() error {
		s.writing.Lock()
		defer s.writing.Unlock()
		return s.plat.Edit(ctx, ref, post)
	})
}
