package engine

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/lane"
)

// Live is one conversation with a running or queued turn, as an operator
// sees it (Snapshot). It is a copy: nothing in it changes afterwards.
type Live struct {
	// Key is the conversation's lane (and session) key: what Stop and
	// CancelQueued take.
	Key core.ConversationKey
	// Conv is where the turn's message was sent.
	Conv core.ConversationKey
	// From is who asked: the sender of the running turn's message, or of
	// the first queued one; Origin is set instead for a turn nobody typed.
	From   core.User
	Origin string
	// Profile and Session are those of the running turn; "" before it has
	// picked them.
	Profile, Session string
	// Running is set while a turn runs (Started is when its lane took it
	// up); WaitsForSlot while it waits for a free agent slot.
	Running      bool
	WaitsForSlot bool
	Started      time.Time
	// Queued counts the messages waiting behind it.
	Queued int
	// Reply is the end of the reply so far (ReplyTailBytes at most).
	Reply string
	// Prompt is the permission prompt the turn waits on, "" if none.
	Prompt string
}

// ReplyTailBytes is how much of a running turn's reply Snapshot keeps.
const ReplyTailBytes = 2048

// Snapshot returns the conversations with a running or queued turn, the
// longest-running first. No lock is held once it returns.
func (e *Engine) Snapshot() []Live {
	byKey := map[core.ConversationKey]*turn{}
	first := map[core.ConversationKey]*turn{} // the oldest queued turn, where none runs
	var prompts []*prompt
	e.mu.Lock()
	for k, t := range e.running {
		byKey[k] = t
	}
	for _, t := range e.queued {
		if f := first[t.key]; f == nil || t.queuedAt.Before(f.queuedAt) {
			first[t.key] = t
		}
	}
	for _, p := range e.prompts {
		prompts = append(prompts, p)
	}
	e.mu.Unlock()
	for k, t := range first {
		if byKey[k] == nil {
			byKey[k] = t
		}
	}

	out := make([]Live, 0, len(byKey))
	for k, t := range byKey {
		r, running, queued := e.lanes.Status(k)
		if !running && queued == 0 {
			continue // it ended meanwhile
		}
		l := Live{Key: k, Conv: t.msg.Conv, From: t.msg.From, Running: running, Queued: queued}
		if running {
			l.Started = r.Started
		}
		if t.sub != nil {
			l.From, l.Origin = core.User{}, t.sub.label()
		}
		t.mu.Lock()
		l.Profile, l.Session, l.WaitsForSlot = t.profileName, t.sessionName, t.slot != nil
		t.mu.Unlock()
		l.Reply = t.reply.String()
		for _, p := range prompts {
			p.mu.Lock()
			open := p.turn == t && p.outcome == "" && !p.settled
			p.mu.Unlock()
			if open {
				l.Prompt = p.text
			}
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b Live) int {
		if a.Started.IsZero() != b.Started.IsZero() {
			return cmp.Compare(btoi(a.Started.IsZero()), btoi(b.Started.IsZero())) // running first
		}
		if c := a.Started.Compare(b.Started); c != 0 {
			return c
		}
		return strings.Compare(a.Key.Slug(), b.Key.Slug())
	})
	return out
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Stop is the chat's stop command for an operator (who is named in the
// log): it stops key's running turn and cancels the messages queued
// behind it, and the conversation is told exactly what the chat's own
// stop says. It reports whether a turn was running and how many queued
// messages were cancelled.
func (e *Engine) Stop(ctx context.Context, key core.ConversationKey, operator string) (stopped bool, cancelled int) {
	return e.operatorStop(ctx, key, operator, false)
}

// CancelQueued cancels the messages queued behind key's running turn,
// which goes on, telling their senders as the stop command does.
func (e *Engine) CancelQueued(ctx context.Context, key core.ConversationKey, operator string) int {
	_, n := e.operatorStop(ctx, key, operator, true)
	return n
}

func (e *Engine) operatorStop(ctx context.Context, key core.ConversationKey, operator string, queuedOnly bool) (bool, int) {
	// The answer goes where the chat's /stop would be answered: in the
	// conversation of the turn it stops.
	e.mu.Lock()
	t := e.running[key]
	if t == nil {
		for _, q := range e.queued {
			if q.key == key && (t == nil || q.queuedAt.Before(t.queuedAt)) {
				t = q
			}
		}
	}
	e.mu.Unlock()
	if t == nil {
		return false, 0
	}
	stopped, n, answer := e.stopLane(ctx, key, queuedOnly)
	e.log.InfoContext(ctx, "operator stop", "operator", operator, "conv", key, "stopped", stopped, "cancelled", n, "queued_only", queuedOnly)
	if answer != "" && (stopped || n > 0) { // "Nothing is running" is for the chat's own /stop
		e.say(ctx, t.plat, core.Message{Conv: t.msg.Conv, ID: t.msg.ID}, answer)
	}
	return stopped, n
}

// stopLane is the stop command on key's lane: it stops the running turn
// (unless queuedOnly) and cancels the messages queued behind it, telling
// their senders, and returns the command's answer ("" when the stopped
// turn's own reply says it all).
func (e *Engine) stopLane(ctx context.Context, key core.ConversationKey, queuedOnly bool) (stopped bool, cancelled int, answer string) {
	var dropped []lane.Job
	if queuedOnly {
		dropped = e.lanes.TakeWhile(key, func(lane.Job) bool { return true })
	} else {
		stopped, dropped = e.lanes.Stop(key, ErrStoppedByUser, true)
	}
	e.mu.Lock()
	delete(e.collecting, key) // the burst it counted is gone
	e.mu.Unlock()
	e.dropped(ctx, dropped, textStopCancelled)
	return stopped, len(dropped), stopAnswer(stopped, len(dropped))
}

// textStopCancelled tells the sender of a queued message the stop
// command cancelled.
const textStopCancelled = "⏹ Cancelled: /stop was sent before this message ran."

// stopAnswer is the stop command's answer, "" when the stopped turn's own
// reply says it all.
func stopAnswer(stopped bool, dropped int) string {
	switch {
	case stopped && dropped > 0:
		return fmt.Sprintf("⏹ Stopping the running turn; also cancelled %d queued message(s).", dropped)
	case stopped:
		return "" // the turn's own reply says "Stopped." once the agent is gone
	case dropped > 0:
		return fmt.Sprintf("⏹ Cancelled %d queued message(s).", dropped)
	}
	return "Nothing is running."
}

// Failure is one turn that failed, as Failures lists it.
type Failure struct {
	At      time.Time
	TurnID  string
	Conv    core.ConversationKey
	MsgID   string // the message that started it; "" for a submitted turn
	From    core.User
	Origin  string // for a turn nobody typed
	Profile string
	// Kind is how it failed: "timeout", "start_failed", "error" or
	// "reply_lost".
	Kind  string
	Error string
}

// FailuresKept is how many failures Failures remembers (in memory: a
// restart forgets them).
const FailuresKept = 100

// failures is a bounded ring of the latest failed turns.
type failures struct {
	mu   sync.Mutex
	list []Failure // oldest first
}

func (f *failures) add(x Failure) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.list) >= FailuresKept {
		f.list = slices.Delete(f.list, 0, len(f.list)-FailuresKept+1)
	}
	f.list = append(f.list, x)
}

// Failures returns the latest failed turns, newest first (FailuresKept at
// most, since the bridge started).
func (e *Engine) Failures() []Failure {
	e.failed.mu.Lock()
	out := slices.Clone(e.failed.list)
	e.failed.mu.Unlock()
	slices.Reverse(out)
	return out
}

// fail records t's failure.
func (e *Engine) fail(t *turn, profile, kind, text string) {
	f := Failure{At: time.Now(), TurnID: t.id, Conv: t.msg.Conv, MsgID: t.msg.ID, From: t.msg.From, Profile: profile, Kind: kind, Error: text}
	if t.sub != nil {
		f.From, f.Origin = core.User{}, t.sub.label()
	}
	e.failed.add(f)
}
