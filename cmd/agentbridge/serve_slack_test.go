package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/slack/slacktest"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serve with only Slack enabled, against a fake Slack: a mention gets the
// demo agent's streamed reply in its thread, and cancelling stops serve.
func TestServeSlack(t *testing.T) {
	fake := slacktest.NewServer(slacktest.Options{})
	defer fake.Close()
	t.Setenv("AGENTBRIDGE_DEMO_DELAY", "1ms")
	t.Setenv("TEST_SLACK_BOT_TOKEN", fake.Options().BotToken)
	t.Setenv("TEST_SLACK_APP_TOKEN", fake.Options().AppToken)
	dir := t.TempDir()
	cfg := writeConfig(t, fmt.Sprintf(`store: %s
profiles: {demo: builtin:demo}
default_profile: demo
presenter: {placeholder_delay: 0s, usage_footer: true}
slack:
  enabled: true
  api_url: %s
  bot_token: ${TEST_SLACK_BOT_TOKEN}
  app_token: ${TEST_SLACK_APP_TOKEN}
  allow_users: [U1]
`, filepath.Join(dir, "bridge.db"), fake.APIURL()))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &lockedBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve", "--config", cfg}, nil, &bytes.Buffer{}, stderr) }()

	wait := func(what string, cond func(*slacktest.State) bool) {
		t.Helper()
		wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
		defer wcancel()
		if err := fake.WaitFor(wctx, cond); err != nil {
			t.Fatalf("%s: %v\nserve stderr:\n%s", what, err, stderr.String())
		}
	}
	wait("socket mode connected", func(s *slacktest.State) bool { return s.Connected() > 0 })
	const thread = "400.000001"
	fake.SendEvent("Ev1", map[string]any{"type": "app_mention", "user": "U1", "text": "<@UBOT> hello bridge",
		"ts": thread, "channel": "C1", "event_ts": thread})
	// The demo agent's reply streams into the thread; the usage footer comes
	// with the final edit, once the turn is over.
	var reply slacktest.Message
	wait("demo reply", func(s *slacktest.State) bool {
		var ok bool
		reply, ok = s.Message(thread, "out tokens")
		return ok
	})
	// Markdown arrives as Slack mrkdwn: **bold** becomes *bold*.
	if reply.Channel != "C1" || !strings.Contains(reply.Text, "You said: *hello bridge*") || !reply.Mrkdwn {
		t.Errorf("reply %+v; want the rendered demo echo in C1's thread", reply)
	}
	if reply.Edits == 0 {
		t.Errorf("reply was never edited; want a streamed reply")
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
	for _, secret := range []string{fake.Options().BotToken, fake.Options().AppToken} {
		if strings.Contains(stderr.String(), secret) {
			t.Errorf("serve logged a token")
		}
	}
}
