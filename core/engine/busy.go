package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/lane"
	"github.com/agentbridge/agentbridge/core/stream"
)

// Busy modes: what a message does that is sent while its conversation's
// turn runs (Settings.Busy).
const (
	// BusyQueue queues it (queue_depth); its queued notice offers ⏭ to
	// those who may interrupt.
	BusyQueue = "queue"
	// BusyInterrupt stops the running turn when its sender may (the
	// running turn's requester or an approver) and runs it next, in the
	// same session; anyone else's message queues.
	BusyInterrupt = "interrupt"
	// BusyCollect joins every message that arrives meanwhile into one next
	// turn, with one queued notice kept up to date.
	BusyCollect = "collect"
)

// BusyModes lists the busy modes, for validation.
var BusyModes = []string{BusyQueue, BusyInterrupt, BusyCollect}

const (
	// nextButton prefixes the value of a queued notice's ⏭ button; the
	// rest is the queued turn's id (random, like a prompt's token).
	nextButton = "next:"
	labelNext  = "⏭ Stop and answer this now"

	textQueued      = "⏳ Queued — position %d. I'll answer when the current turn is done."
	textInterrupted = "⏹ Interrupted by a newer message."
	// whyInterrupted is what an interrupted turn's open prompts are
	// denied with (the agent hears it, the prompt shows it).
	whyInterrupted  = "interrupted by a newer message"
	textNotQueued   = "This message is no longer waiting: it is being answered, or was cancelled."
	textMayNotSkip  = "Only the person whose message is being answered, or an approver, can stop it for this one."
	textCollectOne  = "⏳ Queued: I'll answer it when the current turn is done, together with anything else sent before then."
	textCollectMany = "⏳ Queued: %d messages, to be answered together when the current turn is done."
)

// collectDepth bounds the messages a burst collects (queue_depth, when
// larger): they become one turn, so it need not be as small.
const collectDepth = 50

// busy is conv's busy mode.
func (s *Settings) busy(conv core.ConversationKey) string {
	if s.Busy != nil {
		if m := s.Busy(conv); m != "" {
			return m
		}
	}
	return BusyQueue
}

// mayInterrupt reports whether user may stop running turn r for another
// message: r's requester or an approver (a submitted turn has no
// requester).
func mayInterrupt(ps PlatformSettings, r *turn, user string) bool {
	return (r.sub == nil && user != "" && r.msg.From.ID == user) || ps.approver(user)
}

// collectNotice is busy: collect's one queued notice for the messages of a
// burst, edited as more arrive.
type collectNotice struct {
	p core.Platform
	m core.Message // the burst's first message: the notice answers it
	n atomic.Int32 // messages in the burst

	mu    sync.Mutex // one post or edit at a time
	ref   core.MessageRef
	shown int32 // the count ref shows
}

// queue puts t on its lane — with its lane key's burst of collected
// messages, in collect mode — and returns its position.
func (e *Engine) queue(t *turn, s *Settings) (int, *collectNotice, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.queued[t.id] = t
	pos, err := e.lanes.Enqueue(t.key, lane.Job{ID: t.id, Run: func(ctx context.Context) { e.run(ctx, t) }})
	if err != nil || pos == 0 || t.sub != nil || s.busy(t.msg.Conv) != BusyCollect {
		return pos, nil, err
	}
	// Under e.mu with the enqueue, so a burst's count and the turns merge
	// takes off the lane agree.
	cn := e.collecting[t.key]
	if cn == nil {
		cn = &collectNotice{p: t.plat, m: t.msg}
		e.collecting[t.key] = cn
	}
	cn.n.Add(1)
	return pos, cn, nil
}

// arrived tells the sender of t, queued at pos behind a running turn, what
// becomes of it in its conversation's busy mode.
func (e *Engine) arrived(ctx context.Context, t *turn, s *Settings, pos int, cn *collectNotice) {
	if cn != nil {
		e.showCollected(ctx, cn)
		return
	}
	mode := s.busy(t.msg.Conv)
	if t.sub != nil {
		mode = "" // nobody to press ⏭ for, nobody to interrupt for
	}
	if mode == BusyInterrupt && e.interruptFor(ctx, t, s) {
		return
	}
	post := core.Post{Text: fmt.Sprintf(textQueued, pos), Plain: true, ReplyTo: t.msg.ID}
	if mode == BusyQueue {
		// Optional: in the terminal a line that presses no button stays a
		// message, as it must in a busy conversation.
		post.Buttons = []core.Button{{Label: labelNext, Value: nextButton + t.id, Optional: true}}
	}
	ref := e.notice(ctx, t.plat, t.msg, post)
	if ref.ID == "" || t.sub != nil {
		return
	}
	// Kept, so a restart edits it rather than posting another, and the
	// button goes once the turn starts.
	if !e.beforeStart(ctx, t, func() {
		t.notice = ref
		if len(post.Buttons) > 0 {
			t.unskip = core.Post{Text: post.Text, Plain: true}
		}
	}) && len(post.Buttons) > 0 {
		// It started while its notice was being sent.
		e.editNotice(ctx, t.plat, ref, core.Post{Text: post.Text, Plain: true})
	}
}

// showCollected shows the burst's count on its one notice: posted for the
// first message, edited for the later ones.
func (e *Engine) showCollected(ctx context.Context, cn *collectNotice) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	n := cn.n.Load()
	if n == cn.shown {
		return // a later message's call showed it already
	}
	text := textCollectOne
	if n > 1 {
		text = fmt.Sprintf(textCollectMany, n)
	}
	post := core.Post{Text: text, Plain: true, ReplyTo: cn.m.ID}
	if cn.ref.ID == "" {
		cn.ref = e.notice(ctx, cn.p, cn.m, post)
	} else {
		e.editNotice(ctx, cn.p, cn.ref, post)
	}
	cn.shown = n
}

// unbutton takes ⏭ off t's queued notice once t has started.
func (e *Engine) unbutton(ctx context.Context, t *turn) {
	t.pre.Lock()
	ref, post := t.notice, t.unskip
	t.pre.Unlock()
	if ref.ID != "" && post.Text != "" {
		e.editNotice(ctx, t.plat, ref, post)
	}
}

// editNotice edits a notice outside any turn, logging a failure: a notice
// is not worth more.
func (e *Engine) editNotice(ctx context.Context, p core.Platform, ref core.MessageRef, post core.Post) {
	if err := stream.Edit(ctx, p, ref, post); err != nil {
		e.log.DebugContext(ctx, "notice could not be edited", "conv", ref.Conv, "err", err)
	}
}

// interruptFor stops the turn running on t's lane for t, queued behind it,
// when t's sender may interrupt it: t then runs next (behind only other
// messages that interrupted before it). It reports whether it did.
func (e *Engine) interruptFor(ctx context.Context, t *turn, s *Settings) bool {
	ps := s.platform(t.plat.Name())
	e.mu.Lock()
	r := e.running[t.key]
	e.mu.Unlock()
	if r == nil || !mayInterrupt(ps, r, t.msg.From.ID) {
		return false
	}
	e.interrupting.Store(t.id, t)
	e.lanes.Front(t.key, t.id, e.interrupter)
	e.log.InfoContext(ctx, "turn interrupted by a newer message", "conv", t.msg.Conv, "turn", r.id, "by", t.id, "user", t.msg.From.ID)
	e.stopFor(r)
	return true
}

// interrupter reports whether job is a queued turn that interrupted the
// one before it. It runs under the lanes' lock, so it takes no engine lock.
func (e *Engine) interrupter(j lane.Job) bool {
	_, ok := e.interrupting.Load(j.ID)
	return ok
}

// stopFor stops running turn r for a newer message, once: its open
// permission prompts are denied first, saying why, then its agent is
// stopped as /stop stops it (the whole process group, SIGTERM, SIGKILL
// after the profile's grace), and its reply ends textInterrupted.
func (e *Engine) stopFor(r *turn) {
	if r.interrupted.Swap(true) {
		return // already stopping: the newer message waits its turn behind
	}
	e.denyPrompts(func(pr *prompt) bool { return pr.turn == r }, whyInterrupted)
	e.lanes.StopRunning(r.key, r.id, ErrInterrupted)
}

// superseded reports whether t, about to start, was already overtaken: the
// next message on its lane interrupted the turn before t and may interrupt
// t too, so t is stopped before it starts, as it would be a moment later.
func (e *Engine) superseded(t *turn, s *Settings) bool {
	id, ok := e.lanes.Next(t.key)
	if !ok {
		return false
	}
	v, ok := e.interrupting.Load(id)
	if !ok {
		return false
	}
	return mayInterrupt(s.platform(t.plat.Name()), t, v.(*turn).msg.From.ID)
}

// nextPress handles ⏭ on the queued notice of turn id: it stops the
// running turn (as interrupt does) and moves the message to the front.
// Only those who may interrupt the running turn may press it.
func (e *Engine) nextPress(ctx context.Context, p core.Platform, a core.Action, id string) {
	ps := e.cfg().platform(p.Name())
	e.mu.Lock()
	q := e.queued[id]
	var r *turn
	if q != nil {
		r = e.running[q.key]
	}
	e.mu.Unlock()
	// Pressed where the notice is (its conversation's channel, through the
	// account that sent it), with a turn running to stop for it.
	if q == nil || r == nil || q.plat.Name() != p.Name() || !sameChannel(a.Conv, q.msg.Conv) {
		e.pressAnswer(ctx, p, a, textNotQueued)
		return
	}
	if !mayInterrupt(ps, r, a.From.ID) {
		e.log.InfoContext(ctx, "⏭ press refused", "conv", a.Conv, "user", a.From.ID)
		e.pressAnswer(ctx, p, a, textMayNotSkip)
		return
	}
	if !e.lanes.Front(q.key, q.id, nil) {
		e.pressAnswer(ctx, p, a, textNotQueued)
		return
	}
	e.log.InfoContext(ctx, "turn stopped for a queued message (⏭)", "conv", a.Conv, "turn", r.id, "for", q.id, "user", a.From.ID)
	e.stopFor(r)
}

// merge joins into t, about to start in collect mode, the messages queued
// right behind it on its lane (collect mode, not submitted), in order: one
// line each, attributed to its sender when they are not all t's sender's,
// attachments merged. Each merged turn is dropped with its journal entry,
// and the next message starts a new burst.
func (e *Engine) merge(ctx context.Context, t *turn, s *Settings) {
	e.mu.Lock()
	delete(e.collecting, t.key)
	ids := map[string]*turn{}
	for id, q := range e.queued {
		if q.key == t.key && q.sub == nil && s.busy(q.msg.Conv) == BusyCollect {
			ids[id] = q
		}
	}
	jobs := e.lanes.TakeWhile(t.key, func(j lane.Job) bool { return ids[j.ID] != nil })
	var merged []*turn
	for _, j := range jobs {
		merged = append(merged, ids[j.ID])
		delete(e.queued, j.ID)
	}
	e.mu.Unlock()
	if len(merged) == 0 {
		return
	}
	msgs := []core.Message{t.msg}
	for _, q := range merged {
		// As its own turn would: edits applied, a deleted one left out.
		if q.begin() {
			msgs = append(msgs, q.msg)
		}
	}
	// Each merged turn's journal entry goes once t's holds its message,
	// so a crash in between loses none of them.
	defer func() {
		if err := e.store.JournalPut(context.WithoutCancel(ctx), t.entry()); err != nil {
			e.log.WarnContext(ctx, "journal update of a collected turn failed", "turn", t.id, "err", err)
		}
		for _, q := range merged {
			e.forget(ctx, q)
		}
	}()
	several := false
	for _, m := range msgs {
		several = several || m.From.ID != t.msg.From.ID
	}
	var lines []string
	var atts []core.Attachment
	for _, m := range msgs {
		atts = append(atts, m.Attachments...)
		text := strings.TrimSpace(m.Text)
		switch {
		case text == "":
		case several:
			lines = append(lines, displayName(m.From)+": "+text)
		default:
			lines = append(lines, text)
		}
	}
	t.msg.Text, t.msg.Attachments = strings.Join(lines, "\n"), atts
	e.log.InfoContext(ctx, "queued messages collected into one turn", "conv", t.msg.Conv, "turn", t.id, "messages", len(msgs))
}

// sameChannel reports whether a and b are in the same channel of the same
// platform and workspace.
func sameChannel(a, b core.ConversationKey) bool {
	return a.Platform == b.Platform && a.Workspace == b.Workspace && a.Channel == b.Channel
}

// pressAnswer answers a button's presser privately. Someone who may not
// use the bot here hears why their press did nothing as they hear it for
// messages: once in a while.
func (e *Engine) pressAnswer(ctx context.Context, p core.Platform, a core.Action, text string) {
	ps := e.cfg().platform(p.Name())
	to := core.Message{Conv: a.Conv}
	if !ps.allowed(a.Conv, a.From.ID) && !ps.approver(a.From.ID) {
		e.refuse(ctx, p, a.Reply, to, a.From.ID, text)
		return
	}
	e.private(ctx, p, a.Reply, to, text)
}
