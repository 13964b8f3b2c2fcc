package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/telegram/telegramtest"
	"github.com/agentbridge/agentbridge/daemon/trigger"
)

// serve with a schedule and the HTTP trigger, against the fake Telegram:
// the schedule fires into its group and streams the demo agent's answer
// there, its next run resumes the same session, /schedules lists it; the
// trigger starts a turn whose reply wait returns, and hostile requests are
// refused.
func TestServeSchedulesAndTrigger(t *testing.T) {
	const token = "987654:SCHED-SECRET"
	const trigToken = "trigger-token-0123456789abcdef"
	t.Setenv("AGENTBRIDGE_DEMO_DELAY", "1ms")
	t.Setenv("AGENTBRIDGE_TEST_TG_TOKEN", token)
	t.Setenv("AGENTBRIDGE_TEST_TRIGGER", trigToken)
	fake := telegramtest.NewServer(token)
	defer fake.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	const group, other = -100123, -100777
	cfg := writeConfig(t, fmt.Sprintf(`store: %s
profiles: {demo: builtin:demo}
default_profile: demo
queue_depth: 1        # the schedule fires faster than the group's send budget drains
shutdown_grace: 5s
telegram:
  enabled: true
  token: ${AGENTBRIDGE_TEST_TG_TOKEN}
  api_url: %s
  allow_users: ["1001"]
  allow_chats: ["%d"]
schedules:
  - name: ci-report
    platform: telegram
    channel: "%d"
    cron: "*/3 * * * * *"
    message: CI report please
    session: reports
trigger:
  listen: %s
  token: ${AGENTBRIDGE_TEST_TRIGGER}
`, filepath.Join(t.TempDir(), "bridge.db"), fake.URL, other, group, addr))

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stderr tgLogBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve", "--config", cfg}, nil, &bytes.Buffer{}, &stderr) }()
	deadline := time.After(60 * time.Second)
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for {
			ch := fake.Changed()
			if cond() {
				return
			}
			select {
			case <-ch:
			case <-time.After(100 * time.Millisecond): // the trigger's answers are not the fake's changes
			case <-deadline:
				t.Fatalf("timed out waiting for %s; messages %+v\nlog:\n%s", what, fake.Messages(group), stderr.String())
			case err := <-done:
				t.Fatalf("serve returned early: %v\n%s", err, stderr.String())
			}
		}
	}
	find := func(chat int64, parts ...string) bool {
		for _, m := range fake.Messages(chat) {
			ok := true
			for _, p := range parts {
				ok = ok && strings.Contains(m.Text, p)
			}
			if ok {
				return true
			}
		}
		return false
	}
	// Two runs in the group, the second resuming the first's session.
	waitFor("the first scheduled reply", func() bool { return find(group, "You said", "CI report please", "turn <b>1</b> of this session") })
	waitFor("the second scheduled reply", func() bool { return find(group, "You said", "CI report please", "turn <b>2</b> of this session") })
	for _, m := range fake.Messages(group) {
		if strings.Contains(m.Text, "turn <b>1</b> of this session") && m.Edits == 0 {
			t.Errorf("scheduled reply %q was never edited; want it streamed", m.Text)
		}
	}
	if !strings.Contains(stderr.String(), "schedule=ci-report") {
		t.Errorf("the log does not name the schedule:\n%s", stderr.String())
	}

	alice := telegramtest.User(1001, "Alice", "alice")
	fake.Push(telegramtest.GroupMessage(group, 900, 0, alice, "/schedules"))
	waitFor("/schedules", func() bool { return find(group, "ci-report", "*/3 * * * * *", "next") })

	url := "http://" + addr + trigger.Path
	call := func(auth, body string) (int, trigger.Response) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("trigger: %v\n%s", err, stderr.String())
		}
		defer resp.Body.Close()
		var r trigger.Response
		json.NewDecoder(resp.Body).Decode(&r)
		return resp.StatusCode, r
	}
	code, r := call(trigToken, fmt.Sprintf(`{"platform":"telegram","channel":"%d","message":"deploy 42 finished","wait":true}`, other))
	if code != http.StatusOK || r.Status != "ok" || !strings.Contains(r.Reply, "deploy 42 finished") || r.TurnID == "" {
		t.Fatalf("trigger with wait: %d %+v; want 200 with the reply\n%s", code, r, stderr.String())
	}
	if !find(other, "deploy 42 finished") {
		t.Errorf("the triggered reply is not in the chat: %+v", fake.Messages(other))
	}
	code, r = call(trigToken, fmt.Sprintf(`{"platform":"telegram","channel":"%d","message":"again"}`, other))
	if code != http.StatusAccepted || r.TurnID == "" {
		t.Errorf("trigger without wait: %d %+v; want 202 with a turn id", code, r)
	}
	waitFor("the second triggered reply", func() bool { return find(other, "again") })
	for _, tc := range []struct {
		name, auth, body string
		want             int
	}{
		{"no token", "", `{"platform":"telegram","channel":"-100777","message":"x"}`, 401},
		{"wrong token", "wrong", `{"platform":"telegram","channel":"-100777","message":"x"}`, 401},
		{"unknown conversation", trigToken, `{"platform":"telegram","channel":"-42","message":"x"}`, 404},
		{"unknown platform", trigToken, `{"platform":"irc","channel":"-100777","message":"x"}`, 404},
		{"huge body", trigToken, `{"message":"` + strings.Repeat("x", 100<<10) + `"}`, 413},
	} {
		if code, r := call(tc.auth, tc.body); code != tc.want || r.Error == "" {
			t.Errorf("%s: %d %+v; want %d", tc.name, code, r, tc.want)
		}
	}
	// A flood: past the burst, 429s.
	limited := false
	for range 3 * trigger.Burst {
		if code, _ := call("wrong", `{}`); code == http.StatusTooManyRequests {
			limited = true
			break
		}
	}
	if !limited {
		t.Errorf("no 429 in a flood of %d requests", 3*trigger.Burst)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v after cancel\n%s", err, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not stop\n%s", stderr.String())
	}
	for _, secret := range []string{"SCHED-SECRET", trigToken} {
		if strings.Contains(stderr.String(), secret) {
			t.Errorf("a secret in serve's log")
		}
	}
}
