package telegram_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/adapters/telegram/telegramtest"
)

// Issue 23: a message queued behind a running turn gets a notice with the
// inline button "⏭ Stop and answer this now". Bob, a member of the group
// who did not ask the running turn, is refused in his press's answer and
// nothing changes; Alice's press stops her running turn (its reply ends
// "⏹ Interrupted by a newer message.") and her queued message is
// answered next, in the same agent session; the button leaves the notice.
func TestE2ESkipButton(t *testing.T) {
	t.Parallel()
	fake := telegramtest.NewServer(token)
	t.Cleanup(fake.Close)
	s := startStack(t, fake, "", nil)
	mention := "@" + telegramtest.BotUsername + " "
	gate := filepath.Join(t.TempDir(), "gate")
	t.Cleanup(func() { os.WriteFile(gate, nil, 0o600) })
	fake.Push(telegramtest.GroupMessage(group, 41, 0, alice, mention+"gate:"+gate))
	waitMsg(t, fake, group, contains("gated"))
	fake.Push(telegramtest.GroupMessage(group, 42, 0, alice, mention+"second"))
	notice := waitMsg(t, fake, group, func(m telegramtest.Message) bool { return strings.Contains(m.Text, "Queued") && m.Markup != "" })
	skip := buttonData(t, notice, "⏭ Stop and answer this now")

	fake.Push(telegramtest.CallbackQuery("cb-bob", bob, group, notice.ID, 0, skip))
	if text := answerText(t, fake, "cb-bob"); !strings.Contains(text, "Only the person whose message is being answered") {
		t.Errorf("Bob's press answered %q", text)
	}
	fake.Push(telegramtest.CallbackQuery("cb-alice", alice, group, notice.ID, 0, skip))
	if text := answerText(t, fake, "cb-alice"); text != "" {
		t.Errorf("Alice's press answered %q", text)
	}
	first := waitMsg(t, fake, group, contains("⏹ Interrupted by a newer message."))
	if strings.Contains(first.Text, "released") {
		t.Errorf("the interrupted reply %q ran to its end", first.Text)
	}
	reply := waitMsg(t, fake, group, contains("second END"))
	if !strings.HasPrefix(reply.Text, "resumed ") {
		t.Errorf("the queued message's reply %q did not resume the session", reply.Text)
	}
	waitMsg(t, fake, group, func(m telegramtest.Message) bool { return m.ID == notice.ID && m.Markup == "" })
	if runs, _ := os.ReadFile(s.runLog); strings.Count(string(runs), "\n") != 2 {
		t.Errorf("agent runs:\n%s\nwant the held turn and the second message", runs)
	}
}
