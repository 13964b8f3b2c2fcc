package slack_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/slack/slacktest"
)

// TestQueuedMessageEditedOrDeletedOnSlack: Slack's message_changed and
// message_deleted events for messages queued in the bot's thread: the
// edited one runs as edited, the deleted one does not run and its queued
// notice says so (issue 23).
func TestQueuedMessageEditedOrDeletedOnSlack(t *testing.T) {
	t.Parallel()
	fake := newFake(t, slacktest.Options{})
	b := startBridge(t, fake, newDB(t), nil)
	gate := filepath.Join(t.TempDir(), "gate")
	const thread = "400.000001"
	fake.SendEvent("Ev1", mention("U1", "C1", thread, "", "<@UBOT> gate:"+gate))
	b.reply(thread, "gated")
	fake.SendEvent("Ev2", message("U1", "C1", "channel", "400.000002", thread, "first words"))
	fake.SendEvent("Ev3", message("U2", "C1", "channel", "400.000003", thread, "second words"))
	b.reply(thread, "Queued — position 2")
	fake.SendEvent("Ev4", slacktest.MessageChanged("U1", "C1", "channel", "400.000002", thread, "first words", "edited words"))
	fake.SendEvent("Ev5", slacktest.MessageDeleted("U2", "C1", "channel", "400.000003", thread, "second words"))
	b.reply(thread, "🗑 Removed from the queue: the message was deleted.")
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	b.reply(thread, "edited words")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := b.eng.Idle(ctx); err != nil {
		t.Fatal(err)
	}
	for _, m := range fake.Messages() {
		if strings.Contains(m.Text, "first words") || strings.Contains(m.Text, "second words") {
			t.Errorf("a message was answered as it read before its edit or deletion: %q", m.Text)
		}
	}
}
