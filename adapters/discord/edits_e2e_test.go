package discord

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/discord/discordtest"
)

// TestQueuedMessageEditedOrDeletedOnDiscord: MESSAGE_UPDATE and
// MESSAGE_DELETE of messages queued behind a running turn: the edited one
// runs as edited, the deleted one does not run and its queued notice says
// so (issue 23); the bot's own edits are no edits of anyone's message.
func TestQueuedMessageEditedOrDeletedOnDiscord(t *testing.T) {
	t.Parallel()
	fake := discordtest.NewServer(testToken)
	t.Cleanup(fake.Close)
	fake.AddChannel(discordtest.Channel{ID: "C1", Type: 0, GuildID: "G1"})
	eng := runEngine(t, fake, nil)
	gate := filepath.Join(t.TempDir(), "gate")
	joined := func() string { return strings.Join(fake.Contents("C1"), "\n") }
	fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M1", "C1", "G1", alice, "gate:"+gate, true))
	waitFor(t, fake, "the gated turn", func() bool { return strings.Contains(joined(), "gated") })
	fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M2", "C1", "G1", alice, "first words", true))
	fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M3", "C1", "G1", alice, "second words", true))
	waitFor(t, fake, "two queued", func() bool { return strings.Contains(joined(), "Queued — position 2") })
	fake.Dispatch("MESSAGE_UPDATE", discordtest.MessageUpdate("M2", "C1", "G1", alice, "edited words", true))
	fake.Dispatch("MESSAGE_DELETE", discordtest.MessageDelete("M3", "C1", "G1"))
	waitFor(t, fake, "the deleted message's notice", func() bool {
		return strings.Contains(joined(), "🗑 Removed from the queue: the message was deleted.")
	})
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, fake, "the edited message's answer", func() bool { return strings.Contains(joined(), "edited words") })
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := eng.Idle(ctx); err != nil {
		t.Fatal(err)
	}
	if all := joined(); strings.Contains(all, "first words") || strings.Contains(all, "second words") {
		t.Errorf("a message was answered as it read before its edit or deletion:\n%s", all)
	}
}
