package telegram

import (
	"testing"

	"github.com/agentbridge/agentbridge/core"
)

func TestLink(t *testing.T) {
	a := &Adapter{}
	for _, tc := range []struct {
		channel, id, want string
	}{
		{"-1001234567890", "-1001234567890:42", "https://t.me/c/1234567890/42"},
		{"1001", "1001:42", ""},      // a private chat
		{"-4567", "-4567:42", ""},    // a basic group
		{"-1001234567890", "42", ""}, // not one of the adapter's ids
	} {
		if got := a.Link(core.ConversationKey{Platform: "telegram", Channel: tc.channel}, tc.id); got != tc.want {
			t.Errorf("Link(%s, %s) = %q, want %q", tc.channel, tc.id, got, tc.want)
		}
	}
}

func TestConvName(t *testing.T) {
	a := &Adapter{}
	a.titles.set(-1001234567890, "Ops room")
	if got := a.ConvName(core.ConversationKey{Platform: "telegram", Channel: "-1001234567890", Thread: "7"}); got != "Ops room" {
		t.Errorf("ConvName = %q, want the group's title", got)
	}
	if got := a.ConvName(core.ConversationKey{Platform: "telegram", Channel: "1001"}); got != "" {
		t.Errorf("ConvName of an unseen chat = %q, want none", got)
	}
}
