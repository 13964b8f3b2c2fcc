package core

import (
	"log/slog"
	"strings"
)

// ConversationKey identifies one conversation: a chat, a channel, or a thread
// in one. Field values are opaque to core; only the adapter that produced a
// key interprets them. Keys are comparable and usable as map keys.
type ConversationKey struct {
	Platform  string // adapter name, e.g. "slack"
	Workspace string // Slack team, Discord guild, Telegram bot; may be empty
	Channel   string // channel, chat or DM id
	Thread    string // thread or topic id; empty for a whole channel
}

// String returns a compact, human-readable form for logs and errors.
func (k ConversationKey) String() string {
	parts := []string{k.Platform, k.Workspace, k.Channel}
	if k.Thread != "" {
		parts = append(parts, k.Thread)
	}
	return strings.Join(parts, ":")
}

// LogValue logs the key as a group of its fields.
func (k ConversationKey) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("platform", k.Platform),
		slog.String("channel", k.Channel),
	}
	if k.Workspace != "" {
		attrs = append(attrs, slog.String("workspace", k.Workspace))
	}
	if k.Thread != "" {
		attrs = append(attrs, slog.String("thread", k.Thread))
	}
	return slog.GroupValue(attrs...)
}

// SessionScope says which part of a ConversationKey a conversation's agent
// session is bound to.
type SessionScope string

// The session scopes an operator can configure per platform.
const (
	ScopeThread  SessionScope = "thread"  // each thread is its own session (default)
	ScopeChannel SessionScope = "channel" // all threads of a channel share one session
	ScopeUser    SessionScope = "user"    // one session per user across the platform workspace
)

// Valid reports whether s is one of the defined scopes.
func (s SessionScope) Valid() bool {
	switch s {
	case ScopeThread, ScopeChannel, ScopeUser:
		return true
	}
	return false
}

// SessionKey maps a conversation to the key its agent session is stored
// under, following scope. The result is still a ConversationKey so the store
// encodes it the same way.
func (s SessionScope) SessionKey(k ConversationKey, userID string) ConversationKey {
	switch s {
	case ScopeChannel:
		k.Thread = ""
	case ScopeUser:
		k.Channel, k.Thread = "user:"+userID, ""
	}
	return k
}
