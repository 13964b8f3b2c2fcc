package slack_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/adapters/slack/slacktest"
)

// Issue 23: a message queued behind a running turn gets a notice with the
// button "⏭ Stop and answer this now". U2, who did not ask the running
// turn, is refused in an ephemeral message and nothing changes; U1's press
// stops their running turn (its reply ends "⏹ Interrupted by a newer
// message.") and the queued message is answered next; the button leaves
// the notice.
func TestEndToEndSkipButton(t *testing.T) {
	t.Parallel()
	fake := newFake(t, slacktest.Options{})
	b := startBridge(t, fake, newDB(t), nil)
	const thread = "310.000001"
	gate := filepath.Join(t.TempDir(), "gate")
	t.Cleanup(func() { os.WriteFile(gate, nil, 0o600) })
	fake.SendEvent("Ev1", mention("U1", "C1", thread, "", "<@UBOT> gate:"+gate))
	b.reply(thread, "gated")
	fake.SendEvent("Ev2", mention("U1", "C1", "310.000002", thread, "<@UBOT> second"))
	notice := b.reply(thread, "Queued")
	values := notice.Buttons()
	if len(values) != 1 {
		t.Fatalf("queued notice buttons %v; want ⏭", values)
	}
	fake.Press("U2", "C1", thread, notice.TS, values[0])
	waitFake(t, fake, "ephemeral refusal", func(s *slacktest.State) bool { return s.Calls("chat.postEphemeral") == 1 })
	if eph := fake.Calls("chat.postEphemeral")[0].Form; eph.Get("user") != "U2" || !strings.Contains(eph.Get("text"), "Only the person whose message is being answered") {
		t.Errorf("refusal = %v", eph)
	}
	fake.Press("U1", "C1", thread, notice.TS, values[0])
	first := b.reply(thread, "⏹ Interrupted by a newer message.")
	if strings.Contains(first.Text, "released") {
		t.Errorf("the interrupted reply %q ran to its end", first.Text)
	}
	if m := b.reply(thread, "second"); !strings.Contains(m.Text, "(resumed sess-") {
		t.Errorf("the queued message's reply %q did not resume the session", m.Text)
	}
	waitFake(t, fake, "the button gone", func(s *slacktest.State) bool {
		m, ok := s.Message(thread, "Queued")
		return ok && m.Blocks == ""
	})
}
