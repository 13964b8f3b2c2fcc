package store

import (
	"encoding/binary"
	"time"

	"github.com/agentbridge/agentbridge/core"
)

// Keys are built from fields that are each prefixed with their length as a
// uvarint, so the encoding is self-delimiting: ("a:b","c") and ("a","b:c")
// give different bytes, and the encoding of a conversation is a prefix only
// of keys that belong to that very conversation. The last field of a key
// may be written raw (without a length) because nothing follows it; that
// keeps keys that share a prefix in byte order of their last field, which
// is how Sessions returns names in order.

// appendField appends s prefixed with its length.
func appendField(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendConv appends the four fields of k, each length-prefixed.
func appendConv(b []byte, k core.ConversationKey) []byte {
	b = appendField(b, k.Platform)
	b = appendField(b, k.Workspace)
	b = appendField(b, k.Channel)
	return appendField(b, k.Thread)
}

// convKey is the key of conv's record in the active bucket.
func convKey(k core.ConversationKey) []byte {
	return appendConv(nil, k)
}

// sessionKey is the key of conv's session name in the sessions bucket.
func sessionKey(k core.ConversationKey, name string) []byte {
	return append(appendConv(nil, k), name...)
}

// grantPrefix is the prefix shared by every grant of one session of conv.
func grantPrefix(k core.ConversationKey, session string) []byte {
	return appendField(appendConv(nil, k), session)
}

// grantKey is the key of one person's tool grant in the grants bucket
// (schema 5; before, keys named no user).
func grantKey(k core.ConversationKey, session, user, tool string) []byte {
	return append(appendField(grantPrefix(k, session), user), tool...)
}

// seenKey is the key of a platform message id in the seen bucket.
func seenKey(platform, messageID string) []byte {
	return append(appendField(nil, platform), messageID...)
}

// journalKey orders journal entries by start time, then turn id. The
// seconds are biased by 2^63 so times before 1970 (the zero time.Time
// included) still sort first in big-endian byte order.
func journalKey(started time.Time, turnID string) []byte {
	b := make([]byte, 12, 12+len(turnID))
	binary.BigEndian.PutUint64(b, uint64(started.Unix())^(1<<63))
	binary.BigEndian.PutUint32(b[8:], uint32(started.Nanosecond()))
	return append(b, turnID...)
}
