package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/telegram/telegramtest"
)

// TestServeTwoTelegramBots runs one serve with two Telegram accounts, each
// against its own fake Bot API server. Both fakes report the same bot id
// and the same user talks to both, so only the account keeps their
// conversations, access lists and update offsets apart.
func TestServeTwoTelegramBots(t *testing.T) {
	const tokenA, tokenB = "111:ACCOUNT-A-SECRET", "222:ACCOUNT-B-SECRET"
	t.Setenv("AGENTBRIDGE_DEMO_DELAY", "1ms")
	t.Setenv("AGENTBRIDGE_TEST_TG_A", tokenA)
	t.Setenv("AGENTBRIDGE_TEST_TG_B", tokenB)
	fakeA, fakeB := telegramtest.NewServer(tokenA), telegramtest.NewServer(tokenB)
	defer fakeA.Close()
	defer fakeB.Close()
	cfg := writeConfig(t, fmt.Sprintf(`store: %s
profiles: {demo: builtin:demo}
default_profile: demo
telegram:
  enabled: true
  token: ${AGENTBRIDGE_TEST_TG_A}
  api_url: %s
  allow_users: ["1001"]
telegram/work:
  enabled: true
  token: ${AGENTBRIDGE_TEST_TG_B}
  api_url: %s
  allow_users: ["1001", "1002"]
`, filepath.Join(t.TempDir(), "bridge.db"), fakeA.URL, fakeB.URL))

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stderr tgLogBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve", "--config", cfg}, nil, &tgLogBuffer{}, &stderr) }()

	deadline := time.After(60 * time.Second)
	// waitFor waits until chat's last message on fake contains want.
	waitFor := func(fake *telegramtest.Server, name string, chat int64, want string) {
		t.Helper()
		for {
			ch := fake.Changed()
			if msgs := fake.Messages(chat); len(msgs) > 0 && strings.Contains(msgs[len(msgs)-1].Text, want) && len(fake.Pending()) == 0 {
				return
			}
			select {
			case <-ch:
			case <-deadline:
				t.Fatalf("bot %s, chat %d: no %q; messages %+v\nlog:\n%s", name, chat, want, fake.Messages(chat), stderr.String())
			case err := <-done:
				t.Fatalf("serve returned early: %v\n%s", err, stderr.String())
			}
		}
	}
	alice := telegramtest.User(1001, "Alice", "alice")
	bob := telegramtest.User(1002, "Bob", "bob")

	fakeA.Push(telegramtest.PrivateMessage(1, alice, "my name is Ada"))
	waitFor(fakeA, "A", 1001, "Nice to meet you")
	// The same chat id on the other bot is another conversation, with its
	// own session: it has not heard the name.
	fakeB.Push(telegramtest.PrivateMessage(1, alice, "what is my name?"))
	waitFor(fakeB, "B", 1001, "I don't know your name yet")
	fakeA.Push(telegramtest.PrivateMessage(2, alice, "what is my name?"))
	waitFor(fakeA, "A", 1001, "Your name is Ada")
	// Each bot has its own access list.
	fakeB.Push(telegramtest.PrivateMessage(2, bob, "my name is Bob"))
	waitFor(fakeB, "B", 1002, "Nice to meet you")
	fakeA.Push(telegramtest.PrivateMessage(3, bob, "hello"))
	waitFor(fakeA, "A", 1002, "not allowed")

	stop := func() {
		t.Helper()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("serve returned %v after cancel; want nil", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("serve did not stop")
		}
	}
	stop()

	// After a restart each bot resumes from its own update offset: A has
	// seen update 3, B only 2, so B's update 3 is new and answered.
	ctx, cancel = context.WithCancel(t.Context())
	defer cancel()
	go func() { done <- run(ctx, []string{"serve", "--config", cfg}, nil, &tgLogBuffer{}, &stderr) }()
	fakeB.Push(telegramtest.PrivateMessage(3, bob, "what is my name?"))
	waitFor(fakeB, "B", 1002, "Your name is Bob")
	stop()

	log := stderr.String()
	if !strings.Contains(log, `platforms="[telegram telegram/work]"`) {
		t.Errorf("serve did not say it serves both accounts:\n%s", log)
	}
	if strings.Contains(log, "ACCOUNT-A-SECRET") || strings.Contains(log, "ACCOUNT-B-SECRET") {
		t.Errorf("a token in serve's log:\n%s", log)
	}
}
