package core_test

import (
	"regexp"
	"testing"

	"github.com/agentbridge/agentbridge/core"
)

// label is an RFC 1123 label, what Kubernetes object names and Docker
// volume names accept.
var label = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

func TestSlug(t *testing.T) {
	k := core.ConversationKey{Platform: "slack", Workspace: "T1", Channel: "C2", Thread: "1700000000.000100"}
	got := k.Slug()
	// A fixed value: workspaces are named after it, so it must never change.
	if got != "slack-1ca3eb669160a16f" {
		t.Fatalf("Slug = %q, want slack-1ca3eb669160a16f", got)
	}
	if again := k.Slug(); again != got {
		t.Errorf("Slug is not stable: %q then %q", got, again)
	}
	others := []core.ConversationKey{
		{Platform: "slack", Workspace: "T1", Channel: "C2"},
		{Platform: "slack", Workspace: "T1C", Channel: "2", Thread: k.Thread},
		{Platform: "discord", Workspace: "T1", Channel: "C2", Thread: k.Thread},
	}
	for _, o := range others {
		if o.Slug() == got {
			t.Errorf("%v and %v share the slug %q", k, o, got)
		}
	}
	for _, c := range []struct {
		key    core.ConversationKey
		prefix string
	}{
		{core.ConversationKey{Platform: "Tele_Gram!", Channel: "1"}, "telegram-"},
		{core.ConversationKey{Channel: "1"}, "conv-"},
		{core.ConversationKey{Platform: "averyveryverylongplatformname"}, "averyveryverylon-"},
	} {
		s := c.key.Slug()
		if !label.MatchString(s) || len(s) != len(c.prefix)+16 || s[:len(c.prefix)] != c.prefix {
			t.Errorf("Slug(%v) = %q, want %q and 16 hex digits", c.key, s, c.prefix)
		}
	}
}

// FuzzSlug: whatever the ids, the slug is a valid label.
func FuzzSlug(f *testing.F) {
	f.Add("slack", "T1", "C2", "1.2")
	f.Add("", "", "", "")
	f.Add("ΣΛΑΚ", "\x00", "a:b", "-")
	f.Fuzz(func(t *testing.T, p, w, c, th string) {
		s := core.ConversationKey{Platform: p, Workspace: w, Channel: c, Thread: th}.Slug()
		if !label.MatchString(s) {
			t.Fatalf("Slug = %q is not an RFC 1123 label", s)
		}
	})
}
