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
// demo agent's streamed reply in its thread — posted and edited as mrkdwn,
// or with native_streaming through chat.startStream/appendStream/stopStream
// as Markdown — and cancelling stops serve.
func TestServeSlack(t *testing.T) {
	tests := []struct {
		name   string
		native bool
		want   string // the echo as the reply shows it
	}{
		// Markdown arrives as Slack mrkdwn: **bold** becomes *bold*.
		{"post and edit", false, "You said: *hello bridge*"},
		// A native stream carries the agent's Markdown as written.
		{"native streaming", true, "You said: **hello bridge**"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { serveSlack(t, tc.native, tc.want) })
	}
}

func serveSlack(t *testing.T, native bool, want string) {
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
  native_streaming: %t
`, filepath.Join(dir, "bridge.db"), fake.APIURL(), native))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &lockedBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve", "--config", cfg}, nil, &bytes.Buffer{}, stderr) }()

	wait := func(what string, cond func(*slacktest.State) bool) {
		t.Helper()
		wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
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
	// at the end, once the turn is over.
	var reply slacktest.Message
	wait("demo reply", func(s *slacktest.State) bool {
		var ok bool
		reply, ok = s.Message(thread, "out tokens")
		return ok
	})
	if reply.Channel != "C1" || !strings.Contains(reply.Text, want) || !reply.Mrkdwn {
		t.Errorf("reply %+v; want %q in C1's thread", reply, want)
	}
	if reply.Edits == 0 {
		t.Errorf("reply was never edited or appended to; want a streamed reply")
	}
	updates := len(fake.Calls("chat.update"))
	if native && (!reply.Streamed || reply.Streaming || updates != 0) {
		t.Errorf("native: reply streamed %v, still streaming %v, %d chat.update calls; want a stopped stream and no updates",
			reply.Streamed, reply.Streaming, updates)
	}
	if !native && (reply.Streamed || updates == 0 || len(fake.Calls("chat.startStream")) != 0) {
		t.Errorf("post and edit: reply streamed %v, %d chat.update calls; want edits and no native stream", reply.Streamed, updates)
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
