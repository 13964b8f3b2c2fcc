package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/discord/discordtest"
)

const discordTestToken = "serve-test-bot-token-0123456789"

// syncBuffer is a bytes.Buffer safe for serve's logger and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{} }

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serveDiscord runs `agentbridge serve` against fake until the returned
// stop function is called; stop reports serve's result.
func serveDiscord(t *testing.T, fake *discordtest.Server, store string, extra string) (stop func() error, stderr *syncBuffer) {
	s := startServeDiscord(t, fake, store, extra)
	return s.stop, s.stderr
}

// servedDiscord is one running `agentbridge serve`.
type servedDiscord struct {
	t      *testing.T
	cancel context.CancelFunc
	done   chan error
	stderr *syncBuffer
}

func startServeDiscord(t *testing.T, fake *discordtest.Server, store string, extra string) *servedDiscord {
	t.Helper()
	return startServeDiscordProfiles(t, fake, store, "profiles: {demo: builtin:demo}\ndefault_profile: demo\n", extra)
}

// startServeDiscordProfiles is startServeDiscord with the config's
// profiles and default_profile lines given.
func startServeDiscordProfiles(t *testing.T, fake *discordtest.Server, store, profiles, extra string) *servedDiscord {
	t.Helper()
	cfg := writeConfig(t, fmt.Sprintf(`store: %s
%spresenter: {placeholder_delay: 0s}
discord:
  enabled: true
  token: ${AGENTBRIDGE_TEST_DISCORD_TOKEN}
  api_url: %s
  session_scope: thread
  allow_users: ["111"]
%s`, store, profiles, fake.URL, extra))
	ctx, cancel := context.WithCancel(context.Background())
	s := &servedDiscord{t: t, cancel: cancel, done: make(chan error, 1), stderr: newSyncBuffer()}
	go func() { s.done <- run(ctx, []string{"serve", "--config", cfg}, nil, &bytes.Buffer{}, s.stderr) }()
	t.Cleanup(cancel)
	return s
}

// stop cancels serve and returns its result.
func (s *servedDiscord) stop() error {
	s.cancel()
	return s.wait()
}

// wait returns serve's result once it ends by itself.
func (s *servedDiscord) wait() error {
	select {
	case err := <-s.done:
		return err
	case <-time.After(30 * time.Second):
		s.t.Fatal("serve did not return")
		return nil
	}
}

func waitDiscord(t *testing.T, fake *discordtest.Server, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if !fake.Wait(ctx, cond) {
		t.Fatalf("timed out waiting for %s; calls: %d", what, len(fake.Calls()))
	}
}

func hasContent(fake *discordtest.Server, channel, want string) bool {
	for _, c := range fake.Contents(channel) {
		if strings.Contains(c, want) {
			return true
		}
	}
	return false
}

var (
	discordAlice = discordtest.User{ID: "111", Name: "alice"}
	discordBob   = discordtest.User{ID: "222", Name: "bob"}
)

func TestServeDiscord(t *testing.T) {
	t.Setenv("AGENTBRIDGE_DEMO_DELAY", "1ms")
	t.Setenv("AGENTBRIDGE_TEST_DISCORD_TOKEN", discordTestToken)
	fake := discordtest.NewServer(discordTestToken)
	defer fake.Close()
	fake.AddChannel(discordtest.Channel{ID: "C1", Type: 0, GuildID: "G1"})
	fake.AddChannel(discordtest.Channel{ID: "T1", Type: 11, GuildID: "G1", ParentID: "C1", OwnerID: "999"})
	store := filepath.Join(t.TempDir(), "bridge.db")

	stop, stderr := serveDiscord(t, fake, store, "")
	waitDiscord(t, fake, "gateway", fake.Connected)

	// A message in → the streamed demo reply out, in the thread.
	fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M1", "T1", "G1", discordAlice, "my name is Ada", true))
	waitDiscord(t, fake, "the reply", func() bool { return hasContent(fake, "T1", "Nice to meet you, **Ada**") })

	// A duplicate delivery runs once.
	fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M1", "T1", "G1", discordAlice, "my name is Ada", true))

	// A permission prompt: a stranger is refused privately, the requester allows.
	fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M2", "T1", "G1", discordAlice, "please write a file", true))
	var prompt discordtest.Message
	waitDiscord(t, fake, "the permission prompt", func() bool {
		for _, m := range fake.Messages("T1") {
			// The prompt, not the ⏭ of a queued notice.
			if strings.Contains(string(m.Components), "custom_id") && strings.Contains(m.Content, "Permission needed") {
				prompt = m
				return true
			}
		}
		return false
	})
	var rows []struct {
		Components []struct {
			CustomID string `json:"custom_id"`
			Label    string `json:"label"`
		} `json:"components"`
	}
	if err := json.Unmarshal(prompt.Components, &rows); err != nil || len(rows) == 0 || len(rows[0].Components) != 3 {
		t.Fatalf("prompt components = %s (%v), want one row of Allow/Deny/Allow for this session", prompt.Components, err)
	}
	allow := rows[0].Components[0]
	if allow.Label != "Allow" || len(allow.CustomID) > 100 {
		t.Fatalf("first button = %+v", allow)
	}
	fake.Dispatch("INTERACTION_CREATE", discordtest.ButtonPress("I1", "tok-stranger", "T1", "G1", prompt.ID, discordBob, allow.CustomID))
	waitDiscord(t, fake, "the stranger's ephemeral refusal", func() bool {
		for _, c := range fake.CallsTo("POST", "/webhooks/"+discordtest.AppID+"/tok-stranger") {
			return strings.Contains(c.Body, `"flags":64`) && strings.Contains(c.Body, "Only the person who asked")
		}
		return false
	})
	fake.Dispatch("INTERACTION_CREATE", discordtest.ButtonPress("I2", "tok-alice", "T1", "G1", prompt.ID, discordAlice, allow.CustomID))
	waitDiscord(t, fake, "the prompt showing the outcome without buttons", func() bool {
		for _, m := range fake.Messages("T1") {
			if m.ID == prompt.ID {
				return strings.Contains(m.Content, "Allowed by alice") && string(m.Components) == "[]"
			}
		}
		return false
	})
	for _, id := range []string{"I1", "I2"} {
		cb := fake.CallsTo("POST", "/interactions/"+id+"/")
		if len(cb) != 1 || !strings.Contains(cb[0].Body, `"type":6`) {
			t.Errorf("interaction %s answered with %+v, want one deferred update", id, cb)
		}
	}
	waitDiscord(t, fake, "the tool turn's reply", func() bool { return hasContent(fake, "T1", "allow") || len(fake.Contents("T1")) >= 3 })

	// Reconnect mid-turn: a slow turn streams while the gateway asks the bot
	// to reconnect; the next message, sent during the reconnect, is answered
	// and the slow reply still ends complete.
	fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M3", "C1", "G1", discordAlice, "slow", true))
	waitDiscord(t, fake, "the slow reply to start", func() bool { return len(fake.Contents("C1")) > 0 })
	fake.Reconnect()
	fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M4", "T1", "G1", discordAlice, "what is my name?", true))
	waitDiscord(t, fake, "the answer after the reconnect", func() bool { return hasContent(fake, "T1", "Your name is Ada") })
	waitDiscord(t, fake, "the slow reply to end complete", func() bool { return hasContent(fake, "C1", "**Done.**") })
	if err := stop(); err != nil {
		t.Fatalf("serve = %v, want nil after cancel", err)
	}

	// Every message the bridge sent disabled mentions.
	for _, c := range fake.Calls() {
		if (c.Method == "POST" || c.Method == "PATCH") && strings.Contains(c.Path, "/messages") && !strings.Contains(c.Path, "/threads") &&
			!strings.Contains(c.Body, `"allowed_mentions":{"parse":[]`) {
			t.Errorf("%s %s without allowed_mentions none: %s", c.Method, c.Path, c.Body)
		}
		if c.Status == 429 {
			t.Errorf("%s %s got a 429: the adapter exceeded the channel budget", c.Method, c.Path)
		}
	}
	if n := strings.Count(strings.Join(fake.Contents("T1"), "\n"), "Nice to meet you"); n != 1 {
		t.Errorf("the first message was answered %d times, want 1 (duplicate delivery)", n)
	}

	// After a restart, the thread's agent session is resumed.
	stop, stderr2 := serveDiscord(t, fake, store, "")
	waitDiscord(t, fake, "gateway after restart", fake.Connected)
	fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M5", "T1", "G1", discordAlice, "what is my name?", true))
	waitDiscord(t, fake, "the resumed session's answer", func() bool {
		return strings.Count(strings.Join(fake.Contents("T1"), "\n"), "Your name is Ada") >= 2
	})
	if err := stop(); err != nil {
		t.Fatalf("serve after restart = %v", err)
	}
	for _, logs := range []string{stderr.String(), stderr2.String()} {
		if strings.Contains(logs, discordTestToken) {
			t.Error("the bot token appeared in serve's logs")
		}
	}
}

func TestServeDiscordReportsDisallowedIntent(t *testing.T) {
	t.Setenv("AGENTBRIDGE_TEST_DISCORD_TOKEN", discordTestToken)
	fake := discordtest.NewServer(discordTestToken)
	defer fake.Close()
	fake.SetMessageContentAllowed(false)
	s := startServeDiscord(t, fake, filepath.Join(t.TempDir(), "bridge.db"), "  message_content: true\n")
	// The only adapter stopped for good, so serve ends by itself with the
	// reason (a service manager sees the failure) instead of idling.
	err := s.wait()
	stderr := s.stderr
	if !strings.Contains(stderr.String(), "4014") {
		t.Errorf("no 4014 in serve's log:\n%s", stderr.String())
	}
	if err == nil || !strings.Contains(err.Error(), "Message Content Intent") {
		t.Fatalf("serve = %v; want an error that says how to fix 4014", err)
	}
	if !strings.Contains(stderr.String(), "will not be restarted") {
		t.Errorf("the log does not say the adapter stays stopped:\n%s", stderr.String())
	}
}

// TestServeDiscordSlashCommands: serve registers /agent in the configured
// guild, and a slash command is answered by the engine through the
// interaction's response, refusals included.
func TestServeDiscordSlashCommands(t *testing.T) {
	t.Setenv("AGENTBRIDGE_TEST_DISCORD_TOKEN", discordTestToken)
	fake := discordtest.NewServer(discordTestToken)
	defer fake.Close()
	fake.AddChannel(discordtest.Channel{ID: "C1", Type: 0, GuildID: "G1"})
	stop, stderr := serveDiscord(t, fake, filepath.Join(t.TempDir(), "bridge.db"), "  slash_commands_guilds: [\"G1\"]\n")
	waitDiscord(t, fake, "/agent registered in G1", func() bool { _, ok := fake.Registered("G1"); return ok })
	if _, global := fake.Registered(""); global {
		t.Error("registered globally although slash_commands_guilds names a guild")
	}
	for _, tc := range []struct {
		id, token string
		from      discordtest.User
		want      string
	}{
		{"I1", "itok-serve-alice", discordAlice, "Idle: no turn is running."},
		{"I2", "itok-serve-bob", discordBob, "not allowed"},
	} {
		fake.Dispatch("INTERACTION_CREATE", discordtest.SlashCommand(tc.id, tc.token, "C1", "G1", tc.from, "status", ""))
		waitDiscord(t, fake, tc.want+" in the response", func() bool {
			r, _ := fake.Interaction(tc.token)
			return strings.Contains(r.Content, tc.want)
		})
		if r, _ := fake.Interaction(tc.token); r.Type != 5 || r.Flags&64 == 0 {
			t.Errorf("%s: response %+v, want a deferred ephemeral message", tc.id, r)
		}
	}
	if err := stop(); err != nil {
		t.Fatalf("serve = %v", err)
	}
	for _, secret := range []string{discordTestToken, "itok-serve"} {
		if strings.Contains(stderr.String(), secret) {
			t.Errorf("%q appeared in serve's logs:\n%s", secret, stderr.String())
		}
	}
}

// TestServeDiscordWatchedStreams: three channels stream long answers at
// once through serve against the fake's per-route buckets (5 per 5 s);
// every state of the fake is observed and the replies checked as a user
// reads them (serve_watch_test.go).
func TestServeDiscordWatchedStreams(t *testing.T) {
	t.Setenv("AGENTBRIDGE_TEST_DISCORD_TOKEN", discordTestToken)
	fake := discordtest.NewServer(discordTestToken)
	defer fake.Close()
	channels := []string{"C1", "C2", "C3"}
	for _, c := range channels {
		fake.AddChannel(discordtest.Channel{ID: c, Type: 0, GuildID: "G1"})
	}
	store := filepath.Join(t.TempDir(), "bridge.db")
	s := startServeDiscordProfiles(t, fake, store, fmt.Sprintf("profiles: {watch: %s}\ndefault_profile: watch\n", writeProfile(t, "watch", "")), "")
	waitDiscord(t, fake, "gateway", fake.Connected)

	// About 5,000 characters each: three messages under Discord's 2,000.
	var ws []*watcher
	for i, c := range channels {
		spec := watchSpec{string(rune('m' + i)), 150, 32, 25 * time.Millisecond}
		ws = append(ws, newWatcher(spec))
		fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate(fmt.Sprintf("MW%d", i), c, "G1", discordAlice, spec.message(), true))
	}
	replies := func() [][]string {
		out := make([][]string, len(channels))
		for i, c := range channels {
			out[i] = fake.Contents(c)
		}
		return out
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if !fake.Wait(ctx, func() bool { v := replies(); return watchAll(ws, v, v) }) {
		t.Fatalf("the replies did not complete: %q\n%s", replies(), s.stderr.String())
	}
	if err := s.stop(); err != nil {
		t.Fatalf("serve = %v", err)
	}
	final := replies()
	watchAll(ws, final, final)
	for i, w := range ws {
		w.check(t, final[i], 2000)
		// allowed_mentions alone stops pings: the text stays as written.
		for _, m := range watchMentions {
			if !strings.Contains(strings.Join(final[i], "\n"), m+" ") {
				t.Errorf("%s: mention %q changed; want it as written", w.spec.prefix, m)
			}
		}
		t.Logf("%s: %d observations, %d messages, lengths %v", w.spec.prefix, w.obs, len(final[i]), runeLens(final[i]))
	}
	for _, c := range fake.Calls() {
		if (c.Method == "POST" || c.Method == "PATCH") && strings.Contains(c.Path, "/messages") &&
			!strings.Contains(c.Body, `"allowed_mentions":{"parse":[]`) {
			t.Errorf("%s %s without allowed_mentions none: %s", c.Method, c.Path, c.Body)
		}
		if c.Status == 429 {
			t.Errorf("%s %s at %s was answered 429", c.Method, c.Path, c.At.Format("15:04:05.000"))
		}
	}
}
