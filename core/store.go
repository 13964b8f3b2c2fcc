package core

import (
	"context"
	"time"
)

// Session is one named agent session of a conversation.
type Session struct {
	Name      string    // "default" unless the user named it
	AgentID   string    // the agent's own session id; "" before its first turn
	Profile   string    // profile name that created it
	Turns     int       // turns run in it
	UpdatedAt time.Time // last turn
}

// JournalEntry records a turn in flight, so a restart can tell the chat the
// turn was interrupted instead of leaving a reply stuck.
type JournalEntry struct {
	TurnID    string
	Conv      ConversationKey
	MessageID string     // the user's message
	Reply     MessageRef // the bridge's reply message, once posted
	// Placeholder is true while Reply shows only the "thinking…" placeholder,
	// so recovery can replace it without losing streamed text.
	Placeholder bool
	StartedAt   time.Time // when the message was accepted
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
	// ResetSession forgets the agent session id of conv's named session and
	// every "allow for this session" grant made in it.
	ResetSession(ctx context.Context, conv ConversationKey, name string) error

	// MarkSeen records a platform message id and reports whether it had
	// already been seen within ttl. It is atomic: of two concurrent calls
	// with one id, exactly one reports false.
	MarkSeen(ctx context.Context, platform, messageID string, ttl time.Duration) (seen bool, err error)

	// Accept is MarkSeen and, only when the id is new, JournalPut of e, in
	// one write: a turn's first durable step costs one disk sync.
	Accept(ctx context.Context, platform, messageID string, ttl time.Duration, e JournalEntry) (seen bool, err error)

	// Grant remembers "allow tool for this session".
	Grant(ctx context.Context, conv ConversationKey, session, tool string) error
	// Granted reports whether Grant was called for this session and tool.
	Granted(ctx context.Context, conv ConversationKey, session, tool string) (bool, error)

	// JournalPut records or updates a turn in flight.
	JournalPut(ctx context.Context, e JournalEntry) error
	// JournalDelete removes a finished turn.
	JournalDelete(ctx context.Context, turnID string) error
	// Journal lists the turns in flight, oldest first.
	Journal(ctx context.Context) ([]JournalEntry, error)

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
