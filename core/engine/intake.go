package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/lane"
)

// The intake: every event an adapter hands over (HandleMessage,
// HandleAction) goes on its conversation's ordered intake and the adapter's
// call returns at once. A conversation's events are then handled one at a
// time, in the order they were handed over — dedup, access, journaling,
// commands, notices, queueing the turn — by a worker that exists only
// while the conversation has events waiting (core/lane), so conversations
// never wait on each other and an idle one costs no goroutine. The intake
// is separate from the turn lanes: a conversation's next message is
// answered "queued" or "busy" while its turn runs.
const (
	// intakeDepth bounds the events of one conversation waiting to be
	// handled. Handling one is quick unless its notice waits out a rate
	// limit; a flood beyond it is dropped, with one busy notice per burst.
	intakeDepth = 1000
	// intakeTotal bounds the events waiting over all conversations.
	intakeTotal = 20_000
	// refusalEvery is how often one user who is not allowed is told so;
	// their other messages meanwhile are dropped without an answer (and
	// counted), so a stranger cannot spend a chat's rate budget.
	refusalEvery = 5 * time.Minute
	// quietMax bounds the maps that remember who was told what; past it
	// they are cleared (the worst case is one notice too many).
	quietMax = 10_000
)

// Notices sent once per burst in a conversation, and refusals.
const (
	textBusy     = "🚦 Busy: %d messages are already waiting here, so this one and any more sent before the current answer is done are dropped. Please send them again then."
	textOverflow = "🚦 Busy: too many messages arrived here at once, so some were dropped. Please send them again when the current answer is done."
	textDraining = "⏳ The bridge is restarting and not taking new messages. Please send this again in a minute."
	textRefusal  = "🔒 Sorry, you are not allowed to use this bot. Your %s user id is %s: ask the operator to add it to allow_users."
)

// Kinds of notice the engine sends once per burst (see Engine.once).
const (
	quietBusy     = "busy"     // until a message of the conversation is queued again
	quietDraining = "draining" // for the rest of the drain
)

// event is one message or button press waiting on its conversation's intake.
type event struct {
	p   core.Platform
	msg core.Message
	act *core.Action
	sub *submitted // a turn nobody typed (Submit)
	seq uint64     // the order it was handed over in, over all conversations
	// early is set for events handed over before draining began: they are
	// handled as usual, and Shutdown waits for them.
	early bool
}

func (ev *event) conv() core.ConversationKey {
	if ev.act != nil {
		return ev.act.Conv
	}
	if ev.sub != nil {
		return ev.sub.Conv
	}
	return ev.msg.Conv
}

// take puts ev on its conversation's intake. It never blocks on the
// platform or the store.
func (e *Engine) take(ctx context.Context, p core.Platform, ev event) {
	ev.p = p
	ev.seq = e.arrivals.Add(1)
	conv := ev.conv()
	if ev.act == nil {
		// A turn may come of it: later ones get no agent slot first.
		e.slots.arrive(ev.seq)
	}
	ev.early = e.gate.enter()
	_, err := e.intake.Enqueue(conv, lane.Job{Run: func(jctx context.Context) {
		defer e.gate.leave(ev.early)
		defer e.slots.settle(ev.seq) // every path not handed to a lane
		e.handle(jctx, ev)
		if ev.msg.Handled != nil {
			ev.msg.Handled()
		}
		if m, ok := e.takeOverflow(conv); ok {
			e.refuseBusy(jctx, ev.p, m, textOverflow)
		}
	}})
	if err == nil {
		return
	}
	e.gate.leave(ev.early)
	e.slots.settle(ev.seq)
	result := "overflow"
	if errors.Is(err, lane.ErrClosed) {
		result = "draining" // the engine has shut down
	}
	if ev.sub != nil {
		status := "busy"
		if result == "draining" {
			status = "draining"
		}
		ev.sub.set(status, "", "")
		ev.sub.done(e.opts.Observer, p.Name())
		e.log.WarnContext(ctx, "intake full or closed; submitted turn not run", "conv", conv, "turn", ev.sub.id, "result", result)
		return
	}
	if ev.act != nil {
		if ev.act.Reply != nil {
			ev.act.Reply("") // the contract: every press is answered
		}
		return
	}
	if ev.msg.Handled != nil {
		ev.msg.Handled()
	}
	e.opts.Observer.Message(p.Name(), result)
	if result == "overflow" {
		e.log.WarnContext(ctx, "intake full; message dropped", "conv", conv, "message", ev.msg.ID)
		e.mu.Lock()
		// A conversation refused by the total bound may have nothing
		// queued to send the notice; quietMax bounds those entries.
		if _, pending := e.overflowed[conv]; !pending && len(e.overflowed) < quietMax {
			e.overflowed[conv] = ev.msg
		}
		e.mu.Unlock()
	}
}

// takeOverflow returns the first message dropped from conv's full intake
// since the last call, if any, for the busy notice. A conversation whose
// intake overflowed has events queued, so a later event's worker finds it.
func (e *Engine) takeOverflow(conv core.ConversationKey) (core.Message, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	m, ok := e.overflowed[conv]
	delete(e.overflowed, conv)
	return m, ok
}

// handle handles one event on its conversation's intake worker.
func (e *Engine) handle(ctx context.Context, ev event) {
	if ev.sub != nil {
		e.handleSubmission(ctx, ev.p, ev.sub, ev.seq, !ev.early)
		return
	}
	if ev.act == nil {
		e.handleMessage(ctx, ev.p, ev.msg, ev.seq, !ev.early)
		return
	}
	a := *ev.act
	if reply := a.Reply; reply != nil {
		var once sync.Once
		a.Reply = func(text string) { once.Do(func() { reply(text) }) }
		defer a.Reply("") // answers the press if nothing else did
	}
	e.handleAction(ctx, ev.p, a)
}

// refuseBusy tells m's sender that the conversation is busy, once per
// burst: until a message of the conversation is queued again, later busy
// messages are dropped without a notice, so the notices cannot spend the
// chat's rate budget. Each is counted.
func (e *Engine) refuseBusy(ctx context.Context, p core.Platform, m core.Message, text string) {
	e.opts.Observer.Message(p.Name(), "busy")
	if e.once(quietBusy, m.Conv) {
		e.say(ctx, p, m, text)
	}
}

type quietKey struct {
	kind string
	conv core.ConversationKey
}

// once reports whether the notice kind has not been sent in conv since it
// was last reset, and marks it sent.
func (e *Engine) once(kind string, conv core.ConversationKey) bool {
	k := quietKey{kind, conv}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, sent := e.quiet[k]; sent {
		return false
	}
	if len(e.quiet) >= quietMax {
		clear(e.quiet)
	}
	e.quiet[k] = struct{}{}
	return true
}

// reset lets the notice kind be sent in conv again.
func (e *Engine) reset(kind string, conv core.ConversationKey) {
	e.mu.Lock()
	delete(e.quiet, quietKey{kind, conv})
	e.mu.Unlock()
}

// mayRefuse reports whether user of platform may be told now that they are
// not allowed: once per refusalEvery.
func (e *Engine) mayRefuse(platform, user string) bool {
	k := platform + "\x00" + user
	now := time.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	if at, ok := e.refused[k]; ok && now.Sub(at) < refusalEvery {
		return false
	}
	if len(e.refused) >= quietMax {
		for k, at := range e.refused {
			if now.Sub(at) >= refusalEvery {
				delete(e.refused, k)
			}
		}
		if len(e.refused) >= quietMax {
			clear(e.refused)
		}
	}
	e.refused[k] = now
	return true
}

// refuse tells user privately why they were turned away (text), at most
// once per refusalEvery (mayRefuse), and reports whether it did: the one
// rule for refusals, of messages and of button presses alike, so a
// stranger's flood gets one answer and cannot spend the chat's rate budget.
func (e *Engine) refuse(ctx context.Context, p core.Platform, reply core.PrivateReply, to core.Message, user, text string) bool {
	if !e.mayRefuse(p.Name(), user) {
		return false
	}
	e.private(ctx, p, reply, to, text)
	return true
}

// private answers one person where only they see it when the event came
// with a way to (reply), otherwise as a notice answering to (its Conv, and
// its ID and Answer when it is a message). It is the engine's one path for
// private answers.
func (e *Engine) private(ctx context.Context, p core.Platform, reply core.PrivateReply, to core.Message, text string) {
	if reply != nil {
		reply(text)
		return
	}
	e.say(ctx, p, to, text)
}

// drainGate separates the events handed over before Shutdown began from
// later ones, and lets Shutdown wait for the former.
type drainGate struct {
	mu       sync.Mutex
	draining bool
	early    int           // early events not yet handled
	begun    chan struct{} // closed when draining begins
	done     chan struct{} // closed once draining and early == 0
}

func newDrainGate() *drainGate {
	return &drainGate{begun: make(chan struct{}), done: make(chan struct{})}
}

// enter counts an event in and reports whether it is early.
func (g *drainGate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.draining {
		return false
	}
	g.early++
	return true
}

// leave counts an event out once it was handled (or dropped).
func (g *drainGate) leave(early bool) {
	if !early {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.early--
	if g.draining && g.early == 0 {
		close(g.done)
	}
}

// begin starts draining; later events are not early.
func (g *drainGate) begin() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.draining {
		return
	}
	g.draining = true
	close(g.begun)
	if g.early == 0 {
		close(g.done)
	}
}

// wait returns once every early event was handled, or ctx ends.
func (g *drainGate) wait(ctx context.Context) error {
	select {
	case <-g.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
