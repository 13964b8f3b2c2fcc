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

// TestServeSlackWatchedStreams: three threads stream long answers at once
// through serve, every state of the fake observed and the replies checked
// as a user reads them (serve_watch_test.go). The fake enforces Tier 3's
// 50 chat.update calls a minute and Tier 4's 100 appends. serve's default
// path is post and edit, split under 3,800 characters; with
// native_streaming each reply is one streamed message (Markdown), and a
// stream Slack breaks midway goes on as posts and edits.
func TestServeSlackWatchedStreams(t *testing.T) {
	for _, tc := range []struct {
		name   string
		native bool
		fail   *slacktest.Failure // for chat.appendStream
	}{
		{"post and edit (default)", false, nil},
		{"native streaming", true, nil},
		{"native stream breaks", true, &slacktest.Failure{Error: "internal_error", Skip: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) { serveSlackWatched(t, tc.native, tc.fail) })
	}
}

func serveSlackWatched(t *testing.T, native bool, fail *slacktest.Failure) {
	fake := slacktest.NewServer(slacktest.Options{UpdateLimit: 50, AppendLimit: 100})
	defer fake.Close()
	if fail != nil {
		fake.Fail("chat.appendStream", *fail)
	}
	t.Setenv("TEST_SLACK_BOT_TOKEN", fake.Options().BotToken)
	t.Setenv("TEST_SLACK_APP_TOKEN", fake.Options().AppToken)
	dir := t.TempDir()
	cfg := writeConfig(t, fmt.Sprintf(`store: %s
profiles: {watch: %s}
default_profile: watch
presenter: {placeholder_delay: 0s}
slack:
  enabled: true
  api_url: %s
  bot_token: ${TEST_SLACK_BOT_TOKEN}
  app_token: ${TEST_SLACK_APP_TOKEN}
  allow_users: [U1]
  native_streaming: %t
`, filepath.Join(dir, "bridge.db"), writeProfile(t, "watch", ""), fake.APIURL(), native))
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

	// About 9,200 characters each: three messages under Slack's 3,800.
	specs := []watchSpec{{"m", 150, 60, 25 * time.Millisecond}, {"n", 150, 60, 25 * time.Millisecond}, {"o", 150, 60, 25 * time.Millisecond}}
	threads := []string{"500.000001", "500.000002", "500.000003"}
	var ws []*watcher
	for i, s := range specs {
		ws = append(ws, newWatcher(s))
		fake.SendEvent(fmt.Sprintf("EvW%d", i), map[string]any{"type": "app_mention", "user": "U1",
			"text": "<@UBOT> " + s.message(), "ts": threads[i], "channel": "C1", "event_ts": threads[i]})
	}
	replies := func(msgs []slacktest.Message) (raw, visible [][]string) {
		raw, visible = make([][]string, len(threads)), make([][]string, len(threads))
		for _, m := range msgs {
			for i, th := range threads {
				if m.ThreadTS == th {
					raw[i] = append(raw[i], m.Text)
					visible[i] = append(visible[i], slackVisible(m.Text))
				}
			}
		}
		return raw, visible
	}
	// Every change the fake records is observed, under its lock.
	wait("every reply complete", func(s *slacktest.State) bool {
		_, visible := replies(s.Messages())
		return watchAll(ws, visible, visible)
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve = %v\n%s", err, stderr.String())
	}
	raw, visible := replies(fake.Messages())
	watchAll(ws, visible, visible)
	fellBack := 0
	for i, w := range ws {
		limit := 3800
		if native && len(visible[i]) == 1 {
			limit = 0 // one streamed message: nothing split
		} else if native {
			fellBack++
		}
		w.check(t, visible[i], limit)
		all := strings.Join(raw[i], "\n")
		// Slack pings only through <!…>: that form is defused, the bare
		// words stay as written.
		if strings.Contains(all, "<!channel>") || strings.Contains(all, "<@123>") {
			t.Errorf("%s: <!channel> or <@123> arrived intact: a ping", w.spec.prefix)
		}
		if !strings.Contains(all, "@everyone @here") {
			t.Errorf("%s: @everyone @here changed; want them as written", w.spec.prefix)
		}
	}
	if fail != nil && fellBack == 0 {
		t.Errorf("no reply went on as posts after its stream broke")
	}
	if n := len(fake.Calls("chat.startStream")); native != (n > 0) {
		t.Errorf("%d chat.startStream calls with native_streaming %t", n, native)
	}
	for _, c := range fake.Calls() {
		if c.Status == 429 || c.Error == "ratelimited" {
			t.Errorf("%s at %s was answered 429", c.Method, c.At.Format("15:04:05.000"))
		}
	}
	for i, w := range ws {
		t.Logf("%s: %d observations, %d messages, lengths %v", w.spec.prefix, w.obs, len(visible[i]), runeLens(visible[i]))
	}
	t.Logf("%d chat.update, %d chat.postMessage, %d chat.appendStream calls", len(fake.Calls("chat.update")),
		len(fake.Calls("chat.postMessage")), len(fake.Calls("chat.appendStream")))
}
