package main

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/telegram/telegramtest"
)

// serve with the operator console, against the fake Telegram: a turn
// waiting on a permission prompt is on the live page with its prompt, a
// 429 is counted in the adapter's health, the
// console's Stop (a bearer client) stops it as /stop would, and no page
// shows the bot's token or the console's.
func TestServeConsole(t *testing.T) {
	const token = "987654:CONSOLE-TG-SECRET"
	const consoleToken = "console-token-0123456789abcdef"
	t.Setenv("AGENTBRIDGE_DEMO_DELAY", "1ms")
	t.Setenv("AGENTBRIDGE_TEST_TG_TOKEN", token)
	t.Setenv("AGENTBRIDGE_TEST_CONSOLE", consoleToken)
	fake := telegramtest.NewServer(token)
	defer fake.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := writeConfig(t, fmt.Sprintf(`store: %s
profiles: {demo: builtin:demo}
default_profile: demo
shutdown_grace: 5s
telegram:
  enabled: true
  token: ${AGENTBRIDGE_TEST_TG_TOKEN}
  api_url: %s
  allow_users: ["1001"]
console:
  listen: %s
  token: ${AGENTBRIDGE_TEST_CONSOLE}
`, filepath.Join(t.TempDir(), "bridge.db"), fake.URL, addr))

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stderr tgLogBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve", "--config", cfg}, nil, &bytes.Buffer{}, &stderr) }()
	get := func(method, path, auth string) (int, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, "http://"+addr+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	deadline := time.After(60 * time.Second)
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			select {
			case <-fake.Changed():
			case <-time.After(50 * time.Millisecond): // the console's answers are not the fake's changes
			case <-deadline:
				t.Fatalf("timed out waiting for %s; messages %+v\nlog:\n%s", what, fake.Messages(1001), stderr.String())
			case err := <-done:
				t.Fatalf("serve returned early: %v\n%s", err, stderr.String())
			}
		}
	}
	waitFor("the console", func() bool { code, _ := get("GET", "/login", ""); return code == http.StatusOK })
	if code, _ := get("GET", "/history", "wrong-token-0123456789"); code != http.StatusUnauthorized {
		t.Errorf("a wrong bearer token: %d, want 401", code)
	}

	// The prompt's first send meets a 429: the live page counts it.
	fake.Fail("sendMessage", telegramtest.RateLimit(1))
	alice := telegramtest.User(1001, "Alice", "alice")
	fake.Push(telegramtest.PrivateMessage(1, alice, "write a file"))
	var page string
	waitFor("the turn and its prompt on the live page", func() bool {
		_, page = get("GET", "/", consoleToken)
		return strings.Contains(page, "Waiting for a permission answer") && strings.Contains(page, "Alice") &&
			regexp.MustCompile(`sends per private chat: \d+ %, 1 × 429`).MatchString(page)
	})
	// The stop form as the page has it.
	form := url.Values{}
	for _, m := range regexp.MustCompile(`<input type="hidden" name="(platform|workspace|channel|thread)" value="([^"]*)">`).FindAllStringSubmatch(page, -1) {
		form.Set(m[1], html.UnescapeString(m[2]))
	}
	if form.Get("channel") == "" {
		t.Fatalf("no stop form on the live page:\n%s", page)
	}
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+addr+"/stop", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+consoleToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("stop: %s", resp.Status)
	}
	waitFor("the stopped reply", func() bool {
		for _, m := range fake.Messages(1001) {
			if strings.Contains(m.Text, "Stopped") {
				return true
			}
		}
		return false
	})
	waitFor("the live page empty", func() bool {
		_, page = get("GET", "/", consoleToken)
		return strings.Contains(page, "Nothing is running")
	})
	if !strings.Contains(page, "telegram") || !strings.Contains(page, "running since") {
		t.Errorf("the live page lacks the adapter:\n%s", page)
	}
	if !strings.Contains(stderr.String(), "operator=\"bearer from ") {
		t.Errorf("the log does not name the operator:\n%s", stderr.String())
	}
	for _, p := range []string{"/", "/history", "/usage"} {
		_, body := get("GET", p, consoleToken)
		for _, s := range []string{"CONSOLE-TG-SECRET", consoleToken} {
			if strings.Contains(body, s) {
				t.Errorf("%s shows a secret %q", p, s)
			}
		}
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
}
