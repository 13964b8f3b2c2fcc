package store

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentbridge/agentbridge/core"
)

// recordVersion is the version every record is written with. A record
// format change bumps it and adds a schema migration that rewrites records.
const recordVersion = 1

// The records below are the on-disk JSON form of values. They carry their
// own field names so that renaming a core field does not silently change
// the file format.

// head is the version field every record starts with.
type head struct {
	V int `json:"v"`
}

func (h head) version() int { return h.V }

// versioned is a record pointer that decode can check.
type versioned interface{ version() int }

type convRec struct {
	Platform  string `json:"platform"`
	Workspace string `json:"workspace,omitempty"`
	Channel   string `json:"channel"`
	Thread    string `json:"thread,omitempty"`
}

func toConvRec(k core.ConversationKey) convRec {
	return convRec{Platform: k.Platform, Workspace: k.Workspace, Channel: k.Channel, Thread: k.Thread}
}

func (r convRec) key() core.ConversationKey {
	return core.ConversationKey{Platform: r.Platform, Workspace: r.Workspace, Channel: r.Channel, Thread: r.Thread}
}

type sessionRec struct {
	head
	Name      string    `json:"name"`
	AgentID   string    `json:"agent_id,omitempty"`
	Profile   string    `json:"profile,omitempty"`
	Turns     int       `json:"turns"`
	UpdatedAt time.Time `json:"updated_at"`
}

func toSessionRec(s core.Session) sessionRec {
	return sessionRec{head: head{recordVersion}, Name: s.Name, AgentID: s.AgentID, Profile: s.Profile, Turns: s.Turns, UpdatedAt: s.UpdatedAt}
}

func (r sessionRec) session() core.Session {
	return core.Session{Name: r.Name, AgentID: r.AgentID, Profile: r.Profile, Turns: r.Turns, UpdatedAt: r.UpdatedAt}
}

type activeRec struct {
	head
	Name string `json:"name"`
}

// seenRec holds times as Unix nanoseconds: MarkSeen is the hot path.
type seenRec struct {
	head
	At  int64 `json:"at"`  // first seen
	Exp int64 `json:"exp"` // At plus the ttl given then; pruning drops it after
}

type grantRec struct {
	head
	At time.Time `json:"at"`
}

type journalRec struct {
	head
	TurnID    string    `json:"turn_id"`
	Conv      convRec   `json:"conv"`
	MessageID string    `json:"message_id,omitempty"`
	ReplyConv convRec   `json:"reply_conv"`
	ReplyID   string    `json:"reply_id,omitempty"`
	StartedAt time.Time `json:"started_at"`
}

func toJournalRec(e core.JournalEntry) journalRec {
	return journalRec{
		head:      head{recordVersion},
		TurnID:    e.TurnID,
		Conv:      toConvRec(e.Conv),
		MessageID: e.MessageID,
		ReplyConv: toConvRec(e.Reply.Conv),
		ReplyID:   e.Reply.ID,
		StartedAt: e.StartedAt,
	}
}

func (r journalRec) entry() core.JournalEntry {
	return core.JournalEntry{
		TurnID:    r.TurnID,
		Conv:      r.Conv.key(),
		MessageID: r.MessageID,
		Reply:     core.MessageRef{Conv: r.ReplyConv.key(), ID: r.ReplyID},
		StartedAt: r.StartedAt,
	}
}

type cursorRec struct {
	head
	Value string `json:"value"`
}

// encode marshals a record. The records hold only strings, numbers and
// times, so an error means a bug, not bad input; it is still returned.
func encode(rec any) ([]byte, error) {
	b, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("encode record: %w", err)
	}
	return b, nil
}

// decode unmarshals b, which may point into the mapped file: json copies
// what it keeps, so nothing in rec aliases transaction memory.
func decode(b []byte, rec versioned) error {
	if err := json.Unmarshal(b, rec); err != nil {
		return fmt.Errorf("%w: record: %v", ErrCorrupt, err)
	}
	if v := rec.version(); v != recordVersion {
		return fmt.Errorf("%w: record version %d, want %d", ErrCorrupt, v, recordVersion)
	}
	return nil
}
