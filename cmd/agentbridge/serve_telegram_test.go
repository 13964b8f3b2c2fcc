package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/telegram/telegramtest"
)

// tgLogBuffer is a bytes.Buffer safe for the logger and the test to share.
type tgLogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *tgLogBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *tgLogBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestServeTelegram(t *testing.T) {
	const token = "987654:SERVE-SECRET"
	t.Setenv("AGENTBRIDGE_DEMO_DELAY", "1ms")
	t.Setenv("AGENTBRIDGE_TEST_TG_TOKEN", token)
	fake := telegramtest.NewServer(token)
	defer fake.Close()
	dir := t.TempDir()
	cfg := writeConfig(t, fmt.Sprintf(`store: %s
profiles: {demo: builtin:demo}
default_profile: demo
log: {level: debug}
telegram:
  enabled: true
  token: ${AGENTBRIDGE_TEST_TG_TOKEN}
  api_url: %s
  allow_users: ["1001"]
`, filepath.Join(dir, "bridge.db"), fake.URL))

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stderr tgLogBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve", "--config", cfg}, nil, &bytes.Buffer{}, &stderr) }()

	alice := telegramtest.User(1001, "Alice", "alice")
	fake.Push(telegramtest.PrivateMessage(1, alice, "my name is Ada"))
	timeout := time.After(30 * time.Second)
	for {
		ch := fake.Changed()
		if msgs := fake.Messages(1001); len(msgs) > 0 && strings.Contains(msgs[len(msgs)-1].Text, "Nice to meet you") &&
			len(fake.Pending()) == 0 && strings.Contains(msgs[len(msgs)-1].Text, "remember") {
			break
		}
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("no streamed demo reply; messages %+v\nlog:\n%s", fake.Messages(1001), stderr.String())
		case err := <-done:
			t.Fatalf("serve returned early: %v\n%s", err, stderr.String())
		}
	}
	// drafts default to on: the DM reply streamed as a draft first.
	if got := fake.Calls("sendMessageDraft"); len(got) == 0 {
		t.Errorf("no sendMessageDraft calls in a DM with drafts on by default")
	}
	if got := fake.Calls("setMyCommands"); len(got) != 1 {
		t.Errorf("setMyCommands calls = %d; want 1", len(got))
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v after cancel; want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	if strings.Contains(stderr.String(), "SERVE-SECRET") {
		t.Errorf("token in serve's log:\n%s", stderr.String())
	}
}

func TestServeTelegramBadToken(t *testing.T) {
	fake := telegramtest.NewServer("right:token")
	defer fake.Close()
	t.Setenv("AGENTBRIDGE_TEST_TG_TOKEN", "1:WRONG-SECRET")
	cfg := writeConfig(t, fmt.Sprintf(`store: %s
profiles: {demo: builtin:demo}
default_profile: demo
telegram:
  enabled: true
  token: ${AGENTBRIDGE_TEST_TG_TOKEN}
  api_url: %s
  allow_users: ["1001"]
`, filepath.Join(t.TempDir(), "bridge.db"), fake.URL))
	var stderr bytes.Buffer
	err := run(t.Context(), []string{"serve", "--config", cfg}, nil, &bytes.Buffer{}, &stderr)
	if err == nil {
		t.Fatal("serve started with a rejected token")
	}
	out := err.Error() + stderr.String()
	if !strings.Contains(out, "401") || strings.Contains(out, "WRONG-SECRET") {
		t.Errorf("serve error %q, stderr %q; want a 401 without the token", err, stderr.String())
	}
	// A rejected token is fixed in the config, not by a restart (README).
	if code := exitStatus(err, io.Discard); code != exitAdaptersStopped {
		t.Errorf("exit status %d, want %d", code, exitAdaptersStopped)
	}
}

func TestServeTelegramWebhook(t *testing.T) {
	const token = "987654:HOOK-SECRET"
	t.Setenv("AGENTBRIDGE_DEMO_DELAY", "1ms")
	t.Setenv("AGENTBRIDGE_TEST_TG_TOKEN", token)
	t.Setenv("AGENTBRIDGE_TEST_TG_HOOK", "hook_secret-1")
	fake := telegramtest.NewServer(token)
	defer fake.Close()
	// A free port for the webhook listener.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := writeConfig(t, fmt.Sprintf(`store: %s
profiles: {demo: builtin:demo}
default_profile: demo
telegram:
  enabled: true
  token: ${AGENTBRIDGE_TEST_TG_TOKEN}
  api_url: %s
  mode: webhook
  webhook_listen: %s
  webhook_url: https://bridge.example/tg
  webhook_secret: ${AGENTBRIDGE_TEST_TG_HOOK}
  drafts: false
  allow_users: ["1001"]
`, filepath.Join(t.TempDir(), "bridge.db"), fake.URL, addr))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stderr tgLogBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve", "--config", cfg}, nil, &bytes.Buffer{}, &stderr) }()

	// Once setWebhook is called, the listener is up.
	timeout := time.After(30 * time.Second)
	wait := func(what string, cond func() bool) {
		t.Helper()
		for {
			ch := fake.Changed()
			if cond() {
				return
			}
			select {
			case <-ch:
			case <-timeout:
				t.Fatalf("timed out waiting for %s; log:\n%s", what, stderr.String())
			case err := <-done:
				t.Fatalf("serve returned early: %v\n%s", err, stderr.String())
			}
		}
	}
	wait("setWebhook", func() bool { return len(fake.Calls("setWebhook")) == 1 })
	upd := telegramtest.PrivateMessage(1, telegramtest.User(1001, "Alice", "alice"), "my name is Ada")
	upd["update_id"] = 1
	body, _ := json.Marshal(upd)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/", bytes.NewReader(body))
	req.Header.Set("X-Telegram-Bot-Api-Secret-Token", "hook_secret-1")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("delivery: HTTP %d", res.StatusCode)
	}
	wait("demo reply", func() bool {
		msgs := fake.Messages(1001)
		return len(msgs) > 0 && strings.Contains(msgs[len(msgs)-1].Text, "remember")
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve returned %v after cancel; want nil", err)
	}
	if strings.Contains(stderr.String(), "HOOK-SECRET") || strings.Contains(stderr.String(), "hook_secret-1") {
		t.Errorf("a secret in serve's log:\n%s", stderr.String())
	}
}

func TestServeTelegramConflictStopsServe(t *testing.T) {
	const token = "987654:CONFLICT-SECRET"
	t.Setenv("AGENTBRIDGE_TEST_TG_TOKEN", token)
	fake := telegramtest.NewServer(token)
	defer fake.Close()
	fake.Fail("getUpdates", telegramtest.Conflict)
	cfg := writeConfig(t, fmt.Sprintf(`store: %s
profiles: {demo: builtin:demo}
default_profile: demo
telegram:
  enabled: true
  token: ${AGENTBRIDGE_TEST_TG_TOKEN}
  api_url: %s
  allow_users: ["1001"]
`, filepath.Join(t.TempDir(), "bridge.db"), fake.URL))
	var stderr tgLogBuffer
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	err := run(ctx, []string{"serve", "--config", cfg}, nil, &bytes.Buffer{}, &stderr)
	if err == nil || ctx.Err() != nil {
		t.Fatalf("serve = %v (ctx %v); want it to stop on its own with the 409", err, ctx.Err())
	}
	out := err.Error() + stderr.String()
	if !strings.Contains(out, "409") || strings.Contains(out, "CONFLICT-SECRET") {
		t.Errorf("serve error %q; want the 409 explained without the token\n%s", err, stderr.String())
	}
	// Another poller is a deployment mistake: the status a service
	// manager is told not to restart on (deploy/agentbridge.service).
	if code := exitStatus(err, io.Discard); code != exitAdaptersStopped {
		t.Errorf("exit status %d, want %d", code, exitAdaptersStopped)
	}
}

// TestServeTelegramWatchedStreams: two DMs (drafts) and a group (edits)
// stream long answers at once through serve against the fake's flood
// limits; every state of the fake is observed — a DM's visible text being
// its messages and its latest draft, so a draft replaced by the next one
// must already be in a message — and the replies checked as a user reads
// them (serve_watch_test.go).
func TestServeTelegramWatchedStreams(t *testing.T) {
	const token = "987654:WATCH-SECRET"
	t.Setenv("AGENTBRIDGE_TEST_TG_TOKEN", token)
	fake := telegramtest.NewServer(token)
	defer fake.Close()
	cfg := writeConfig(t, fmt.Sprintf(`store: %s
profiles: {watch: %s}
default_profile: watch
presenter: {placeholder_delay: 0s}
telegram:
  enabled: true
  token: ${AGENTBRIDGE_TEST_TG_TOKEN}
  api_url: %s
  allow_users: ["1001", "1002"]
`, filepath.Join(t.TempDir(), "bridge.db"), writeProfile(t, "watch", ""), fake.URL))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stderr tgLogBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve", "--config", cfg}, nil, &bytes.Buffer{}, &stderr) }()

	// About 10,000 characters each: three messages under Telegram's 4,096.
	chats := []int64{1001, 1002, -100777}
	var ws []*watcher
	for i, chat := range chats {
		spec := watchSpec{string(rune('m' + i)), 150, 65, 25 * time.Millisecond}
		ws = append(ws, newWatcher(spec))
		switch {
		case chat > 0:
			fake.Push(telegramtest.PrivateMessage(1, telegramtest.User(chat, "U", ""), spec.message()))
		default:
			fake.Push(telegramtest.GroupMessage(chat, 5, 0, telegramtest.User(1001, "Alice", "alice"), "@"+telegramtest.BotUsername+" "+spec.message()))
		}
	}
	replies := func(withDrafts bool) [][]string {
		out := make([][]string, len(chats))
		drafts := map[string]string{}
		if withDrafts {
			for _, c := range fake.Calls("sendMessageDraft") {
				if c.Fault == nil {
					drafts[c.Form.Get("chat_id")] = c.Form.Get("text")
				}
			}
		}
		for i, chat := range chats {
			for _, m := range fake.Messages(chat) {
				out[i] = append(out[i], telegramVisible(m.Text))
			}
			if d, ok := drafts[fmt.Sprint(chat)]; ok {
				out[i] = append(out[i], telegramVisible(d))
			}
		}
		return out
	}
	timeout := time.After(60 * time.Second)
	for {
		ch := fake.Changed()
		if watchAll(ws, replies(true), replies(false)) {
			break
		}
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("the replies did not complete: %q\n%s", replies(false), stderr.String())
		case err := <-done:
			t.Fatalf("serve returned early: %v\n%s", err, stderr.String())
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve = %v\n%s", err, stderr.String())
	}
	final := replies(false)
	watchAll(ws, replies(true), final)
	for i, w := range ws {
		w.check(t, final[i], 4096)
		// Telegram has no mass mentions: the text stays as written.
		for _, m := range watchMentions {
			if !strings.Contains(strings.Join(final[i], "\n"), m+" ") {
				t.Errorf("%s: mention %q changed; want it as written", w.spec.prefix, m)
			}
		}
		t.Logf("%s: %d observations, %d messages, lengths %v", w.spec.prefix, w.obs, len(final[i]), runeLens(final[i]))
	}
	if len(fake.Calls("sendMessageDraft")) == 0 {
		t.Error("no sendMessageDraft calls: the DMs did not stream as drafts")
	}
	// A full piece's text is final: it becomes a real message in one call,
	// not a draft update the message then repeats (a call of the chat's
	// budget the final text then waits for). One repeat in a chat can be
	// honest: a draft sent while the agent's output paused exactly where
	// the piece is later cut could not know the piece was full (seen on a
	// loaded machine). Sending every full piece twice, the regression this
	// guards against (0d7bd5f), repeats each of a DM's several pieces.
	lastDraft := map[string]string{}
	repeats := map[string][]int{}
	for _, c := range fake.Calls("sendMessageDraft", "sendMessage") {
		chat, text := c.Form.Get("chat_id"), c.Form.Get("text")
		switch {
		case c.Method == "sendMessageDraft":
			lastDraft[chat] = text
		case text == lastDraft[chat] && !strings.Contains(text, "Done "):
			repeats[chat] = append(repeats[chat], len(text))
		}
	}
	for chat, lens := range repeats {
		if len(lens) > 1 {
			t.Errorf("chat %s: %d full pieces went as a draft update and then as the message (%v characters)", chat, len(lens), lens)
		}
	}
	for _, c := range fake.Calls() {
		if c.Fault != nil && c.Fault.Code == 429 {
			t.Errorf("%s to %s at %s was answered 429", c.Method, c.Form.Get("chat_id"), c.At.Format("15:04:05.000"))
		}
	}
}
