package core

import (
	"context"
	"time"
)

// Session is one named agent session of a conversation.
type Session struct {
	Name string // "default" unless the user named it
	// Agents holds the agent's own session id by the name of the profile
	// whose agent produced it: an id is resumed only by that profile, so a
	// conversation moved to another profile starts a fresh agent session
	// there and finds its old one again when it moves back.
	Agents    map[string]string
	Profile   string    // profile of the latest turn
	Turns     int       // turns run in it
	UpdatedAt time.Time // last turn
	Usage     Usage     // what its finished turns reported (result.usage), summed
}

// UsageWindow is how long usage events are kept: the longest window a
// figure or a limit looks back over (the operator console's 30 days of
// usage, a day to spare).
const UsageWindow = 31 * 24 * time.Hour

// Usage is token and cost figures from agents' result.usage, summed over
// finished turns; Turns counts the turns, whether they reported usage or
// not.
type Usage struct {
	Turns        int
	InputTokens  int64
	OutputTokens int64
	CostUSD      float64
}

// Add adds o to u.
func (u *Usage) Add(o Usage) {
	u.Turns += o.Turns
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.CostUSD += o.CostUSD
}

// UsageEvent is one finished turn's usage, kept for UsageWindow: for the
// last 24 h figures, per-user limits and the console's usage charts.
type UsageEvent struct {
	At       time.Time
	Platform string // the account's name, as ConversationKey.Platform
	User     string // who sent the turn's message
	Profile  string // the profile that ran it; "" in events recorded before it was kept
	Usage    Usage
}

// AgentID returns the agent session id profile produced in s, "" if none.
func (s Session) AgentID(profile string) string { return s.Agents[profile] }

// WithAgentID returns s with id recorded for profile ("" forgets it). The
// map is copied, so s itself is unchanged.
func (s Session) WithAgentID(profile, id string) Session {
	agents := make(map[string]string, len(s.Agents)+1)
	for p, a := range s.Agents {
		agents[p] = a
	}
	if id == "" {
		delete(agents, profile)
	} else {
		agents[profile] = id
	}
	if len(agents) == 0 {
		agents = nil
	}
	s.Agents = agents
	return s
}

// JournalEntry records a turn in flight, so a restart can stop what is left
// of its agent and tell the chat the turn was interrupted instead of leaving
// a reply, a placeholder or a prompt's buttons stuck.
type JournalEntry struct {
	TurnID    string
	Conv      ConversationKey
	MessageID string // the user's message
	// Reply is the reply's message being written (the last one when the
	// reply spans several), once posted, with its text as last journaled.
	Reply Shown
	// Placeholder is true while Reply shows only the "thinking…" placeholder,
	// so recovery can replace it rather than append to it.
	Placeholder bool
	// Prompts are the turn's permission prompts still waiting for an answer.
	Prompts []Shown
	// Agent is the turn's agent process group once it started.
	Agent ProcessRef
	// Remote is the container or pod an isolated turn's agent runs in,
	// recorded before the agent starts: a killed bridge cannot stop it,
	// so recovery removes it.
	Remote    RemoteRef
	StartedAt time.Time // when the message was accepted

	// Message is the user's message as accepted (its Conv, ID, author,
	// text, attachments, Addressed and Time), so that a turn whose agent
	// never started runs after a restart, and one that had started can be
	// retried; nil for a turn nobody typed and for entries written before
	// it was kept.
	Message *Message
	// Key is the session key the turn runs under, as resolved when the
	// message was accepted.
	Key ConversationKey
	// Notice is the "queued" notice answering the message, once posted.
	Notice MessageRef
	// Running is set, durably, before the turn's agent may start: from then
	// on the turn is never run again on its own (its tools may have acted).
	Running bool
}

// Waiting reports whether the entry's turn never began (its agent never
// started and nothing of its answer was shown) and can run after a
// restart as if nothing had happened.
func (e JournalEntry) Waiting() bool {
	return e.Message != nil && !e.Running && e.Agent.PID == 0 && e.Reply.Ref.ID == "" && len(e.Prompts) == 0
}

// RetryKeep is how long a "↻ Retry" offered after an interrupted turn can
// be pressed.
const RetryKeep = 7 * 24 * time.Hour

// Retry is what a "↻ Retry" button needs to run an interrupted turn's
// message again: kept under the button's value until pressed or until
// RetryKeep has passed.
type Retry struct {
	Message Message         // the user's message, as JournalEntry.Message
	Key     ConversationKey // the session key it ran under
	// Notice is the interrupted notice carrying the button, and what it
	// shows, so a press can take the button off.
	Notice Shown
	At     time.Time // when it was offered
	Used   bool      // pressed once already
}

// RemoteRef names a container or pod (internal/isolate): the runtime's
// client (docker, podman or kubectl), the name, and for a pod its
// namespace ("" = the context's). The zero value names none.
type RemoteRef struct {
	Runtime   string
	Name      string
	Namespace string
}

// Shown is a message the bridge posted and what it shows: Text is in the
// platform's dialect (or plain text when Plain), as sent.
type Shown struct {
	Ref   MessageRef
	Text  string
	Plain bool
}

// ProcessRef names a process group beyond its id, which the kernel reuses:
// PID is the group's leader (and the group id), StartTicks the leader's
// start time in clock ticks after boot (field 22 of /proc/PID/stat) and
// BootID the boot it ran in (/proc/sys/kernel/random/boot_id). The zero
// value names no process.
type ProcessRef struct {
	PID        int
	StartTicks uint64
	BootID     string
}

// Store persists what must outlive the process. Implementations are safe for
// concurrent use. Calls block on disk I/O; ctx is checked before each.
type Store interface {
	// ActiveSession returns the active session name of conv ("" when none
	// was chosen yet, meaning "default").
	ActiveSession(ctx context.Context, conv ConversationKey) (string, error)
	// SetActiveSession makes name the active session of conv.
	SetActiveSession(ctx context.Context, conv ConversationKey, name string) error
	// Session returns conv's named session; ok is false if it does not exist.
	Session(ctx context.Context, conv ConversationKey, name string) (s Session, ok bool, err error)
	// PutSession creates or replaces conv's session s.Name.
	PutSession(ctx context.Context, conv ConversationKey, s Session) error
	// Sessions lists conv's sessions ordered by name.
	Sessions(ctx context.Context, conv ConversationKey) ([]Session, error)
	// ResetSession forgets every agent session id of conv's named session and
	// every "allow for this session" grant made in it.
	ResetSession(ctx context.Context, conv ConversationKey, name string) error
	// DeleteSession deletes conv's named session and its grants; found
	// reports whether it existed.
	DeleteSession(ctx context.Context, conv ConversationKey, name string) (found bool, err error)
	// RecordUsage keeps ev for a little over UsageWindow; older events
	// are dropped as new ones come.
	RecordUsage(ctx context.Context, ev UsageEvent) error
	// UsageSince returns the events recorded at or after since, oldest
	// first.
	UsageSince(ctx context.Context, since time.Time) ([]UsageEvent, error)

	// MarkSeen records a platform message id and reports whether it had
	// already been seen within ttl. It is atomic: of two concurrent calls
	// with one id, exactly one reports false.
	MarkSeen(ctx context.Context, platform, messageID string, ttl time.Duration) (seen bool, err error)

	// Accept is MarkSeen and, only when the id is new, JournalPut of e, in
	// one write: a turn's first durable step costs one disk sync.
	Accept(ctx context.Context, platform, messageID string, ttl time.Duration, e JournalEntry) (seen bool, err error)

	// Grant remembers "allow tool for this session" for user: the person
	// who granted it, whose later requests it covers (nobody else's).
	Grant(ctx context.Context, conv ConversationKey, session, user, tool string) error
	// Granted reports whether Grant was called for this session, user and
	// tool.
	Granted(ctx context.Context, conv ConversationKey, session, user, tool string) (bool, error)

	// JournalPut records or updates a turn in flight.
	JournalPut(ctx context.Context, e JournalEntry) error
	// JournalDelete removes a finished turn.
	JournalDelete(ctx context.Context, turnID string) error
	// Journal lists the turns in flight, oldest first.
	Journal(ctx context.Context) ([]JournalEntry, error)

	// RetryPut keeps r under token (a button's value), replacing what was
	// there, and drops retries offered more than RetryKeep ago.
	RetryPut(ctx context.Context, token string, r Retry) error
	// Retry returns the retry kept under token; ok is false when there is
	// none (never offered, or expired).
	Retry(ctx context.Context, token string) (r Retry, ok bool, err error)

	Cursors
}

// Cursors keeps adapters' positions under names each adapter chooses: all
// an adapter needs of the Store.
type Cursors interface {
	// Cursor returns an adapter's saved position (e.g. a Telegram update
	// offset) under name; "" when none.
	Cursor(ctx context.Context, name string) (string, error)
	// SetCursor saves an adapter's position.
	SetCursor(ctx context.Context, name, value string) error
}
