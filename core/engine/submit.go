package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/internal/tail"
)

// Origins of turns the bridge starts itself (Submission.Origin).
const (
	OriginSchedule = "schedule" // a schedules: entry fired
	OriginTrigger  = "trigger"  // an authenticated POST /v1/turns
)

// ErrUnknownPlatform is Submit's error for a conversation on a platform
// account that is not being served.
var ErrUnknownPlatform = errors.New("platform account not served")

// Submission is a turn nobody typed: a schedule's or an HTTP trigger's.
// It becomes an ordinary turn in its conversation — the same intake, queue,
// profile, session, streaming, permission prompts and journal as a chat
// message's — except that there is no sender: its permission prompts can be
// answered only by the platform's approvers (and otherwise time out to
// deny), its text is never a bridge command, and no access list applies
// (whoever configured the schedule or holds the trigger's token is the
// operator).
type Submission struct {
	Conv core.ConversationKey
	Text string
	// Profile, when set, runs the turn with this profile instead of the
	// conversation's route; Session, when set, in this named session of
	// the conversation instead of its active one (the active one is left
	// as it is).
	Profile, Session string
	// Origin is OriginSchedule or OriginTrigger; Name names the schedule.
	// Both go into logs, metrics and permission prompts.
	Origin, Name string
	// Done, when set, is called once with how the turn ended, or why it
	// never ran. It must not block.
	Done func(Result)
}

// Result is how a submitted turn ended.
type Result struct {
	TurnID string
	// Status is a TurnResults value when the turn ran, else "busy" (the
	// conversation's queue was full), "draining" (the bridge is shutting
	// down), "cancelled" (/stop or a shutdown dropped it while queued) or
	// "failed" (it could not start: a storage error, an unknown profile).
	Status string
	// Reply is the reply's text as the agent wrote it (Markdown), streamed
	// parts and final body together; Error the agent's failure, if any.
	Reply, Error string
}

// SubmitResults lists the statuses of Result beyond TurnResults, for
// metrics to show at zero.
var SubmitResults = []string{"busy", "draining", "cancelled", "failed"}

// maxCollected bounds the reply text a submitted turn keeps for its Result.
const maxCollected = 1 << 20

// Submit puts s on its conversation's intake, behind whatever that
// conversation has waiting, and returns the turn's id at once.
func (e *Engine) Submit(ctx context.Context, s Submission) (string, error) {
	e.mu.Lock()
	p := e.platforms[s.Conv.Platform]
	e.mu.Unlock()
	if p == nil {
		return "", fmt.Errorf("%w: %q", ErrUnknownPlatform, s.Conv.Platform)
	}
	id := newID()
	e.take(ctx, p, event{sub: &submitted{Submission: s, id: id}})
	return id, nil
}

// submitted is a Submission on its way: its turn id and what the turn
// collects for its Result.
type submitted struct {
	Submission
	id string

	mu     sync.Mutex
	result Result
	reply  strings.Builder
	once   sync.Once
}

// label names the submission for people: `schedule "daily"`, "the HTTP trigger".
func (s *submitted) label() string {
	if s.Origin == OriginSchedule {
		return fmt.Sprintf("schedule %q", s.Name)
	}
	return "the HTTP trigger"
}

// collect keeps streamed reply text for the Result.
func (s *submitted) collect(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reply.Len()+len(text) <= maxCollected {
		s.reply.WriteString(text)
	}
}

// set records how the turn ended (the last call wins until done).
func (s *submitted) set(status, reply, errText string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.result.Status, s.result.Error = status, errText
	if reply != "" {
		s.reply.WriteString(reply)
	}
}

// done reports the Result once.
func (s *submitted) done(obs Observer, platform string) {
	s.once.Do(func() {
		s.mu.Lock()
		r := s.result
		r.TurnID, r.Reply = s.id, s.reply.String()
		if r.Status == "" {
			r.Status = "failed"
		}
		s.mu.Unlock()
		obs.Submitted(platform, s.Origin, r.Status)
		if s.Done != nil {
			s.Done(r)
		}
	})
}

// handleSubmission queues a submitted turn on its conversation's intake;
// late is set when draining has begun.
func (e *Engine) handleSubmission(ctx context.Context, p core.Platform, sub *submitted, seq uint64, late bool) {
	s := e.cfg()
	ps := s.platform(p.Name())
	scope := ps.Scope
	if scope == core.ScopeUser {
		// No user: the channel's session is the one to share.
		scope = core.ScopeChannel
	}
	m := core.Message{Conv: sub.Conv, Text: sub.Text, From: core.User{Name: sub.label()}, Time: time.Now()}
	t := &turn{id: sub.id, plat: p, msg: m, key: scope.SessionKey(m.Conv, ""), queuedAt: m.Time, sub: sub, seq: seq, reply: tail.Buffer{Max: ReplyTailBytes}}
	log := e.log.With("conv", m.Conv, "turn", t.id, "origin", sub.Origin)
	if sub.Name != "" {
		log = log.With("schedule", sub.Name)
	}
	if late {
		sub.set("draining", "", "the bridge is shutting down")
		sub.done(e.opts.Observer, p.Name())
		log.WarnContext(ctx, "submitted turn not run: the bridge is shutting down")
		return
	}
	if err := e.store.JournalPut(ctx, core.JournalEntry{TurnID: t.id, Conv: m.Conv, StartedAt: t.queuedAt}); err != nil {
		sub.set("failed", "", "storage error: "+err.Error())
		sub.done(e.opts.Observer, p.Name())
		log.ErrorContext(ctx, "submitted turn not run: journal write failed", "err", err)
		return
	}
	log.InfoContext(ctx, "submitted turn queued")
	e.enqueue(ctx, t, s)
}

// requester is the prompt's last line: whose message asked.
func (t *turn) requester() string {
	if t.sub != nil {
		return "Requested by " + t.sub.label() + ": only an approver can answer."
	}
	return "Requested for " + displayName(t.msg.From) + "'s message."
}

// sessionOf returns the session t runs in: the submission's named one,
// else the conversation's active one.
func (e *Engine) sessionOf(ctx context.Context, t *turn) (string, core.Session, error) {
	if t.sub == nil || t.sub.Session == "" {
		return e.session(ctx, t.key)
	}
	sess, _, err := e.store.Session(ctx, t.key, t.sub.Session)
	if err != nil {
		return "", core.Session{}, err
	}
	sess.Name = t.sub.Session
	return t.sub.Session, sess, nil
}

// Schedules lists scheduled turns for /schedules. The scheduler that
// implements it lives outside core.
type Schedules interface {
	// Upcoming returns the schedules whose turns run in conv's channel,
	// ordered by their next run.
	Upcoming(conv core.ConversationKey) []Upcoming
}

// Upcoming is one schedule as /schedules shows it.
type Upcoming struct {
	Name     string
	Cron     string
	TimeZone string
	Conv     core.ConversationKey // where it posts
	Thread   string               // the thread it posts in; "" for the channel
	Next     time.Time            // in TimeZone
	Last     time.Time            // the last run; zero if none yet
	// Skipped is a missed run that was not caught up (outside the
	// catch-up window); zero if none since the last run.
	Skipped time.Time
	// Result is how the last run this process fired ended (a Result's
	// Status, and its error); "" before one ended.
	Result string
}

// schedules is /schedules' answer in conv.
func (e *Engine) schedules(conv core.ConversationKey) string {
	var list []Upcoming
	if e.opts.Schedules != nil {
		list = e.opts.Schedules.Upcoming(conv)
	}
	if len(list) == 0 {
		return "Nothing is scheduled in this channel."
	}
	const layout = "Mon 2006-01-02 15:04 MST"
	var b strings.Builder
	b.WriteString("Scheduled here:")
	for _, u := range list {
		fmt.Fprintf(&b, "\n• %s — %s (%s)", u.Name, u.Cron, u.TimeZone)
		if u.Thread != "" {
			fmt.Fprintf(&b, " in thread %s", u.Thread)
		}
		fmt.Fprintf(&b, ": next %s", u.Next.Format(layout))
		if !u.Last.IsZero() {
			fmt.Fprintf(&b, "; last ran %s", u.Last.In(u.Next.Location()).Format(layout))
		}
		if !u.Skipped.IsZero() {
			fmt.Fprintf(&b, "; skipped the run due %s (the bridge was down, beyond catch_up)", u.Skipped.In(u.Next.Location()).Format(layout))
		}
	}
	return b.String()
}
