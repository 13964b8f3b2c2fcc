package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/adapters/telegram/telegramtest"
)

// TestServeBusyModesTelegram drives a real serve process against the fake
// Telegram with real agent processes: busy modes come from the config —
// interrupt on the platform section (Alice's DM), collect on a route (the
// group) — and a profile's own cap with on_saturated: reject refuses a
// turn past it in one line (Bob's DM, another profile's turn running in
// Alice's).
func TestServeBusyModesTelegram(t *testing.T) {
	const token = "987654:BUSY-SECRET"
	const group = -100555
	fake := telegramtest.NewServer(token)
	defer fake.Close()
	dir := t.TempDir()
	prof := controlProfile(t, dir, "a", "max_concurrent: 1\non_saturated: reject\n")
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`store: %s
profiles: {a: %s}
default_profile: a
log: {level: debug}
routes:
  - {platform: telegram, channel: "%d", profile: a, busy: collect}
telegram:
  enabled: true
  token: ${AGENTBRIDGE_TEST_TG_TOKEN}
  api_url: %s
  drafts: false
  allow_users: ["1001", "1002"]
  busy: interrupt
`, filepath.Join(dir, "bridge.db"), prof, group, fake.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	b := startBridge(t, cfg, "AGENTBRIDGE_TEST_TG_TOKEN="+token)
	alice := telegramtest.User(1001, "Alice", "alice")
	bob := telegramtest.User(1002, "Bob", "bob")
	gate := filepath.Join(dir, "gate")
	t.Cleanup(func() { os.WriteFile(gate, nil, 0o600) })

	// Interrupt (the platform's mode): Alice's newer message stops her turn.
	fake.Push(telegramtest.PrivateMessage(1, alice, "gate:"+gate))
	tgWait(t, fake, b, 1001, "gated", 0)
	// Cap of one agent for profile a, reject: Bob is told at once.
	fake.Push(telegramtest.PrivateMessage(2, bob, "not now"))
	refused := tgWait(t, fake, b, 1002, "🚦", 0)
	if want := "🚦 All 1 of profile a's agents are busy, so this message was not run. Please send it again in a while."; refused.Text != want {
		t.Errorf("Bob's refusal = %q, want %q", refused.Text, want)
	}
	fake.Push(telegramtest.PrivateMessage(3, alice, "changed my mind"))
	tgWait(t, fake, b, 1001, "⏹ Interrupted by a newer message.", 0)
	if m := tgWait(t, fake, b, 1001, "changed my mind END", 0); !strings.HasPrefix(m.Text, "resumed ") {
		t.Errorf("the newer message's reply %q did not resume the session", m.Text)
	}

	// Collect (the route's mode): a burst from two people becomes one turn.
	gate2 := filepath.Join(dir, "gate2")
	t.Cleanup(func() { os.WriteFile(gate2, nil, 0o600) })
	mention := "@" + telegramtest.BotUsername + " "
	fake.Push(telegramtest.GroupMessage(group, 10, 0, alice, mention+"gate:"+gate2))
	tgWait(t, fake, b, group, "gated", 0)
	fake.Push(telegramtest.GroupMessage(group, 11, 0, alice, mention+"first"))
	tgWait(t, fake, b, group, "⏳ Queued: I'll answer it", 0)
	fake.Push(telegramtest.GroupMessage(group, 12, 0, bob, mention+"second"))
	tgWait(t, fake, b, group, "⏳ Queued: 2 messages", 0)
	if err := os.WriteFile(gate2, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tgWait(t, fake, b, group, "Alice: first Bob: second END", 0)
	n := 0
	for _, m := range fake.Messages(group) {
		if strings.Contains(m.Text, "Queued") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d queued notices in the group, want one kept up to date", n)
	}
}
