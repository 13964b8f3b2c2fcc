package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/telegram/telegramtest"
	"github.com/agentbridge/agentbridge/internal/testagent"
)

// controlProfile writes a profile running internal/testagent (framed
// replies: "new SID" or "resumed SID" first) with the extra YAML lines.
func controlProfile(t *testing.T, dir, name, extra string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".yaml")
	body := fmt.Sprintf("command: %q\nenv: {%s: \"1\", %s: \"1\", GORACE: atexit_sleep_ms=0}\nstreaming: true\ntimeout_secs: 60\n%s",
		self, testagent.Env, testagent.FrameEnv, extra)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// tgWait waits until a message in chat contains want, after the first
// skip such messages, and returns it.
func tgWait(t *testing.T, fake *telegramtest.Server, b *bridge, chat int64, want string, skip int) telegramtest.Message {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		ch := fake.Changed()
		n := 0
		for _, m := range fake.Messages(chat) {
			if strings.Contains(m.Text, want) {
				if n == skip {
					return m
				}
				n++
			}
		}
		select {
		case <-ch:
		case <-deadline:
			var texts []string
			for _, m := range fake.Messages(chat) {
				texts = append(texts, m.Text)
			}
			t.Fatalf("no message %q in chat %d; messages %q\nlog:\n%s", want, chat, texts, b.logText())
		}
	}
}

// TestServeAgentControlTelegram drives a real serve process against the
// fake Telegram with real agent processes and a real store: the /agent
// menu as an inline keyboard and a press on it, switching agents and back
// with each profile's session kept, an approvers-only profile refused to a
// non-approver, a stranger's press refused, /usage after a few turns,
// /forget, and a reload that removes the picked profile.
func TestServeAgentControlTelegram(t *testing.T) {
	const token = "987654:CONTROL-SECRET"
	fake := telegramtest.NewServer(token)
	defer fake.Close()
	dir := t.TempDir()
	profA := controlProfile(t, dir, "a", "description: the first agent\n")
	profB := controlProfile(t, dir, "b", "description: the second agent\n")
	profY := controlProfile(t, dir, "yolo", "approvers_only: true\n")
	config := func(offer string, withB bool) string {
		profs := fmt.Sprintf("a: %s, yolo: %s", profA, profY)
		if withB {
			profs += ", b: " + profB
		}
		return fmt.Sprintf(`store: %s
profiles: {%s}
default_profile: a
log: {level: debug}
telegram:
  enabled: true
  token: ${AGENTBRIDGE_TEST_TG_TOKEN}
  api_url: %s
  drafts: false
  allow_users: ["1001", "1002"]
  approvers: ["1003"]
  profiles: [%s]
`, filepath.Join(dir, "bridge.db"), profs, fake.URL, offer)
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(config("b, yolo", true)), 0o600); err != nil {
		t.Fatal(err)
	}
	b := startBridge(t, cfg, "AGENTBRIDGE_TEST_TG_TOKEN="+token)

	alice := telegramtest.User(1001, "Alice", "alice")
	bob := telegramtest.User(1002, "Bob", "bob")
	stranger := telegramtest.User(1009, "Mallory", "mallory")
	id := 0
	send := func(from map[string]any, text string) {
		id++
		fake.Push(telegramtest.PrivateMessage(id, from, text))
	}
	sid := regexp.MustCompile(`(new|resumed) (\S+)`)
	send(alice, "msg-one")
	first := tgWait(t, fake, b, 1001, "msg-one", 0)
	m := sid.FindStringSubmatch(first.Text)
	if m == nil || m[1] != "new" {
		t.Fatalf("first reply %q, want a new session", first.Text)
	}
	idA := m[2]

	send(alice, "/agent")
	menu := tgWait(t, fake, b, 1001, "Agents here", 0)
	for _, want := range []string{"▶ a — the first agent", "b — the second agent", "yolo (approvers only)"} {
		if !strings.Contains(menu.Text, want) {
			t.Errorf("menu lacks %q:\n%s", want, menu.Text)
		}
	}
	if !strings.Contains(menu.Markup, `"callback_data":"agent:b"`) || !strings.Contains(menu.Markup, `"inline_keyboard"`) {
		t.Fatalf("menu markup %s, want an inline keyboard with agent:b", menu.Markup)
	}
	fake.Push(telegramtest.CallbackQuery("cb1", alice, 1001, menu.ID, 0, "agent:b"))
	tgWait(t, fake, b, 1001, "🔀 Switched to b — the second agent.", 0)

	send(alice, "msg-two")
	second := tgWait(t, fake, b, 1001, "msg-two", 0)
	if m := sid.FindStringSubmatch(second.Text); m == nil || m[1] != "new" || m[2] == idA {
		t.Fatalf("b's first reply %q, want a session of its own", second.Text)
	}
	send(alice, "/agent a")
	tgWait(t, fake, b, 1001, "🔀 Switched to a", 0)
	send(alice, "msg-three")
	if third := tgWait(t, fake, b, 1001, "msg-three", 0); !strings.Contains(third.Text, "resumed "+idA) {
		t.Fatalf("back on a: %q, want a's session %s resumed", third.Text, idA)
	}

	// Bob may chat but is no approver; Mallory may not chat at all.
	send(bob, "/agent yolo")
	tgWait(t, fake, b, 1002, "Only an approver can switch this conversation to yolo.", 0)
	fake.Push(telegramtest.CallbackQuery("cb2", stranger, 1001, menu.ID, 0, "agent:b"))
	deadline := time.Now().Add(60 * time.Second)
	for {
		refused := false
		for _, c := range fake.Calls("answerCallbackQuery") {
			refused = refused || (c.Form.Get("callback_query_id") == "cb2" && strings.Contains(c.Form.Get("text"), "not allowed"))
		}
		if refused {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stranger's press was not refused; calls %+v\n%s", fake.Calls("answerCallbackQuery"), b.logText())
		}
		time.Sleep(20 * time.Millisecond)
	}

	send(alice, "/usage")
	usage := tgWait(t, fake, b, 1001, "Usage reported by the agents:", 0)
	if !strings.Contains(usage.Text, "This session (default): 3 turn(s), 36 in / 102 out tokens") ||
		!strings.Contains(usage.Text, "Last 24 h on telegram: 3 turn(s)") {
		t.Errorf("/usage = %q", usage.Text)
	}

	send(alice, "/session work")
	tgWait(t, fake, b, 1001, "Switched to new session work.", 0)
	send(alice, "/session default")
	tgWait(t, fake, b, 1001, "Switched to session default.", 0)
	send(alice, "/forget work")
	tgWait(t, fake, b, 1001, "There is no session work here.", 0) // no turn ran in it
	send(alice, "/sessions")
	tgWait(t, fake, b, 1001, "▶ default — a, 3 turn(s)", 0)

	// Pick b, then reload without it: the next turn falls back and says so.
	send(alice, "/agent b")
	tgWait(t, fake, b, 1001, "🔀 Switched to b", 1)
	if err := os.WriteFile(cfg, []byte(config("yolo", false)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := b.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	b.waitLog("config reloaded")
	send(alice, "msg-after")
	tgWait(t, fake, b, 1001, "⚠️ The agent b is no longer offered here; back to a.", 0)
	if r := tgWait(t, fake, b, 1001, "msg-after", 0); !strings.Contains(r.Text, "resumed "+idA) {
		t.Errorf("after the fallback: %q, want a's session resumed", r.Text)
	}
	if strings.Contains(b.logText(), "CONTROL-SECRET") {
		t.Error("the token is in serve's log")
	}
}
