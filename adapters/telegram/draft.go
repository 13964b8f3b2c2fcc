package telegram

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/pause"
)

// Streaming with sendMessageDraft (Bot API 9.3+), private chats only. A
// draft is an ephemeral preview that must be finished with a real message.
// A draft becomes a real message as soon as its text is final: with the
// reply's final text (an edit whose core.Priority is not Replaced: one
// sendMessage, no last draft update; a full piece too), when the presenter says a piece of a long reply is
// full (core.MessageFinalizer; the reply goes on in a new draft), when
// buttons are put on it, when Run returns, or after DraftIdle of quiet, so
// a long pause (a tool call) never lets the preview lapse. Later edits
// edit the real message.

// draftPrefix marks a MessageRef.ID that names a draft.
const draftPrefix = "draft-"

// draft is one reply being streamed as a draft.
type draft struct {
	id    int64
	conv  core.ConversationKey
	chat  int64
	post  core.Post
	timer *time.Timer
	quiet *quietTimers // the set timer belongs to
	real  string       // the real message's id, once sent
	at    time.Time    // when it became real
}

// draftMemory is how long a finished draft's id keeps routing edits to its
// real message.
const draftMemory = time.Hour

// useDraft reports whether a Send of p goes as a draft: rendered interim
// text (a streamed reply's frame) without buttons in a private chat. Plain posts are the bridge's notices
// (and the placeholder), which should appear at once as real messages.
func (a *Adapter) useDraft(chat int64, p core.Post) bool {
	return a.opts.Drafts && !a.noDrafts.Load() && chat > 0 && len(p.Buttons) == 0 && !p.Plain && p.Priority.Replaced()
}

// sendDraft starts a draft. It reports ok=false when the server does not
// take drafts (then drafts are switched off and the caller sends normally).
func (a *Adapter) sendDraft(ctx context.Context, to core.ConversationKey, chat int64, p core.Post) (core.MessageRef, bool, error) {
	a.mu.Lock()
	a.draftSeq++
	d := &draft{id: a.draftSeq, conv: to, chat: chat, post: p}
	a.mu.Unlock()
	// The conversation holds the budget's place while a first draft waits
	// its turn (the presenter sends again then), as a first message would.
	if err := a.pushDraft(ctx, d, to.String(), p); err != nil {
		_, limited := core.RetryAfter(err)
		if limited || ctx.Err() != nil || errors.Is(err, core.ErrFormatting) || errors.Is(err, core.ErrMessageTooLong) {
			return core.MessageRef{}, true, err // about this text, not about drafts
		}
		a.log.WarnContext(ctx, "sendMessageDraft failed; streaming with edits instead", "err", err)
		a.noDrafts.Store(true)
		return core.MessageRef{}, false, nil
	}
	a.mu.Lock()
	for id, old := range a.drafts {
		if old.real != "" && time.Since(old.at) > draftMemory {
			delete(a.drafts, id)
		}
	}
	a.drafts[d.id] = d
	a.armLocked(d)
	a.mu.Unlock()
	return core.MessageRef{Conv: to, ID: draftPrefix + strconv.FormatInt(d.id, 10)}, true, nil
}

// pushDraft shows p in draft d, as caller (who keeps one place in the
// budget's queue). Telegram documents no limit for drafts; they animate a
// message of the chat like edits, so they spend the chat's flood budget
// like edits: interim calls that leave room for final text. Over the
// budget it returns a *core.RateLimitError without calling Telegram, so
// the presenter coalesces the text that arrives meanwhile.
func (a *Adapter) pushDraft(ctx context.Context, d *draft, caller string, p core.Post) error {
	params, err := a.textParams(p)
	if err != nil {
		return err
	}
	params["chat_id"] = d.conv.Channel
	params["draft_id"] = strconv.FormatInt(d.id, 10)
	params.AddNonEmpty("message_thread_id", d.conv.Thread)
	if err := a.budget(d.chat).Claim(ctx, caller, core.PriorityInterim, 0); err != nil {
		return err
	}
	if _, err := a.call(ctx, "sendMessageDraft", params); err != nil {
		a.blocked(d.chat, err)
		return err
	}
	return nil
}

// chatLock is one chat's draft lock; users counts who holds or waits for
// it, so an unused one is dropped.
type chatLock struct {
	sync.Mutex
	users int
}

// lockChat locks chat's drafts and returns the unlock.
func (a *Adapter) lockChat(chat int64) (unlock func()) {
	a.mu.Lock()
	l := a.draftLocks[chat]
	if l == nil {
		l = &chatLock{}
		a.draftLocks[chat] = l
	}
	l.users++
	a.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		a.mu.Lock()
		if l.users--; l.users == 0 {
			delete(a.draftLocks, chat)
		}
		a.mu.Unlock()
	}
}

// quietTimers are the drafts' quiet timers armed while one Run lasts; Run
// ends them on its way out (flushDrafts), so no timer's work outlives it.
type quietTimers struct {
	ctx  context.Context // bounds the timers' work; cancelled when Run ends
	end  context.CancelFunc
	busy sync.WaitGroup // timers armed or firing
}

func newQuietTimers() *quietTimers {
	q := &quietTimers{}
	q.ctx, q.end = context.WithCancel(context.Background())
	return q
}

// armLocked (re)starts d's quiet timer. a.mu is held.
func (a *Adapter) armLocked(d *draft) {
	d.disarm()
	q := a.quiet
	q.busy.Add(1)
	d.quiet = q
	d.timer = time.AfterFunc(a.opts.DraftIdle, func() {
		defer q.busy.Done()
		ctx, cancel := context.WithTimeout(q.ctx, time.Minute)
		defer cancel()
		a.finishDrafts(ctx, d.chat, d.id)
	})
}

// disarm stops d's quiet timer, if it has not fired. a.mu is held.
func (d *draft) disarm() {
	if d.timer != nil && d.timer.Stop() {
		d.quiet.busy.Done()
	}
	d.timer = nil
}

// editDraft updates a draft, or edits the real message it became.
func (a *Adapter) editDraft(ctx context.Context, ref core.MessageRef, p core.Post) error {
	id, err := strconv.ParseInt(strings.TrimPrefix(ref.ID, draftPrefix), 10, 64)
	if err != nil {
		return core.ErrNotFound
	}
	chat, err := parseChat(ref.Conv.Channel)
	if err != nil {
		return core.ErrNotFound
	}
	defer a.lockChat(chat)()
	a.mu.Lock()
	d := a.drafts[id]
	a.mu.Unlock()
	switch {
	case d == nil, d.conv != ref.Conv:
		// A draft from before a restart is gone. Ids restart with the
		// process, so a stale ref (a crash recovery's) can name a new draft:
		// never one of another conversation.
		return core.ErrNotFound
	case d.real != "":
		return a.editMessage(ctx, core.MessageRef{Conv: ref.Conv, ID: d.real}, p)
	case len(p.Buttons) > 0 || !p.Priority.Replaced():
		// Buttons need a real message; so does text nothing will replace
		// (a reply's final text, or a full piece of a long one), which
		// then goes at once.
		a.mu.Lock()
		d.post = p
		a.mu.Unlock()
		return a.finishLocked(ctx, d)
	}
	if err := a.pushDraft(ctx, d, ref.Conv.Channel+"/"+ref.ID, p); err != nil {
		return err
	}
	a.mu.Lock()
	d.post = p
	a.armLocked(d)
	a.mu.Unlock()
	return nil
}

// FinalizeMessage implements core.MessageFinalizer: a draft whose text is
// final becomes a real message now, with any earlier drafts of its chat
// first.
func (a *Adapter) FinalizeMessage(ctx context.Context, ref core.MessageRef) error {
	idText, isDraft := strings.CutPrefix(ref.ID, draftPrefix)
	if !isDraft {
		return nil // already a real message
	}
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil {
		return core.ErrNotFound
	}
	a.mu.Lock()
	d := a.drafts[id]
	a.mu.Unlock()
	if d == nil {
		return core.ErrNotFound
	}
	a.finishDrafts(ctx, d.chat, id)
	return nil
}

// finishDrafts turns chat's (0: every chat's) unfinished drafts up to id
// upTo (0: all) into real messages, oldest first, so a split reply keeps
// its order.
func (a *Adapter) finishDrafts(ctx context.Context, chat, upTo int64) {
	if chat == 0 {
		a.mu.Lock()
		chats := map[int64]bool{}
		for _, d := range a.drafts {
			if d.real == "" {
				chats[d.chat] = true
			}
		}
		a.mu.Unlock()
		for c := range chats {
			a.finishDrafts(ctx, c, upTo)
		}
		return
	}
	defer a.lockChat(chat)()
	a.mu.Lock()
	var due []*draft
	for _, d := range a.drafts {
		if d.real == "" && d.chat == chat && (upTo == 0 || d.id <= upTo) {
			due = append(due, d)
		}
	}
	a.mu.Unlock()
	slices.SortFunc(due, func(x, y *draft) int { return int(x.id - y.id) })
	for _, d := range due {
		if err := a.finishLocked(ctx, d); err != nil {
			a.log.ErrorContext(ctx, "could not turn a draft into a message", "conv", d.conv, "err", err)
		}
	}
}

// finishLocked sends d as a real message, waiting out rate limits and
// falling back to plain text. d's chat is locked (lockChat).
func (a *Adapter) finishLocked(ctx context.Context, d *draft) error {
	a.mu.Lock()
	d.disarm()
	p := d.post
	a.mu.Unlock()
	// Its text is final now (nothing replaces it): it goes before
	// anyone's interim frames.
	p.Priority = core.PriorityFinal
	for attempt := 0; ; attempt++ {
		ref, err := a.sendMessage(ctx, d.conv, d.chat, p, 0) // drafts are private: no quote
		if err == nil {
			a.mu.Lock()
			d.real, d.at = ref.ID, time.Now()
			a.mu.Unlock()
			return nil
		}
		if attempt >= 10 || ctx.Err() != nil {
			return err
		}
		wait, limited := core.RetryAfter(err)
		switch {
		case limited:
		case errors.Is(err, core.ErrFormatting) && !p.Plain:
			p.Plain = true
			p.Text = stripTags(p.Text)
			continue
		default:
			wait = time.Second
		}
		if err := pause.Sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// flushDrafts turns every unfinished draft into a message; Run calls it on
// its way out. First it ends this Run's quiet timers and waits for any at
// work (one may be waiting out a 429), so none outlives Run and none holds
// up the flush; a draft started later (a reply ending after Run) gets
// timers of a new set.
func (a *Adapter) flushDrafts() {
	a.mu.Lock()
	q := a.quiet
	a.quiet = newQuietTimers()
	for _, d := range a.drafts {
		if d.quiet == q {
			d.disarm()
		}
	}
	a.mu.Unlock()
	q.end()
	q.busy.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a.finishDrafts(ctx, 0, 0)
}

// stripTags turns Telegram HTML into the text it shows.
func stripTags(s string) string {
	var b strings.Builder
	in := false
	for _, r := range s {
		switch {
		case r == '<':
			in = true
		case r == '>' && in:
			in = false
		case !in:
			b.WriteRune(r)
		}
	}
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&quot;", `"`, "&amp;", "&").Replace(b.String())
}
