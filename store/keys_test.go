package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/agentbridge/agentbridge/core"
	"github.com/google/go-cmp/cmp"
)

func TestKeysDistinct(t *testing.T) {
	// Pairs whose fields join to the same text with a separator or none.
	tests := []struct {
		name string
		a, b []byte
	}{
		{"conv colon", sessionKey(core.ConversationKey{Platform: "a:b", Workspace: "c"}, "n"), sessionKey(core.ConversationKey{Platform: "a", Workspace: "b:c"}, "n")},
		{"conv shift", convKey(core.ConversationKey{Platform: "ab", Channel: "c"}), convKey(core.ConversationKey{Platform: "a", Workspace: "b", Channel: "c"})},
		{"conv vs name", sessionKey(core.ConversationKey{Thread: "x"}, ""), sessionKey(core.ConversationKey{}, "\x01x")},
		{"grant split", grantKey(convA, "a:b", "u", "c"), grantKey(convA, "a", "b:u", "c")},
		{"grant shift", grantKey(convA, "ab", "", ""), grantKey(convA, "a", "b", "")},
		{"grant user", grantKey(convA, "s", "ab", "c"), grantKey(convA, "s", "a", "bc")},
		{"seen split", seenKey("slack", "1"), seenKey("slack1", "")},
		{"journal turn", journalKey(t0, "a"), journalKey(t0, "b")},
	}
	for _, tt := range tests {
		if bytes.Equal(tt.a, tt.b) {
			t.Errorf("%s: keys collide: %q", tt.name, tt.a)
		}
	}
}

func TestSplitKeyRejectsGarbage(t *testing.T) {
	for _, b := range [][]byte{{5, 'a'}, {0x80}, {1}} {
		if got, err := splitKey(b, 2); err == nil {
			t.Errorf("splitKey(%q) = %q, want an error", b, got)
		}
	}
}

// FuzzKeys checks that keys decode back to the fields they were built
// from; decoding being exact is what makes distinct fields give distinct
// keys, and a conversation's encoding a prefix only of its own keys.
func FuzzKeys(f *testing.F) {
	f.Add("slack", "T1", "C1", "171.2", "default", "U1", "Bash")
	f.Add("a:b", "c", "", "", "a", "b:c", "d")
	f.Add("", "", "", "", "", "", "")
	f.Add("\x00\x01", "\xff", "\x80\x80", "x", "ü", "\x01", "\x00")
	f.Fuzz(func(t *testing.T, platform, workspace, channel, thread, session, user, tool string) {
		conv := core.ConversationKey{Platform: platform, Workspace: workspace, Channel: channel, Thread: thread}
		fields := []string{platform, workspace, channel, thread}

		got, err := splitKey(sessionKey(conv, session), 4)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(append(fields, session), got); diff != "" {
			t.Errorf("session key round trip (-want +got):\n%s", diff)
		}
		got, err = splitKey(grantKey(conv, session, user, tool), 6)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(append(fields, session, user, tool), got); diff != "" {
			t.Errorf("grant key round trip (-want +got):\n%s", diff)
		}
		if k := grantKey(conv, session, user, tool); !bytes.HasPrefix(k, grantPrefix(conv, session)) || !bytes.HasPrefix(k, convKey(conv)) {
			t.Errorf("grant key %q lacks its prefixes", k)
		}
		got, err = splitKey(seenKey(platform, tool), 1)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{platform, tool}, got); diff != "" {
			t.Errorf("seen key round trip (-want +got):\n%s", diff)
		}
	})
}

// FuzzSplitKey feeds arbitrary bytes to the decoder: it must not panic, and
// whatever it accepts must re-encode to the same bytes.
func FuzzSplitKey(f *testing.F) {
	f.Add([]byte{}, 2)
	f.Add(grantKey(convA, "s", "u", "t"), 6)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 1)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		n = min(max(n, 0), 8)
		fields, err := splitKey(b, n)
		if err != nil {
			return
		}
		var re []byte
		for _, s := range fields[:n] {
			re = appendField(re, s)
		}
		re = append(re, fields[n]...)
		if !bytes.Equal(re, b) {
			t.Errorf("splitKey(%q) = %q re-encodes to %q", b, fields, re)
		}
	})
}

// FuzzCheckHeader feeds arbitrary file contents to the header check, which
// must never panic; what it accepts bbolt can map.
func FuzzCheckHeader(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("hello"))
	f.Add(bytes.Repeat([]byte{0xED, 0xDA, 0x0C, 0xED}, 4096))
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = checkHeaderOf(bytes.NewReader(data), int64(len(data)))
	})
}

// errBadKey reports a key that does not decode; only garbage produces it.
var errBadKey = errors.New("malformed key")

// splitKey decodes a key made of n length-prefixed fields followed by one
// raw field, returning n+1 strings. It is the inverse of the key builders,
// which the tests use to show the encoding is one-to-one; it never panics
// on garbage.
func splitKey(b []byte, n int) ([]string, error) {
	out := make([]string, 0, n+1)
	for range n {
		l, w := binary.Uvarint(b)
		// Reject overlong varints too: the encoding is then one-to-one.
		if w <= 0 || w != uvarintLen(l) || l > uint64(len(b)-w) {
			return nil, errBadKey
		}
		out = append(out, string(b[w:w+int(l)]))
		b = b[w+int(l):]
	}
	return append(out, string(b)), nil
}

// uvarintLen is the length of the shortest uvarint encoding of x.
func uvarintLen(x uint64) int {
	n := 1
	for ; x >= 0x80; x >>= 7 {
		n++
	}
	return n
}
