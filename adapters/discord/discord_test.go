package discord

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge/adapters/discord/discordtest"
	"github.com/agentbridge/agentbridge/core"
)

const testToken = "MTIzNDU2Nzg5.secret-bot-token.xyz"

var (
	alice = discordtest.User{ID: "111", Name: "alice"}
	bob   = discordtest.User{ID: "222", Name: "bob"}
)

// recorder is a core.Handler that records what it is given.
type recorder struct {
	msgs    chan core.Message
	actions chan core.Action
	// onAction and onMessage, if set, run inside HandleAction and
	// HandleMessage (to observe ordering).
	onAction  func(core.Action)
	onMessage func(core.Message)
}

func newRecorder() *recorder {
	return &recorder{msgs: make(chan core.Message, 64), actions: make(chan core.Action, 64)}
}

func (r *recorder) HandleMessage(ctx context.Context, m core.Message) {
	if r.onMessage != nil {
		r.onMessage(m)
	}
	// Like the engine: it accepts every message (as an allowed user's),
	// then says it is handled; recorded without the callbacks, which do
	// not compare.
	if m.Accepted != nil {
		m.Accepted()
	}
	if m.Handled != nil {
		m.Handled()
	}
	m.Handled, m.Reply, m.Answer, m.Accepted = nil, nil, nil, nil
	r.msgs <- m
}
func (r *recorder) HandleAction(ctx context.Context, a core.Action) {
	if r.onAction != nil {
		r.onAction(a)
	}
	r.actions <- a
}

func (r *recorder) nextMessage(t *testing.T) core.Message {
	t.Helper()
	select {
	case m := <-r.msgs:
		return m
	case <-time.After(60 * time.Second):
		t.Fatal("no message delivered")
	}
	return core.Message{}
}

// logBuffer collects log output safely across goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// harness runs an adapter against a fake Discord until the test ends.
type harness struct {
	fake *discordtest.Server
	a    *Adapter
	rec  *recorder
	logs *logBuffer
	done chan error
	stop context.CancelFunc
}

func start(t *testing.T, opts Options, setup func(*discordtest.Server)) *harness {
	t.Helper()
	fake := discordtest.NewServer(testToken)
	if setup != nil {
		setup(fake)
	}
	if opts.Token == "" {
		opts.Token = testToken
	}
	opts.APIURL = fake.URL
	logs := &logBuffer{}
	a, err := New(opts, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{fake: fake, a: a, rec: newRecorder(), logs: logs, done: make(chan error, 1), stop: cancel}
	go func() { h.done <- a.Run(ctx, h.rec) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-h.done:
			if err != nil {
				t.Errorf("Run after cancel = %v, want nil", err)
			}
		case <-time.After(60 * time.Second):
			t.Error("Run did not return after cancel")
		}
		fake.Close()
		if strings.Contains(logs.String(), testToken) {
			t.Error("the bot token appeared in the logs")
		}
	})
	return h
}

// connected waits for the gateway to be ready.
func (h *harness) connected(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if !h.fake.Wait(ctx, h.fake.Connected) {
		t.Fatal("adapter never connected to the gateway")
	}
}

func waitFor(t *testing.T, f *discordtest.Server, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if !f.Wait(ctx, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestMessageNormalized(t *testing.T) {
	t.Parallel()
	h := start(t, Options{}, func(f *discordtest.Server) {
		f.AddChannel(discordtest.Channel{ID: "C1", Type: 0, GuildID: "G1"})
		f.AddChannel(discordtest.Channel{ID: "T1", Type: 11, GuildID: "G1", ParentID: "C1", OwnerID: "someone"})
	})
	h.connected(t)
	if got := h.fake.Identifies()[0]["intents"].(float64); int(got)&(1<<15) != 0 {
		t.Errorf("identify intents %v include MESSAGE_CONTENT without message_content", got)
	}
	url := h.fake.AddFile("/attachments/1/2/a.txt", []byte("hi"))
	h.fake.Dispatch("MESSAGE_CREATE", discordtest.WithAttachment(
		discordtest.MessageCreate("M1", "C1", "G1", alice, "hello there", true), "A1", "a.txt", url, "text/plain", 2))
	h.fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M2", "T1", "G1", bob, "in a thread", true))
	h.fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M3", "D1", "", alice, "a DM", false))
	voice := h.fake.AddFile("/attachments/D1/9/voice-message.ogg", []byte("OggS"))
	h.fake.Dispatch("MESSAGE_CREATE", discordtest.VoiceMessage("M4", "D1", "", alice, voice, 4, 3.5))

	var got []core.Message
	for range 4 {
		m := h.rec.nextMessage(t)
		m.Time = time.Time{}
		got = append(got, m)
	}
	want := []core.Message{
		{Conv: core.ConversationKey{Platform: "discord", Workspace: "G1", Channel: "C1"}, ID: "M1",
			From: core.User{ID: "111", Name: "alice"}, Text: "hello there", Addressed: true,
			Attachments: []core.Attachment{{Kind: "file", Name: "a.txt", MIME: "text/plain", Size: 2, Source: url}}},
		{Conv: core.ConversationKey{Platform: "discord", Workspace: "G1", Channel: "C1", Thread: "T1"}, ID: "M2",
			From: core.User{ID: "222", Name: "bob"}, Text: "in a thread", Addressed: true},
		{Conv: core.ConversationKey{Platform: "discord", Channel: "D1"}, ID: "M3",
			From: core.User{ID: "111", Name: "alice"}, Text: "a DM"},
		// A voice message: audio, with the length Discord gives.
		{Conv: core.ConversationKey{Platform: "discord", Channel: "D1"}, ID: "M4",
			From:        core.User{ID: "111", Name: "alice"},
			Attachments: []core.Attachment{{Kind: "audio", Name: "voice-message.ogg", MIME: "audio/ogg", Size: 4, Source: voice, Duration: 3500 * time.Millisecond}}},
	}
	// Channels are handled in order each, not across channels.
	sortByID := func(ms []core.Message) {
		for i := range ms {
			for j := i + 1; j < len(ms); j++ {
				if ms[j].ID < ms[i].ID {
					ms[i], ms[j] = ms[j], ms[i]
				}
			}
		}
	}
	sortByID(got)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("messages (-want +got):\n%s", d)
	}

	var buf bytes.Buffer
	if err := h.a.Download(context.Background(), got[0].Attachments[0], &buf, 100); err != nil || buf.String() != "hi" {
		t.Errorf("Download = %q, %v; want \"hi\"", buf.String(), err)
	}
	buf.Reset()
	if err := h.a.Download(context.Background(), got[0].Attachments[0], &buf, 1); err == nil {
		t.Error("Download over the limit succeeded")
	}
}

func TestIgnoredMessages(t *testing.T) {
	t.Parallel()
	h := start(t, Options{}, func(f *discordtest.Server) {
		f.AddChannel(discordtest.Channel{ID: "C1", Type: 0, GuildID: "G1"})
	})
	h.connected(t)
	self := discordtest.User{ID: discordtest.BotID, Name: "bridge", Bot: true}
	other := discordtest.User{ID: "333", Name: "otherbot", Bot: true}
	h.fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M1", "C1", "G1", self, "me", true))
	h.fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M2", "C1", "G1", other, "bot", true))
	h.fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M3", "C1", "G1", alice, "no mention", false))
	h.fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M4", "C1", "G1", alice, "last", true))
	// Same channel, in order: when M4 arrives the others were dropped.
	if m := h.rec.nextMessage(t); m.ID != "M4" {
		t.Errorf("first delivered message = %s, want M4 (the others must be ignored)", m.ID)
	}
}

func TestOrderPerChannel(t *testing.T) {
	t.Parallel()
	h := start(t, Options{}, func(f *discordtest.Server) {
		f.AddChannel(discordtest.Channel{ID: "C1", Type: 0, GuildID: "G1"})
	})
	h.connected(t)
	var want []string
	for i := range 20 {
		id := "M" + string(rune('a'+i))
		want = append(want, id)
		h.fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate(id, "C1", "G1", alice, "n", true))
	}
	var got []string
	for range want {
		got = append(got, h.rec.nextMessage(t).ID)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("order (-want +got):\n%s", d)
	}
}

func TestSendEditNoMentions(t *testing.T) {
	t.Parallel()
	h := start(t, Options{}, nil)
	ctx := context.Background()
	conv := core.ConversationKey{Platform: "discord", Workspace: "G1", Channel: "C1", Thread: "T9"}
	ref, err := h.a.Send(ctx, conv, core.Post{Text: "@everyone *not bold* <@123>", Plain: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.a.Edit(ctx, ref, core.Post{Text: "**Allow?**", Buttons: []core.Button{
		{Label: "Allow", Value: "tok:a", Style: core.StylePrimary}, {Label: "Deny", Value: "tok:d", Style: core.StyleDanger}}}); err != nil {
		t.Fatal(err)
	}
	msgs := h.fake.Messages("T9") // a thread conversation posts in the thread
	if len(msgs) != 1 {
		t.Fatalf("messages in T9 = %d, want 1", len(msgs))
	}
	for _, c := range h.fake.CallsTo("POST", "/channels/T9/messages") {
		var body struct {
			Content         string
			AllowedMentions map[string]any `json:"allowed_mentions"`
		}
		if err := json.Unmarshal([]byte(c.Body), &body); err != nil {
			t.Fatal(err)
		}
		if parse, ok := body.AllowedMentions["parse"].([]any); !ok || len(parse) != 0 {
			t.Errorf("send body lacks allowed_mentions none: %s", c.Body)
		}
		if want := `@everyone \*not bold\* \<@123>`; body.Content != want {
			t.Errorf("plain text sent as %q, want %q", body.Content, want)
		}
	}
	var comps []struct {
		Components []struct {
			CustomID string `json:"custom_id"`
			Label    string `json:"label"`
			Style    int    `json:"style"`
		} `json:"components"`
	}
	json.Unmarshal(msgs[0].Components, &comps)
	if len(comps) != 1 || len(comps[0].Components) != 2 || comps[0].Components[0].CustomID != "tok:a" || comps[0].Components[1].Style != 4 {
		t.Errorf("components = %s", msgs[0].Components)
	}
	if !strings.Contains(string(msgs[0].AllowedMentions), `"parse":[]`) {
		t.Errorf("edit allowed_mentions = %s", msgs[0].AllowedMentions)
	}
	// An edit without buttons removes them.
	if err := h.a.Edit(ctx, ref, core.Post{Text: "done"}); err != nil {
		t.Fatal(err)
	}
	if got := string(h.fake.Messages("T9")[0].Components); got != "[]" {
		t.Errorf("components after edit without buttons = %s, want []", got)
	}
	// Unknown message → ErrNotFound; too long → ErrMessageTooLong.
	// (It waits its turn in the channel's edit budget first, as the
	// presenter does.)
	err = h.a.Edit(ctx, core.MessageRef{Conv: conv, ID: "nope"}, core.Post{Text: "x"})
	if ra, ok := core.RetryAfter(err); ok {
		time.Sleep(ra)
		err = h.a.Edit(ctx, core.MessageRef{Conv: conv, ID: "nope"}, core.Post{Text: "x"})
	}
	if !errors.Is(err, core.ErrNotFound) {
		t.Errorf("edit of unknown message = %v, want ErrNotFound", err)
	}
	if _, err := h.a.Send(ctx, conv, core.Post{Text: strings.Repeat("x", 2001)}); !errors.Is(err, core.ErrMessageTooLong) {
		t.Errorf("send of 2001 chars = %v, want ErrMessageTooLong", err)
	}
}

func TestRateLimits(t *testing.T) {
	t.Parallel()
	h := start(t, Options{}, nil)
	ctx := context.Background()
	conv := core.ConversationKey{Platform: "discord", Workspace: "G1", Channel: "C1"}
	ref, err := h.a.Send(ctx, conv, core.Post{Text: "a"})
	if err != nil {
		t.Fatal(err)
	}
	// A retry_after far longer than a loaded machine's slowest call: an
	// edit that slept on it, or a second edit let through, cannot pass.
	const retryAfter = 30 * time.Second
	h.fake.RateLimitNext("PATCH", "C1", 1, retryAfter)
	start := time.Now()
	err = h.a.Edit(ctx, ref, core.Post{Text: "b"})
	ra, ok := core.RetryAfter(err)
	if !ok || ra < retryAfter-time.Since(start)-time.Second || ra > retryAfter+time.Second {
		t.Fatalf("edit answered 429 = %v; want *core.RateLimitError with retry_after ~%v", err, retryAfter)
	}
	if time.Since(start) > retryAfter/2 {
		t.Errorf("edit blocked %s: discordgo must not sleep on 429", time.Since(start))
	}
	if strings.Contains(err.Error(), testToken) {
		t.Error("token in error")
	}
	// Until then, edits are refused without calling Discord.
	before := len(h.fake.CallsTo("PATCH", "/channels/C1/"))
	if _, ok := core.RetryAfter(h.a.Edit(ctx, ref, core.Post{Text: "c"})); !ok {
		t.Error("second edit inside retry_after was not refused locally")
	}
	if after := len(h.fake.CallsTo("PATCH", "/channels/C1/")); after != before {
		t.Errorf("second edit reached Discord (%d → %d calls)", before, after)
	}
	// The local channel budget refuses a burst beyond 5 per 5 s.
	conv2 := core.ConversationKey{Platform: "discord", Workspace: "G1", Channel: "C2"}
	ref2, err := h.a.Send(ctx, conv2, core.Post{Text: "a"})
	if err != nil {
		t.Fatal(err)
	}
	var limited int
	for i := range 10 {
		if _, ok := core.RetryAfter(h.a.Edit(ctx, ref2, core.Post{Text: strings.Repeat("x", i+1)})); ok {
			limited++
		}
	}
	if limited < 5 {
		t.Errorf("%d of 10 burst edits refused locally, want ≥ 5", limited)
	}
	for _, c := range h.fake.Calls() {
		if c.Status == 429 && strings.Contains(c.Path, "C2") {
			t.Errorf("a burst in C2 reached a 429 from Discord: %s %s", c.Method, c.Path)
		}
	}
}

func TestEditWindow(t *testing.T) {
	t.Parallel()
	h := start(t, Options{}, nil)
	ctx := context.Background()
	conv := core.ConversationKey{Platform: "discord", Channel: "C1"}
	ref, err := h.a.Send(ctx, conv, core.Post{Text: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if got := h.a.Limits().EditWindow; got != time.Hour {
		t.Errorf("EditWindow = %s, want 1h", got)
	}
	h.a.mu.Lock()
	h.a.sentAt[ref.ID] = time.Now().Add(-time.Hour - time.Second)
	h.a.mu.Unlock()
	if err := h.a.Edit(ctx, ref, core.Post{Text: "b"}); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("edit past the window = %v, want ErrNotFound (continue in a new message)", err)
	}
}

func TestTypingEvery8s(t *testing.T) {
	t.Parallel()
	h := start(t, Options{}, nil)
	conv := core.ConversationKey{Platform: "discord", Channel: "C1"}
	for range 3 {
		if err := h.a.Typing(context.Background(), conv); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(h.fake.CallsTo("POST", "/channels/C1/typing")); n != 1 {
		t.Errorf("typing calls = %d, want 1 within 8 s", n)
	}
}

func TestButtonPressAckedFirst(t *testing.T) {
	t.Parallel()
	h := start(t, Options{}, func(f *discordtest.Server) {
		f.AddChannel(discordtest.Channel{ID: "C1", Type: 0, GuildID: "G1"})
	})
	ackedBefore := make(chan bool, 1)
	h.rec.onAction = func(core.Action) {
		ackedBefore <- len(h.fake.CallsTo("POST", "/interactions/I1/itok-secret/callback")) == 1
	}
	h.connected(t)
	h.fake.Dispatch("INTERACTION_CREATE", discordtest.ButtonPress("I1", "itok-secret", "C1", "G1", "P1", bob, "tok:a"))
	var a core.Action
	select {
	case a = <-h.rec.actions:
	case <-time.After(60 * time.Second):
		t.Fatal("no action delivered")
	}
	if !<-ackedBefore {
		t.Error("the interaction was handed to core before it was acknowledged")
	}
	conv := core.ConversationKey{Platform: "discord", Workspace: "G1", Channel: "C1"}
	if d := cmp.Diff(core.Action{Conv: conv, From: core.User{ID: "222", Name: "bob"}, Value: "tok:a",
		Ref: core.MessageRef{Conv: conv, ID: "P1"}}, a, cmp.FilterPath(func(p cmp.Path) bool { return p.String() == "Reply" }, cmp.Ignore())); d != "" {
		t.Errorf("action (-want +got):\n%s", d)
	}
	cb := h.fake.CallsTo("POST", "/interactions/I1/")
	if len(cb) != 1 || !strings.Contains(cb[0].Body, `"type":6`) {
		t.Errorf("interaction callback = %+v, want one deferred update (type 6)", cb)
	}
	a.Reply("Only the person who asked can answer.")
	fu := h.fake.CallsTo("POST", "/webhooks/"+discordtest.AppID+"/itok-secret")
	if len(fu) != 1 || !strings.Contains(fu[0].Body, `"flags":64`) || !strings.Contains(fu[0].Body, `"parse":[]`) {
		t.Errorf("private reply = %+v, want one ephemeral follow-up without mentions", fu)
	}
}

func TestReconnectResumes(t *testing.T) {
	t.Parallel()
	h := start(t, Options{}, func(f *discordtest.Server) {
		f.AddChannel(discordtest.Channel{ID: "C1", Type: 0, GuildID: "G1"})
	})
	h.connected(t)
	h.fake.Reconnect() // op 7
	// Dispatched while the bot reconnects: replayed on resume.
	h.fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M1", "C1", "G1", alice, "after op 7", true))
	if m := h.rec.nextMessage(t); m.ID != "M1" {
		t.Errorf("got %s, want M1", m.ID)
	}
	waitFor(t, h.fake, "a resume after op 7", func() bool { return h.fake.Resumes() >= 1 })

	h.connected(t)
	h.fake.Drop() // the TCP connection dies
	h.fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M2", "C1", "G1", alice, "after a drop", true))
	if m := h.rec.nextMessage(t); m.ID != "M2" {
		t.Errorf("got %s, want M2", m.ID)
	}
	if n := len(h.fake.Identifies()); n != 1 {
		t.Errorf("identifies = %d, want 1 (reconnects resume)", n)
	}
}

// TestRunStopsWhileOpenBlocks cancels Run while discordgo's Open, which
// takes no context, waits for a hello that never comes: closing the
// gateway connection must end it (the harness fails if Run does not return).
func TestRunStopsWhileOpenBlocks(t *testing.T) {
	t.Parallel()
	h := start(t, Options{}, func(f *discordtest.Server) { f.StallHandshakes(true) })
	waitFor(t, h.fake, "a stalled gateway handshake", func() bool { return h.fake.Stalled() >= 1 })
	h.stop()
	select {
	case err := <-h.done:
		h.done <- err // for the harness's cleanup
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not return after cancel while Open was blocked")
	}
}

func TestFatalCloses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		setup func(*discordtest.Server)
		opts  Options
		code  int
		want  string
	}{
		{"4014 disallowed intent", func(f *discordtest.Server) { f.SetMessageContentAllowed(false) }, Options{MessageContent: true}, 4014, "Message Content Intent"},
		{"4004 after ready", func(f *discordtest.Server) { f.CloseNextHandshake(4004) }, Options{}, 4004, "check discord.token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := discordtest.NewServer(testToken)
			defer fake.Close()
			tc.setup(fake)
			tc.opts.Token, tc.opts.APIURL = testToken, fake.URL
			a, err := New(tc.opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			err = a.Run(ctx, newRecorder())
			if !errors.Is(err, core.ErrFatal) || !strings.Contains(err.Error(), fmt.Sprintf("close %d", tc.code)) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run = %v, want a fatal error naming close %d and mentioning %q", err, tc.code, tc.want)
			}
			if strings.Contains(err.Error(), testToken) {
				t.Error("token in error")
			}
		})
	}
}

func TestFatalCloseWhileConnected(t *testing.T) {
	t.Parallel()
	fake := discordtest.NewServer(testToken)
	defer fake.Close()
	a, err := New(Options{Token: testToken, APIURL: fake.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, newRecorder()) }()
	waitFor(t, fake, "connect", fake.Connected)
	// The session is revoked: the gateway closes and refuses the resume.
	fake.CloseNextHandshake(4004)
	fake.CloseGateway(4000)
	err = <-done
	if !errors.Is(err, core.ErrFatal) || !strings.Contains(err.Error(), "close 4004") {
		t.Fatalf("Run = %v, want a fatal error naming close 4004", err)
	}
}

func TestBadToken(t *testing.T) {
	t.Parallel()
	fake := discordtest.NewServer("the-right-token")
	defer fake.Close()
	a, err := New(Options{Token: testToken, APIURL: fake.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = a.Run(context.Background(), newRecorder())
	if !errors.Is(err, core.ErrFatal) || !strings.Contains(err.Error(), "HTTP 401") {
		t.Fatalf("Run = %v, want a fatal error naming HTTP 401", err)
	}
	if strings.Contains(err.Error(), testToken) || !strings.Contains(err.Error(), "token") {
		t.Errorf("error %q must name the problem and not contain the token", err)
	}
}

func TestScrub(t *testing.T) {
	t.Parallel()
	a, err := New(Options{Token: testToken}, nil)
	if err != nil {
		t.Fatal(err)
	}
	in := errors.New(`Post "https://discord.com/api/v9/interactions/123/aW50ZXJhY3Rpb24:tok/callback": auth Bot ` + testToken + ` /webhooks/99/abc-def?wait=true`)
	got := a.scrub(in).Error()
	for _, secret := range []string{testToken, "aW50ZXJhY3Rpb24:tok", "abc-def"} {
		if strings.Contains(got, secret) {
			t.Errorf("scrub left %q in %q", secret, got)
		}
	}
}

func TestRouteKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ method, path, want string }{
		{"PATCH", "/api/v9/channels/C1/messages/M1", "PATCH C1 messages"},
		{"POST", "/api/v9/channels/C1/messages", "POST C1 messages"},
		{"POST", "/api/v9/channels/C1/typing", "POST C1 typing"},
		{"POST", "/api/v9/channels/C1/messages/M1/threads", "POST C1 threads"},
		{"POST", "/api/v9/interactions/1/tok/callback", ""},
	} {
		if got := routeKey(tc.method, tc.path); got != tc.want {
			t.Errorf("routeKey(%s %s) = %q, want %q", tc.method, tc.path, got, tc.want)
		}
	}
}

func TestEscapePlain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"plain words.", "plain words."},
		{"a *b* _c_ ~~d~~ `e` ||f||", `a \*b\* \_c\_ \~\~d\~\~ \` + "`" + `e\` + "`" + ` \|\|f\|\|`},
		{"# head\n- item\n> quote\n  -# sub", "\\# head\n\\- item\n\\> quote\n  \\-# sub"},
		{"<@&123> [x](y)", `\<@&123> \[x\](y)`},
	} {
		if got := escapePlain(tc.in); got != tc.want {
			t.Errorf("escapePlain(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzEscapePlain(f *testing.F) {
	for _, s := range []string{"", "*", "a\n#b", "\\", "`code`", "<@1>", "ü*"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			t.Skip()
		}
		out := escapePlain(s)
		// Removing the escapes gives the input back.
		var b strings.Builder
		esc := false
		for _, r := range out {
			if r == '\\' && !esc {
				esc = true
				continue
			}
			esc = false
			b.WriteRune(r)
		}
		if b.String() != s {
			t.Fatalf("unescape(escapePlain(%q)) = %q", s, b.String())
		}
	})
}

func TestThreadPerMention(t *testing.T) {
	t.Parallel()
	h := start(t, Options{ThreadPerMention: true, MessageContent: true}, func(f *discordtest.Server) {
		f.AddChannel(discordtest.Channel{ID: "C1", Type: 0, GuildID: "G1"})
	})
	h.connected(t)
	if got := h.fake.Identifies()[0]["intents"].(float64); int(got)&(1<<15) == 0 {
		t.Errorf("identify intents %v lack MESSAGE_CONTENT with message_content", got)
	}
	h.fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M1", "C1", "G1", alice, "start here", true))
	m := h.rec.nextMessage(t)
	// Discord gives a thread started from a message the message's id.
	want := core.ConversationKey{Platform: "discord", Workspace: "G1", Channel: "C1", Thread: "M1"}
	if m.Conv != want {
		t.Errorf("conv = %+v, want %+v", m.Conv, want)
	}
	if n := len(h.fake.CallsTo("POST", "/channels/C1/messages/M1/threads")); n != 1 {
		t.Errorf("thread starts = %d, want 1", n)
	}
	// In its own thread the bot answers without a mention (message content).
	h.fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M2", "M1", "G1", alice, "follow-up", false))
	if m := h.rec.nextMessage(t); m.ID != "M2" || m.Conv != want || m.Text != "follow-up" {
		t.Errorf("follow-up = %+v", m)
	}
}

func FuzzRouteKey(f *testing.F) {
	for _, s := range []string{"/api/v9/channels/C1/messages/M1", "/channels/", "/channels//messages//x", "/api/v9/gateway"} {
		f.Add("PATCH", s)
	}
	f.Fuzz(func(t *testing.T, method, path string) {
		k := routeKey(method, path)
		if k != "" && !strings.HasPrefix(k, method+" ") {
			t.Fatalf("routeKey(%q, %q) = %q: not keyed by method", method, path, k)
		}
	})
}
