package discord

import (
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/agentbridge/agentbridge/core"
)

func TestLink(t *testing.T) {
	a := &Adapter{}
	for _, tc := range []struct {
		conv core.ConversationKey
		want string
	}{
		{core.ConversationKey{Platform: "discord", Workspace: "G1", Channel: "C1"}, "https://discord.com/channels/G1/C1/M1"},
		{core.ConversationKey{Platform: "discord", Workspace: "G1", Channel: "C1", Thread: "T1"}, "https://discord.com/channels/G1/T1/M1"},
		{core.ConversationKey{Platform: "discord", Channel: "D1"}, "https://discord.com/channels/@me/D1/M1"},
	} {
		if got := a.Link(tc.conv, "M1"); got != tc.want {
			t.Errorf("Link(%+v) = %q, want %q", tc.conv, got, tc.want)
		}
	}
}

func TestConvName(t *testing.T) {
	a := &Adapter{info: map[string]*discordgo.Channel{"C1": {ID: "C1", Name: "general"}, "T1": {ID: "T1", Name: "deploys"}}}
	if got := a.ConvName(core.ConversationKey{Platform: "discord", Workspace: "G1", Channel: "C1", Thread: "T1"}); got != "#general › deploys" {
		t.Errorf("ConvName = %q", got)
	}
	if got := a.ConvName(core.ConversationKey{Platform: "discord", Channel: "C9"}); got != "" {
		t.Errorf("ConvName of an unseen channel = %q, want none", got)
	}
}
