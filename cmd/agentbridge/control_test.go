package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/discord/discordtest"
	"github.com/agentbridge/agentbridge/adapters/slack/slacktest"
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

// controlConfig is a serve config offering profiles a (default) and b, with
// the platform section given.
func controlConfig(t *testing.T, section string) string {
	t.Helper()
	dir := t.TempDir()
	return writeConfig(t, fmt.Sprintf(`store: %s
profiles: {a: %s, b: %s}
default_profile: a
presenter: {placeholder_delay: 0s}
%s`, filepath.Join(dir, "bridge.db"), controlProfile(t, dir, "a", ""), controlProfile(t, dir, "b", "description: the second agent\n"), section))
}

// TestServeAgentControlSlack: "@bot agent" in a Slack thread shows the
// agents as buttons; a press switches the thread, a stranger's press gets
// an ephemeral refusal, and switching back resumes the first agent's
// session (serve, the fake Slack, real agent processes, a real store).
func TestServeAgentControlSlack(t *testing.T) {
	fake := slacktest.NewServer(slacktest.Options{})
	defer fake.Close()
	t.Setenv("TEST_SLACK_BOT_TOKEN", fake.Options().BotToken)
	t.Setenv("TEST_SLACK_APP_TOKEN", fake.Options().AppToken)
	cfg := controlConfig(t, fmt.Sprintf(`slack:
  enabled: true
  api_url: %s
  bot_token: ${TEST_SLACK_BOT_TOKEN}
  app_token: ${TEST_SLACK_APP_TOKEN}
  allow_users: [U1]
  profiles: [b]
`, fake.APIURL()))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &lockedBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve", "--config", cfg}, nil, &bytes.Buffer{}, stderr) }()
	find := func(what, thread, sub string) slacktest.Message {
		t.Helper()
		var m slacktest.Message
		wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
		defer wcancel()
		if err := fake.WaitFor(wctx, func(s *slacktest.State) bool {
			var ok bool
			m, ok = s.Message(thread, sub)
			return ok
		}); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, stderr.String())
		}
		return m
	}
	if err := fake.WaitFor(ctx, func(s *slacktest.State) bool { return s.Connected() > 0 }); err != nil {
		t.Fatal(err)
	}
	const thread = "500.000001"
	post := func(id, ts, text string) {
		fake.SendEvent(id, map[string]any{"type": "app_mention", "user": "U1", "text": "<@UBOT> " + text,
			"ts": ts, "thread_ts": thread, "channel": "C1", "event_ts": ts})
	}
	fake.SendEvent("E1", map[string]any{"type": "app_mention", "user": "U1", "text": "<@UBOT> msg-one", "ts": thread, "channel": "C1", "event_ts": thread})
	one := find("first reply", thread, "msg-one")
	idA := strings.Fields(one.Text)[1]
	post("E2", "500.000002", "agent")
	menu := find("the menu", thread, "Agents here")
	if got := strings.Join(menu.Buttons(), " "); got != "agent:a agent:b" {
		t.Fatalf("menu buttons %q, want agent:a agent:b", got)
	}
	fake.Press("U9", "C1", thread, menu.TS, "agent:b")
	wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
	defer wcancel()
	if err := fake.WaitFor(wctx, func(s *slacktest.State) bool { return s.Calls("chat.postEphemeral") > 0 }); err != nil {
		t.Fatalf("the stranger's press got no ephemeral refusal: %v\n%s", err, stderr.String())
	}
	fake.Press("U1", "C1", thread, menu.TS, "agent:b")
	find("the switch", thread, "Switched to b — the second agent")
	post("E3", "500.000003", "msg-two")
	if two := find("b's reply", thread, "msg-two"); !strings.HasPrefix(two.Text, "new ") || strings.Contains(two.Text, idA) {
		t.Errorf("b's reply %q, want a new session of its own", two.Text)
	}
	post("E4", "500.000004", "agent a")
	find("the switch back", thread, "Switched to a")
	post("E5", "500.000005", "msg-three")
	if three := find("a's reply", thread, "msg-three"); !strings.Contains(three.Text, "resumed "+idA) {
		t.Errorf("back on a: %q, want %s resumed", three.Text, idA)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve = %v", err)
	}
}

// TestServeAgentControlDiscord: the /agent slash command's agent
// subcommand shows the menu with buttons (ephemeral), a press switches
// the channel, and "/agent agent name:a" switches back to a's session.
func TestServeAgentControlDiscord(t *testing.T) {
	t.Setenv("AGENTBRIDGE_TEST_DISCORD_TOKEN", discordTestToken)
	fake := discordtest.NewServer(discordTestToken)
	defer fake.Close()
	fake.AddChannel(discordtest.Channel{ID: "C1", Type: 0, GuildID: "G1"})
	cfg := controlConfig(t, fmt.Sprintf(`discord:
  enabled: true
  token: ${AGENTBRIDGE_TEST_DISCORD_TOKEN}
  api_url: %s
  allow_users: ["111"]
  profiles: [b]
`, fake.URL))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := newSyncBuffer()
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve", "--config", cfg}, nil, &bytes.Buffer{}, stderr) }()
	waitDiscord(t, fake, "gateway", fake.Connected)
	reply := func(what, sub string) string {
		t.Helper()
		var found string
		waitDiscord(t, fake, what, func() bool {
			for _, c := range fake.Contents("C1") {
				if strings.Contains(c, sub) {
					found = c
					return true
				}
			}
			return false
		})
		return found
	}
	fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M1", "C1", "G1", discordAlice, "msg-one", true))
	idA := strings.Fields(reply("first reply", "msg-one"))[1]

	fake.Dispatch("INTERACTION_CREATE", discordtest.SlashCommand("I1", "itok-menu", "C1", "G1", discordAlice, "agent", ""))
	var menu discordtest.Response
	waitDiscord(t, fake, "the menu as the slash response", func() bool {
		var ok bool
		menu, ok = fake.Interaction("itok-menu")
		return ok && strings.Contains(menu.Content, "Agents here")
	})
	if menu.Flags != 64 {
		t.Errorf("menu flags %d, want ephemeral (64)", menu.Flags)
	}
	// The fake shows the response's content before it records the call
	// that carried it: wait for the call rather than read it once.
	waitDiscord(t, fake, "the slash menu's agent:b button", func() bool {
		for _, c := range fake.CallsTo("PATCH", "/webhooks/"+discordtest.AppID+"/itok-menu") {
			if strings.Contains(c.Body, `"custom_id":"agent:b"`) {
				return true
			}
		}
		return false
	})
	// The menu's buttons: pressed as Discord would, by custom id.
	fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M2", "C1", "G1", discordAlice, "agent", true))
	var withButtons discordtest.Message
	waitDiscord(t, fake, "the typed menu with buttons", func() bool {
		for _, m := range fake.Messages("C1") {
			if strings.Contains(m.Content, "Agents here") && strings.Contains(string(m.Components), `"custom_id":"agent:b"`) {
				withButtons = m
				return true
			}
		}
		return false
	})
	fake.Dispatch("INTERACTION_CREATE", discordtest.ButtonPress("I2", "itok-press", "C1", "G1", withButtons.ID, discordAlice, "agent:b"))
	reply("the switch", "Switched to b — the second agent")
	fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M3", "C1", "G1", discordAlice, "msg-two", true))
	if two := reply("b's reply", "msg-two"); !strings.HasPrefix(two, "new ") || strings.Contains(two, idA) {
		t.Errorf("b's reply %q, want a new session", two)
	}
	fake.Dispatch("INTERACTION_CREATE", discordtest.SlashCommand("I3", "itok-back", "C1", "G1", discordAlice, "agent", "a"))
	// The switch runs on the conversation's lane: when b's turn has ended
	// it answers in its own slash response, when the turn is still saving
	// its session the answer follows in the channel.
	waitDiscord(t, fake, "the switch back", func() bool {
		if r, ok := fake.Interaction("itok-back"); ok && strings.Contains(r.Content, "Switched to a") {
			return true
		}
		for _, c := range fake.Contents("C1") {
			if strings.Contains(c, "Switched to a") {
				return true
			}
		}
		return false
	})
	fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M4", "C1", "G1", discordAlice, "msg-three", true))
	if three := reply("a's reply", "msg-three"); !strings.Contains(three, "resumed "+idA) {
		t.Errorf("back on a: %q, want %s resumed", three, idA)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve = %v\n%s", err, stderr.String())
	}
}
