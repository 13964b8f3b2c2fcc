package store

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentbridge/agentbridge/core"
)

// recordVersion is the version records are written with unless their type
// says otherwise (wantVersion). A record format change bumps the version of
// that record type and adds a schema migration that rewrites its records.
const recordVersion = 1

// sessionVersion is the version of session records: 2 keeps an agent id per
// profile (schema 2), where 1 kept one id and the profile that made it.
const sessionVersion = 2

// The records below are the on-disk JSON form of values. They carry their
// own field names so that renaming a core field does not silently change
// the file format.

// head is the version field every record starts with.
type head struct {
	V int `json:"v"`
}

func (h head) version() int { return h.V }

// wantVersion is the version decode accepts; record types written with
// another version override it.
func (h head) wantVersion() int { return recordVersion }

// versioned is a record pointer that decode can check.
type versioned interface {
	version() int
	wantVersion() int
}

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
	Name      string            `json:"name"`
	Agents    map[string]string `json:"agents,omitempty"` // agent session id by profile
	Profile   string            `json:"profile,omitempty"`
	Turns     int               `json:"turns"`
	UpdatedAt time.Time         `json:"updated_at"`
	Usage     *usageRec         `json:"usage,omitempty"` // schema 3; absent = none
}

func (sessionRec) wantVersion() int { return sessionVersion }

func toSessionRec(s core.Session) sessionRec {
	r := sessionRec{head: head{sessionVersion}, Name: s.Name, Agents: s.Agents, Profile: s.Profile, Turns: s.Turns, UpdatedAt: s.UpdatedAt}
	if s.Usage != (core.Usage{}) {
		u := toUsageRec(s.Usage)
		r.Usage = &u
	}
	return r
}

func (r sessionRec) session() core.Session {
	s := core.Session{Name: r.Name, Agents: r.Agents, Profile: r.Profile, Turns: r.Turns, UpdatedAt: r.UpdatedAt}
	if r.Usage != nil {
		s.Usage = r.Usage.usage()
	}
	return s
}

// usageRec is summed usage inside a session record or a usage event.
type usageRec struct {
	Turns        int     `json:"turns,omitempty"`
	InputTokens  int64   `json:"in,omitempty"`
	OutputTokens int64   `json:"out,omitempty"`
	CostUSD      float64 `json:"cost_usd,omitempty"`
}

func toUsageRec(u core.Usage) usageRec {
	return usageRec{Turns: u.Turns, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CostUSD: u.CostUSD}
}

func (r usageRec) usage() core.Usage {
	return core.Usage{Turns: r.Turns, InputTokens: r.InputTokens, OutputTokens: r.OutputTokens, CostUSD: r.CostUSD}
}

// usageEventRec is one turn's usage in the usage bucket, keyed by time.
type usageEventRec struct {
	head
	At       int64    `json:"at"` // Unix nanoseconds
	Platform string   `json:"platform"`
	User     string   `json:"user,omitempty"`
	Profile  string   `json:"profile,omitempty"`
	Usage    usageRec `json:"usage"`
}

// sessionRecV1 is a session record of schema 1: one agent id, and the
// profile of the turn that saved it.
type sessionRecV1 struct {
	head
	Name      string    `json:"name"`
	AgentID   string    `json:"agent_id,omitempty"`
	Profile   string    `json:"profile,omitempty"`
	Turns     int       `json:"turns"`
	UpdatedAt time.Time `json:"updated_at"`
}

// upgrade files a v1 record's id under the profile that saved it. An id
// without a profile cannot be attributed and is dropped: resuming it with
// the wrong agent is the failure schema 2 exists to prevent.
func (r sessionRecV1) upgrade() sessionRec {
	s := core.Session{Name: r.Name, Profile: r.Profile, Turns: r.Turns, UpdatedAt: r.UpdatedAt}
	if r.Profile != "" {
		s = s.WithAgentID(r.Profile, r.AgentID)
	}
	return toSessionRec(s)
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

// journalRec is a turn in flight. The fields after reply_id came with
// schema 2; they are optional, so v1 entries read as entries without them.
type journalRec struct {
	head
	TurnID      string     `json:"turn_id"`
	Conv        convRec    `json:"conv"`
	MessageID   string     `json:"message_id,omitempty"`
	ReplyConv   convRec    `json:"reply_conv"`
	ReplyID     string     `json:"reply_id,omitempty"`
	ReplyText   string     `json:"reply_text,omitempty"`
	ReplyPlain  bool       `json:"reply_plain,omitempty"`
	Placeholder bool       `json:"placeholder,omitempty"`
	Prompts     []shownRec `json:"prompts,omitempty"`
	AgentPID    int        `json:"agent_pid,omitempty"`
	AgentStart  uint64     `json:"agent_start,omitempty"` // clock ticks after boot
	BootID      string     `json:"boot_id,omitempty"`
	Remote      *remoteRec `json:"remote,omitempty"`
	StartedAt   time.Time  `json:"started_at"`
	// Optional; an entry without them is reported as interrupted, never
	// run again.
	Message *messageRec `json:"message,omitempty"`
	Key     *convRec    `json:"key,omitempty"`
	Notice  *shownRec   `json:"notice,omitempty"`
	Running bool        `json:"running,omitempty"`
}

// messageRec is a user's message kept to run (or retry) its turn.
type messageRec struct {
	Conv        convRec   `json:"conv"`
	ID          string    `json:"id,omitempty"`
	FromID      string    `json:"from_id,omitempty"`
	FromName    string    `json:"from_name,omitempty"`
	Text        string    `json:"text,omitempty"`
	Attachments []attRec  `json:"attachments,omitempty"`
	Addressed   bool      `json:"addressed,omitempty"`
	Time        time.Time `json:"time,omitzero"`
}

// attRec is an attachment's metadata; Source is the adapter's download
// handle.
type attRec struct {
	Kind   string `json:"kind,omitempty"`
	Name   string `json:"name,omitempty"`
	MIME   string `json:"mime,omitempty"`
	Size   int64  `json:"size,omitempty"`
	Source string `json:"source,omitempty"`
	// Duration is a voice note's length, for its transcription limit.
	Duration time.Duration `json:"duration,omitempty"`
}

func toMessageRec(m core.Message) messageRec {
	r := messageRec{Conv: toConvRec(m.Conv), ID: m.ID, FromID: m.From.ID, FromName: m.From.Name, Text: m.Text, Addressed: m.Addressed, Time: m.Time}
	for _, a := range m.Attachments {
		r.Attachments = append(r.Attachments, attRec(a))
	}
	return r
}

func (r messageRec) message() core.Message {
	m := core.Message{Conv: r.Conv.key(), ID: r.ID, From: core.User{ID: r.FromID, Name: r.FromName}, Text: r.Text, Addressed: r.Addressed, Time: r.Time}
	for _, a := range r.Attachments {
		m.Attachments = append(m.Attachments, core.Attachment(a))
	}
	return m
}

// retryRec is a "↻ Retry" offered after an interrupted turn.
type retryRec struct {
	head
	Message messageRec `json:"message"`
	Key     convRec    `json:"key"`
	Notice  shownRec   `json:"notice"`
	At      int64      `json:"at"` // Unix nanoseconds
	Used    bool       `json:"used,omitempty"`
}

func toRetryRec(r core.Retry) retryRec {
	return retryRec{head: head{recordVersion}, Message: toMessageRec(r.Message), Key: toConvRec(r.Key),
		Notice: toShownRec(r.Notice), At: r.At.UnixNano(), Used: r.Used}
}

func (r retryRec) retry() core.Retry {
	return core.Retry{Message: r.Message.message(), Key: r.Key.key(), Notice: r.Notice.shown(), At: time.Unix(0, r.At), Used: r.Used}
}

// remoteRec is an isolated turn's container or pod (core.RemoteRef).
type remoteRec struct {
	Runtime   string `json:"runtime"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

type shownRec struct {
	Conv  convRec `json:"conv"`
	ID    string  `json:"id"`
	Text  string  `json:"text,omitempty"`
	Plain bool    `json:"plain,omitempty"`
}

func toShownRec(s core.Shown) shownRec {
	return shownRec{Conv: toConvRec(s.Ref.Conv), ID: s.Ref.ID, Text: s.Text, Plain: s.Plain}
}

func (r shownRec) shown() core.Shown {
	return core.Shown{Ref: core.MessageRef{Conv: r.Conv.key(), ID: r.ID}, Text: r.Text, Plain: r.Plain}
}

func toJournalRec(e core.JournalEntry) journalRec {
	r := journalRec{
		head:        head{recordVersion},
		TurnID:      e.TurnID,
		Conv:        toConvRec(e.Conv),
		MessageID:   e.MessageID,
		ReplyConv:   toConvRec(e.Reply.Ref.Conv),
		ReplyID:     e.Reply.Ref.ID,
		ReplyText:   e.Reply.Text,
		ReplyPlain:  e.Reply.Plain,
		Placeholder: e.Placeholder,
		AgentPID:    e.Agent.PID,
		AgentStart:  e.Agent.StartTicks,
		BootID:      e.Agent.BootID,
		StartedAt:   e.StartedAt,
	}
	if e.Remote != (core.RemoteRef{}) {
		r.Remote = &remoteRec{Runtime: e.Remote.Runtime, Name: e.Remote.Name, Namespace: e.Remote.Namespace}
	}
	for _, p := range e.Prompts {
		r.Prompts = append(r.Prompts, toShownRec(p))
	}
	if e.Message != nil {
		m, k := toMessageRec(*e.Message), toConvRec(e.Key)
		r.Message, r.Key = &m, &k
	}
	if e.Notice.ID != "" {
		n := toShownRec(core.Shown{Ref: e.Notice})
		r.Notice = &n
	}
	r.Running = e.Running
	return r
}

func (r journalRec) entry() core.JournalEntry {
	e := core.JournalEntry{
		TurnID:    r.TurnID,
		Conv:      r.Conv.key(),
		MessageID: r.MessageID,
		Reply: core.Shown{
			Ref:  core.MessageRef{Conv: r.ReplyConv.key(), ID: r.ReplyID},
			Text: r.ReplyText, Plain: r.ReplyPlain,
		},
		Placeholder: r.Placeholder,
		Agent:       core.ProcessRef{PID: r.AgentPID, StartTicks: r.AgentStart, BootID: r.BootID},
		StartedAt:   r.StartedAt,
	}
	if r.Remote != nil {
		e.Remote = core.RemoteRef{Runtime: r.Remote.Runtime, Name: r.Remote.Name, Namespace: r.Remote.Namespace}
	}
	for _, p := range r.Prompts {
		e.Prompts = append(e.Prompts, p.shown())
	}
	if r.Message != nil {
		m := r.Message.message()
		e.Message = &m
		if r.Key != nil {
			e.Key = r.Key.key()
		}
	}
	if r.Notice != nil {
		e.Notice = r.Notice.shown().Ref
	}
	e.Running = r.Running
	return e
}

// scheduleRec is a schedule's last run and the missed run it skipped.
type scheduleRec struct {
	head
	Last    time.Time `json:"last"`
	Skipped time.Time `json:"skipped,omitzero"`
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
	if v, want := rec.version(), rec.wantVersion(); v != want {
		return fmt.Errorf("%w: record version %d, want %d", ErrCorrupt, v, want)
	}
	return nil
}
