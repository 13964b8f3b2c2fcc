package telegram_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/telegram/telegramtest"
)

// TestE2EQueuedMessageEdited: an edited_message update for a message
// queued behind a running turn makes it run as edited; one for the
// running message changes nothing (issue 23). The bot asks Telegram for
// edited_message updates (the fake, like Telegram, sends only the kinds
// asked for).
func TestE2EQueuedMessageEdited(t *testing.T) {
	t.Parallel()
	fake := telegramtest.NewServer(token)
	t.Cleanup(fake.Close)
	s := startStack(t, fake, "", nil)
	mention := "@" + telegramtest.BotUsername + " "
	gate := filepath.Join(t.TempDir(), "gate")
	running := telegramtest.GroupMessage(group, 61, 0, alice, mention+"gate:"+gate)
	fake.Push(running)
	waitMsg(t, fake, group, contains("gated"))
	queued := telegramtest.GroupMessage(group, 62, 0, alice, mention+"first words")
	fake.Push(queued)
	waitMsg(t, fake, group, contains("Queued"))
	fake.Push(telegramtest.Edited(queued, mention+"edited words"))
	fake.Push(telegramtest.Edited(running, mention+"too late"))
	// The conversation's events are handled in order: once /status is
	// answered, both edits were.
	fake.Push(telegramtest.GroupMessage(group, 63, 0, alice, "/status"))
	waitMsg(t, fake, group, contains("Session "))
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitMsg(t, fake, group, contains("edited words"))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := s.eng.Idle(ctx); err != nil {
		t.Fatal(err)
	}
	for _, m := range fake.Messages(group) {
		if strings.Contains(m.Text, "first words") || strings.Contains(m.Text, "too late") {
			t.Errorf("answered %q: the edit was not applied, or applied to a running turn", m.Text)
		}
	}
}
