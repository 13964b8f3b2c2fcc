package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/slack/slacktest"
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

// TestServeTwoSlackWorkspaces runs the slack section and a slack/acme
// section against two fake Slack workspaces: each account answers with
// its own token in its own workspace, by its own access list, and knows
// only the threads it takes part in.
func TestServeTwoSlackWorkspaces(t *testing.T) {
	fakeA := slacktest.NewServer(slacktest.Options{BotToken: "xoxb-a", AppToken: "xapp-a", TeamID: "T1"})
	defer fakeA.Close()
	fakeB := slacktest.NewServer(slacktest.Options{BotToken: "xoxb-b", AppToken: "xapp-b", TeamID: "T2"})
	defer fakeB.Close()
	t.Setenv("AGENTBRIDGE_DEMO_DELAY", "1ms")
	t.Setenv("TEST_SLACK_A_BOT", "xoxb-a")
	t.Setenv("TEST_SLACK_A_APP", "xapp-a")
	t.Setenv("TEST_SLACK_B_BOT", "xoxb-b")
	t.Setenv("TEST_SLACK_B_APP", "xapp-b")
	cfg := writeConfig(t, fmt.Sprintf(`store: %s
profiles: {demo: builtin:demo}
default_profile: demo
presenter: {placeholder_delay: 0s}
slack:
  enabled: true
  api_url: %s
  bot_token: ${TEST_SLACK_A_BOT}
  app_token: ${TEST_SLACK_A_APP}
  allow_users: [U1]
slack/acme:
  enabled: true
  api_url: %s
  bot_token: ${TEST_SLACK_B_BOT}
  app_token: ${TEST_SLACK_B_APP}
  allow_users: [U2]
`, filepath.Join(t.TempDir(), "bridge.db"), fakeA.APIURL(), fakeB.APIURL()))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &lockedBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve", "--config", cfg}, nil, &tgLogBuffer{}, stderr) }()
	wait := func(fake *slacktest.Server, what string, cond func(*slacktest.State) bool) {
		t.Helper()
		wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
		defer wcancel()
		if err := fake.WaitFor(wctx, cond); err != nil {
			t.Fatalf("%s: %v\nserve stderr:\n%s", what, err, stderr.String())
		}
	}
	wait(fakeA, "A connected", func(s *slacktest.State) bool { return s.Connected() > 0 })
	wait(fakeB, "B connected", func(s *slacktest.State) bool { return s.Connected() > 0 })

	const thread = "400.000001"
	mention := func(fake *slacktest.Server, id, user, text, ts string) {
		fake.SendEvent(id, map[string]any{"type": "app_mention", "user": user, "text": "<@UBOT> " + text,
			"ts": ts, "channel": "C1", "event_ts": ts})
	}
	// The same channel and ts in both workspaces.
	mention(fakeA, "EvA1", "U1", "hello from one", thread)
	mention(fakeB, "EvB1", "U2", "hello from two", thread)
	wait(fakeA, "A's reply", func(s *slacktest.State) bool { _, ok := s.Message(thread, "hello from one"); return ok })
	wait(fakeB, "B's reply", func(s *slacktest.State) bool { _, ok := s.Message(thread, "hello from two"); return ok })
	// B's access list is B's: U1, allowed on A, is refused there.
	mention(fakeB, "EvB2", "U1", "let me in", "401.000001")
	wait(fakeB, "B's refusal", func(s *slacktest.State) bool {
		_, posted := s.Message("", "not allowed")
		return posted || s.Calls("chat.postEphemeral") > 0
	})
	for _, m := range fakeB.Messages() {
		if strings.Contains(m.Text, "let me in") {
			t.Errorf("B answered U1, who is only on A's list: %+v", m)
		}
	}
	for _, m := range fakeA.Messages() {
		if strings.Contains(m.Text, "hello from two") {
			t.Errorf("A carries B's conversation: %+v", m)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v; want nil after cancel\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not return after cancel")
	}
	if !strings.Contains(stderr.String(), `platforms="[slack slack/acme]"`) {
		t.Errorf("serve did not say it serves both accounts:\n%s", stderr.String())
	}
}
