package discord

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/adapters/discord/discordtest"
)

// With thread_per_mention, a stranger's mentions open no thread (before,
// each opened a public thread named by the stranger's text, before the
// access check; issue 27 item 7): their refusal is a reply in the channel.
// An allowed user's mention opens its thread and is answered there.
func TestEngineThreadPerMentionOnlyForAccepted(t *testing.T) {
	fake := discordtest.NewServer(testToken)
	t.Cleanup(fake.Close) // after the engine's cleanup (registered later, run first): its turns finish against a live fake
	fake.AddChannel(discordtest.Channel{ID: "C1", Type: 0, GuildID: "G1"})
	runEngineWith(t, fake, nil, Options{ThreadPerMention: true, MessageContent: true})

	stranger := discordtest.User{ID: "666", Name: "stranger"}
	var strangers []string
	for i := range 20 {
		id := fmt.Sprintf("MX%d", i)
		strangers = append(strangers, id)
		fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate(id, "C1", "G1", stranger, "FREE NITRO at evil.example", true))
	}
	// The gateway's events are normalized in order: once this is answered,
	// every mention before it has been through the adapter.
	fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("MA", "C1", "G1", alice, "hello from alice", true))
	has := func(channel, text string) bool {
		return strings.Contains(strings.Join(fake.Contents(channel), "\n"), text)
	}
	waitFor(t, fake, "alice's answer", func() bool { return has("MA", "hello from alice") || has("C1", "hello from alice") })
	if !has("MA", "hello from alice") {
		t.Error("alice's answer is not in her thread")
	}
	refused := func(channel string) bool { return has(channel, "not allowed") }
	waitFor(t, fake, "the stranger's refusal", func() bool {
		for _, ch := range append([]string{"C1"}, strangers...) {
			if refused(ch) {
				return true
			}
		}
		return false
	})
	if !refused("C1") {
		t.Error("the stranger's refusal is not in the channel")
	}
	var opened []string
	for _, c := range fake.CallsTo("POST", "/threads") {
		opened = append(opened, c.Path)
	}
	if len(opened) != 1 || !strings.Contains(opened[0], "/messages/MA/threads") {
		t.Errorf("threads opened: %q; want alice's only", opened)
	}
}

// A mention delivered again (the engine drops it as a duplicate) does not
// mark its thread unopened again: the conversation's later answers still
// go to the thread, not to the channel.
func TestEngineThreadPerMentionRedelivered(t *testing.T) {
	fake := discordtest.NewServer(testToken)
	t.Cleanup(fake.Close) // after the engine's cleanup (registered later, run first): its turns finish against a live fake
	fake.AddChannel(discordtest.Channel{ID: "C1", Type: 0, GuildID: "G1"})
	runEngineWith(t, fake, nil, Options{ThreadPerMention: true, MessageContent: true})

	has := func(channel, text string) bool {
		return strings.Contains(strings.Join(fake.Contents(channel), "\n"), text)
	}
	fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("MA", "C1", "G1", alice, "hello from alice", true))
	waitFor(t, fake, "alice's answer", func() bool { return has("MA", "hello from alice") || has("C1", "hello from alice") })
	fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("MA", "C1", "G1", alice, "hello from alice", true))
	// Events are normalized in order: the follow-up comes after the
	// redelivery has been through the adapter.
	fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("MB", "MA", "G1", alice, "and a follow-up", true))
	waitFor(t, fake, "the follow-up's answer", func() bool { return has("MA", "and a follow-up") || has("C1", "and a follow-up") })
	if has("C1", "and a follow-up") {
		t.Errorf("the follow-up in alice's thread was answered in the channel: %q", fake.Contents("C1"))
	}
}

// TestEngineThreadPerMentionRefusedKeepsTheChannel: where Discord refuses to
// open threads (the bot lacks the permission), the answer goes to the
// channel and the channel's next mentions share one conversation, so the
// agent's session carries on as it did before thread_per_mention.
func TestEngineThreadPerMentionRefusedKeepsTheChannel(t *testing.T) {
	fake := discordtest.NewServer(testToken)
	t.Cleanup(fake.Close) // after the engine's cleanup (registered later, run first): its turns finish against a live fake
	fake.AddChannel(discordtest.Channel{ID: "C1", Type: 0, GuildID: "G1"})
	fake.RefuseThreads(true)
	runEngineWith(t, fake, nil, Options{ThreadPerMention: true, MessageContent: true})

	reply := func(id, text string) string {
		t.Helper()
		fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate(id, "C1", "G1", alice, text, true))
		var found string
		waitFor(t, fake, "the answer to "+text, func() bool {
			for _, c := range fake.Contents("C1") {
				if strings.Contains(c, text) {
					found = c
					return true
				}
			}
			return false
		})
		return found
	}
	// The test agent starts its echo with "(resumed SID)" only in a
	// resumed session: the second mention opens the channel's session, and
	// the third carries it on.
	reply("MT1", "first-mention")
	if second := reply("MT2", "second-mention"); strings.Contains(second, "(resumed") {
		t.Errorf("the second mention's answer %q resumes a session; want the channel's first", second)
	}
	if third := reply("MT3", "third-mention"); !strings.Contains(third, "(resumed sess-") {
		t.Errorf("the third mention's answer %q does not resume the channel's session", third)
	}
	if n := len(fake.CallsTo("POST", "/threads")); n != 1 {
		t.Errorf("%d thread starts; want 1 (the channel is not asked again at once)", n)
	}
}
