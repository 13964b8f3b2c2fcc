package discord

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge/adapters/discord/discordtest"
	"github.com/agentbridge/agentbridge/core"
)

// TestSendRepliesToTheUsersMessage: in a server channel or thread a post
// with ReplyTo is a Discord reply to that message (never pinging its
// author); without ReplyTo, in a DM, or naming a message from another
// channel or one the adapter never saw, it is a plain message; a reply
// Discord refuses is sent again as a plain message instead of failing.
func TestSendRepliesToTheUsersMessage(t *testing.T) {
	t.Parallel()
	h := start(t, Options{}, func(f *discordtest.Server) {
		f.AddChannel(discordtest.Channel{ID: "C1", Type: 0, GuildID: "G1"})
		f.AddChannel(discordtest.Channel{ID: "T1", Type: 11, GuildID: "G1", ParentID: "C1", OwnerID: "someone"})
	})
	h.connected(t)
	h.fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M1", "C1", "G1", alice, "question", true))
	h.fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M2", "T1", "G1", bob, "in a thread", true))
	h.fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M3", "D1", "", alice, "a DM", false))
	for range 3 {
		h.rec.nextMessage(t)
	}
	channel := core.ConversationKey{Platform: Name, Workspace: "G1", Channel: "C1"}
	thread := core.ConversationKey{Platform: Name, Workspace: "G1", Channel: "C1", Thread: "T1"}
	dm := core.ConversationKey{Platform: Name, Channel: "D1"}
	send := func(to core.ConversationKey, p core.Post) {
		t.Helper()
		if _, err := h.a.Send(t.Context(), to, p); err != nil {
			t.Fatalf("send %q: %v", p.Text, err)
		}
	}
	send(channel, core.Post{Text: "answer", ReplyTo: "M1"})
	send(channel, core.Post{Text: "continuation"})
	send(thread, core.Post{Text: "thread answer", ReplyTo: "M2"})
	send(thread, core.Post{Text: "not here", ReplyTo: "M1"}) // M1 is in C1, not in the thread
	send(channel, core.Post{Text: "slash answer", ReplyTo: "I-unknown"})
	send(dm, core.Post{Text: "dm answer", ReplyTo: "M3"})
	h.fake.RefuseReplies(true)
	send(channel, core.Post{Text: "refused reply", ReplyTo: "M1"})

	got := map[string]string{}
	for _, ch := range []string{"C1", "T1", "D1"} {
		for _, m := range h.fake.Messages(ch) {
			got[m.Content] = m.ReplyTo
			if !strings.Contains(string(m.AllowedMentions), `"parse":[]`) || strings.Contains(string(m.AllowedMentions), `"replied_user":true`) {
				t.Errorf("%q: allowed_mentions %s may ping someone", m.Content, m.AllowedMentions)
			}
		}
	}
	want := map[string]string{"answer": "M1", "continuation": "", "thread answer": "M2", "not here": "",
		"slash answer": "", "dm answer": "", "refused reply": ""}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("replies (-want +got):\n%s", d)
	}
	var refs int
	for _, c := range h.fake.CallsTo("POST", "/messages") {
		if strings.Contains(c.Body, `"message_reference"`) {
			refs++
			if !strings.Contains(c.Body, `"fail_if_not_exists":false`) {
				t.Errorf("a reply without fail_if_not_exists false: %s", c.Body)
			}
		}
	}
	if refs != 3 { // answer, thread answer, and the refused attempt
		t.Errorf("%d sends carried a message_reference; want 3", refs)
	}
}
