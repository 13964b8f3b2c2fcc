package core

import (
	"crypto/sha256"
	"encoding/hex"
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

// Slug names the key in a form that is stable across restarts and safe as
// a container, volume or Kubernetes object name (RFC 1123 label: lowercase
// letters, digits and '-'): the platform name, '-', and 16 hex digits of a
// SHA-256 of the whole key, e.g. "slack-3f0c9a12b4e6d871". It gives away
// no platform id. The profile placeholder {{AGENTBRIDGE_CONVERSATION_ID}}
// expands to it.
func (k ConversationKey) Slug() string {
	h := sha256.New()
	for _, f := range []string{k.Platform, k.Workspace, k.Channel, k.Thread} {
		h.Write([]byte(f))
		h.Write([]byte{0}) // keeps ("ab", "c") and ("a", "bc") apart
	}
	prefix := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return -1
	}, k.Platform)
	if len(prefix) > 16 {
		prefix = prefix[:16]
	}
	if prefix == "" {
		prefix = "conv"
	}
	return prefix + "-" + hex.EncodeToString(h.Sum(nil)[:8])
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
