package slack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentbridge/agentbridge/adapters/slack"
	"github.com/agentbridge/agentbridge/adapters/slack/slacktest"
	"github.com/agentbridge/agentbridge/core"
)

// recorder is a core.Handler that records what the adapter delivers.
// block, when set, holds every HandleMessage until it is closed.
type recorder struct {
	mu      sync.Mutex
	msgs    []core.Message
	acts    []core.Action
	changed chan struct{}
	block   chan struct{}
	private int // messages that came with a private reply
	// held, when not nil, keeps each message's Accepted instead of
	// calling it: the engine has not decided yet.
	held []func()
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{})} }

func (r *recorder) HandleMessage(ctx context.Context, m core.Message) {
	r.mu.Lock()
	if m.Reply != nil {
		r.private++
	}
	m.Reply = nil // recorded without the callback, which does not compare
	// It accepts every message, as the engine does an allowed user's,
	// at once unless held.
	if m.Accepted != nil {
		if r.held != nil {
			r.held = append(r.held, m.Accepted)
		} else {
			m.Accepted()
		}
		m.Accepted = nil
	}
	r.msgs = append(r.msgs, m)
	close(r.changed)
	r.changed = make(chan struct{})
	block := r.block
	r.mu.Unlock()
	if block != nil {
		<-block
	}
}

func (r *recorder) HandleAction(ctx context.Context, a core.Action) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.acts = append(r.acts, a)
	close(r.changed)
	r.changed = make(chan struct{})
}

// wait blocks until cond holds for the recorded events.
func (r *recorder) wait(t *testing.T, what string, cond func(msgs []core.Message, acts []core.Action) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	for {
		r.mu.Lock()
		ok := cond(r.msgs, r.acts)
		ch := r.changed
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			r.mu.Lock()
			defer r.mu.Unlock()
			t.Fatalf("timed out waiting for %s; messages %+v, actions %+v", what, r.msgs, r.acts)
		}
	}
}

func (r *recorder) messages() []core.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]core.Message(nil), r.msgs...)
}

// running is an adapter running against a fake Slack.
type running struct {
	fake *slacktest.Server
	a    *slack.Adapter
	rec  *recorder
	logs *syncBuffer
	stop func() error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

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

func options(fake *slacktest.Server) slack.Options {
	o := fake.Options()
	return slack.Options{
		BotToken:     core.Secret(o.BotToken),
		AppToken:     core.Secret(o.AppToken),
		APIURL:       fake.APIURL(),
		PingInterval: 500 * time.Millisecond,
		EditInterval: 20 * time.Millisecond,
	}
}

// start runs an adapter until the test ends (or stop is called), waiting
// for its Socket Mode connection.
func start(t *testing.T, fake *slacktest.Server, tweak func(*slack.Options), h core.Handler) *running {
	t.Helper()
	opts := options(fake)
	if tweak != nil {
		tweak(&opts)
	}
	logs := &syncBuffer{}
	a, err := slack.New(opts, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	if h == nil {
		h = rec
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, h) }()
	var once sync.Once
	var runErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			runErr = <-done
		})
		return runErr
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Run returned %v after cancel; want nil", err)
		}
	})
	if opts.Mode != slack.ModeEvents {
		waitFake(t, fake, "socket connected", func(s *slacktest.State) bool { return s.Connected() > 0 })
	}
	return &running{fake: fake, a: a, rec: rec, logs: logs, stop: stop}
}

func waitFake(t *testing.T, fake *slacktest.Server, what string, cond func(*slacktest.State) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if err := fake.WaitFor(ctx, cond); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func newFake(t *testing.T, opts slacktest.Options) *slacktest.Server {
	fake := slacktest.NewServer(opts)
	t.Cleanup(fake.Close)
	return fake
}

func mention(user, channel, ts, thread, text string) map[string]any {
	ev := map[string]any{"type": "app_mention", "user": user, "text": text, "ts": ts, "channel": channel, "event_ts": ts}
	if thread != "" {
		ev["thread_ts"] = thread
	}
	return ev
}

func message(user, channel, channelType, ts, thread, text string) map[string]any {
	ev := map[string]any{"type": "message", "user": user, "text": text, "ts": ts, "channel": channel,
		"channel_type": channelType, "event_ts": ts}
	if thread != "" {
		ev["thread_ts"] = thread
	}
	return ev
}

func TestInboundNormalization(t *testing.T) {
	t.Parallel()
	fake := newFake(t, slacktest.Options{})
	r := start(t, fake, nil, nil)
	file := fake.AddFile("F1", "notes.txt", "text/plain", []byte("hello file"))

	type want struct {
		Conv core.ConversationKey
		ID   string
		From string
		Text string
		Atts []core.Attachment
	}
	conv := func(ch, th string) core.ConversationKey {
		return core.ConversationKey{Platform: "slack", Workspace: "T1", Channel: ch, Thread: th}
	}
	withFile := message("U1", "C1", "channel", "100.000009", "", "<@UBOT> read this")
	withFile["subtype"] = "file_share"
	withFile["files"] = []any{file}
	// An audio clip recorded in Slack, in a DM: no text, one file.
	withClip := message("U1", "D1", "im", "100.000012", "", "")
	withClip["subtype"] = "file_share"
	withClip["files"] = []any{fake.AddAudioClip("F2", "audio_message.webm", "audio/webm", []byte("webm"), 4500*time.Millisecond)}
	tests := []struct {
		name  string
		event map[string]any
		want  *want // nil: must be ignored
	}{
		{"mention starts a thread", mention("U1", "C1", "100.000001", "", "<@UBOT> hello &lt;there&gt; &amp; you"),
			&want{conv("C1", "100.000001"), "C1:100.000001", "U1", "hello <there> & you", nil}},
		{"thread reply without mention in the bot's thread", message("U2", "C1", "channel", "100.000002", "100.000001", "and more"),
			&want{conv("C1", "100.000001"), "C1:100.000002", "U2", "and more", nil}},
		{"thread reply in a thread the bot is not in", message("U1", "C1", "channel", "100.000003", "99.000001", "unrelated"), nil},
		{"top-level channel chatter", message("U1", "C1", "channel", "100.000004", "", "just talking"), nil},
		{"DM is one conversation", message("U1", "D1", "im", "100.000005", "", "hi in dm"),
			&want{conv("D1", ""), "D1:100.000005", "U1", "hi in dm", nil}},
		{"DM thread is its own conversation", message("U1", "D1", "im", "100.000006", "100.000005", "threaded"),
			&want{conv("D1", "100.000005"), "D1:100.000006", "U1", "threaded", nil}},
		{"@bot new is the new command", mention("U1", "C2", "100.000007", "", "<@UBOT> new"),
			&want{conv("C2", "100.000007"), "C2:100.000007", "U1", "new", nil}},
		{"@bot help me is a question", mention("U1", "C2", "100.000008", "", "<@UBOT|bridge> help me with Go"),
			&want{conv("C2", "100.000008"), "C2:100.000008", "U1", "help me with Go", nil}},
		{"file shared with a mention", withFile,
			&want{conv("C1", "100.000009"), "C1:100.000009", "U1", "read this",
				[]core.Attachment{{Kind: "file", Name: "notes.txt", MIME: "text/plain", Size: 10, Source: "F1"}}}},
		{"audio clip", withClip,
			&want{conv("D1", ""), "D1:100.000012", "U1", "",
				[]core.Attachment{{Kind: "audio", Name: "audio_message.webm", MIME: "audio/webm", Size: 4, Source: "F2", Duration: 4500 * time.Millisecond}}}},
		{"own message", func() map[string]any {
			m := message("UBOT", "C1", "channel", "100.000010", "100.000001", "my reply")
			m["bot_id"] = "B1"
			return m
		}(), nil},
		{"other bot", func() map[string]any {
			m := message("U9", "C1", "channel", "100.000011", "100.000001", "beep")
			m["bot_id"] = "B9"
			return m
		}(), nil},
		// Edits and deletions are handed over as such (core.Message.Edits):
		// TestQueuedMessageEditedOrDeletedOnSlack.
		{"join", func() map[string]any {
			m := message("U1", "C1", "channel", "100.000012", "100.000001", "joined")
			m["subtype"] = "channel_join"
			return m
		}(), nil},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(r.rec.messages())
			env := fake.SendEvent("Ev"+string(rune('A'+i)), tc.event)
			waitFake(t, fake, "ack", func(s *slacktest.State) bool { return s.Acked(env) })
			if tc.want == nil {
				// A marker message proves the ignored one was processed first:
				// events are handled in order by the reader.
				marker := fake.SendEvent("Mark"+string(rune('A'+i)), message("U1", "DM"+string(rune('A'+i)), "im", "200.00000"+string(rune('0'+i%10)), "", "marker"))
				_ = marker
				r.rec.wait(t, "marker", func(ms []core.Message, _ []core.Action) bool { return len(ms) > before })
				got := r.rec.messages()[before:]
				for _, m := range got {
					if m.Text != "marker" {
						t.Fatalf("delivered %+v; want it ignored", m)
					}
				}
				return
			}
			r.rec.wait(t, "message", func(ms []core.Message, _ []core.Action) bool { return len(ms) > before })
			m := r.rec.messages()[before]
			got := want{m.Conv, m.ID, m.From.ID, m.Text, m.Attachments}
			if diff := cmp.Diff(*tc.want, got); diff != "" {
				t.Errorf("normalized message (-want +got):\n%s", diff)
			}
			// A mention addresses the bot: the engine takes a bare
			// command word in it for the command.
			if mentioned := tc.event["type"] == "app_mention" || strings.Contains(tc.event["text"].(string), "<@UBOT"); m.Addressed != mentioned {
				t.Errorf("Addressed = %v for a message that mentions the bot: %v", m.Addressed, mentioned)
			}
			if m.Time.IsZero() {
				t.Error("message time not set from ts")
			}
		})
	}
}

// Acks go out before the handler runs, and events reach the handler on the
// reader, in the order Slack delivered them.
func TestAckBeforeHandlingInOrder(t *testing.T) {
	t.Parallel()
	fake := newFake(t, slacktest.Options{})
	rec := newRecorder()
	rec.block = make(chan struct{})
	start(t, fake, nil, rec)
	released := false
	defer func() {
		if !released {
			close(rec.block) // before the cleanup that stops Run
		}
	}()
	first := fake.SendEvent("Ev1", mention("U1", "C1", "1.000001", "", "<@UBOT> one"))
	second := fake.SendEvent("Ev2", mention("U1", "C1", "1.000002", "", "<@UBOT> two"))
	waitFake(t, fake, "the first acked while the handler holds it", func(s *slacktest.State) bool {
		return s.Acked(first)
	})
	rec.wait(t, "the first delivered", func(ms []core.Message, _ []core.Action) bool { return len(ms) == 1 })
	close(rec.block)
	released = true
	rec.wait(t, "both delivered", func(ms []core.Message, _ []core.Action) bool { return len(ms) == 2 })
	waitFake(t, fake, "the second acked", func(s *slacktest.State) bool { return s.Acked(second) })
	if ms := rec.messages(); ms[0].Text != "one" || ms[1].Text != "two" {
		t.Errorf("delivered %q, %q; want one, two", ms[0].Text, ms[1].Text)
	}
}

func TestDuplicateEnvelopeDeliveredOnce(t *testing.T) {
	t.Parallel()
	fake := newFake(t, slacktest.Options{})
	r := start(t, fake, nil, nil)
	// Same event_id twice (Slack's retry), then the message copy of the same
	// mention with another event_id: the adapter drops the retry; the
	// message copy carries the same message ID for core's dedup.
	ev := mention("U1", "C1", "5.000001", "", "<@UBOT> once")
	fake.SendEvent("EvDup", ev)
	fake.SendEvent("EvDup", ev)
	fake.SendEvent("EvMsg", message("U1", "C1", "channel", "5.000001", "", "<@UBOT> once"))
	marker := fake.SendEvent("EvMark", message("U1", "D9", "im", "5.000009", "", "marker"))
	waitFake(t, fake, "acks", func(s *slacktest.State) bool { return s.Acked(marker) })
	r.rec.wait(t, "marker", func(ms []core.Message, _ []core.Action) bool {
		for _, m := range ms {
			if m.Text == "marker" {
				return true
			}
		}
		return false
	})
	var ids []string
	for _, m := range r.rec.messages() {
		ids = append(ids, m.ID)
	}
	if diff := cmp.Diff([]string{"C1:5.000001", "C1:5.000001", "D9:5.000009"}, ids, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("delivered ids (-want +got):\n%s", diff)
	}
}

func TestSendEditShapes(t *testing.T) {
	t.Parallel()
	fake := newFake(t, slacktest.Options{})
	a, err := slack.New(options(fake), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	conv := core.ConversationKey{Platform: "slack", Workspace: "T1", Channel: "C1", Thread: "10.000001"}

	ref, err := a.Send(ctx, conv, core.Post{Text: "*bold* answer"})
	if err != nil {
		t.Fatal(err)
	}
	if ref.Conv != conv || ref.ID == "" {
		t.Fatalf("ref = %+v", ref)
	}
	if err := a.Edit(ctx, ref, core.Post{Text: "*bold* answer, longer"}); err != nil {
		t.Fatal(err)
	}
	// Plain: literal text, escaped, markup off.
	if _, err := a.Send(ctx, conv, core.Post{Text: "a <b> & *c*", Plain: true}); err != nil {
		t.Fatal(err)
	}
	// Buttons: a section with the text and an actions block with the values.
	long := strings.Repeat("x", 3500)
	pref, err := a.Send(ctx, conv, core.Post{Text: long, Buttons: []core.Button{
		{Label: "Allow", Value: "tok:a", Style: core.StylePrimary},
		{Label: "Deny", Value: "tok:d", Style: core.StyleDanger},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Edit(ctx, pref, core.Post{Text: "done ✅"}); err != nil {
		t.Fatal(err)
	}

	msgs := fake.Messages()
	if len(msgs) != 3 {
		t.Fatalf("messages: %+v", msgs)
	}
	type shape struct {
		Thread, Text string
		Mrkdwn       bool
		Edits        int
	}
	got := []shape{}
	for _, m := range msgs {
		got = append(got, shape{m.ThreadTS, m.Text, m.Mrkdwn, m.Edits})
	}
	want := []shape{
		{"10.000001", "*bold* answer, longer", true, 1},
		{"10.000001", "a &lt;b&gt; &amp; *c*", false, 0},
		{"10.000001", "done ✅", true, 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	if msgs[2].Blocks != "" {
		t.Errorf("buttons not removed by the edit: %s", msgs[2].Blocks)
	}
	// The button post's blocks as sent.
	var blocks []struct {
		Type string `json:"type"`
		Text *struct {
			Text string `json:"text"`
		} `json:"text"`
		Elements []struct {
			Value string `json:"value"`
			Style string `json:"style"`
		} `json:"elements"`
	}
	posts := fake.Calls("chat.postMessage")
	if err := json.Unmarshal([]byte(posts[2].Form.Get("blocks")), &blocks); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	sections := ""
	for _, b := range blocks {
		kinds = append(kinds, b.Type)
		if b.Text != nil {
			if n := len([]rune(b.Text.Text)); n > 3000 {
				t.Errorf("section of %d chars", n)
			}
			sections += b.Text.Text
		}
	}
	if diff := cmp.Diff([]string{"section", "section", "actions"}, kinds); diff != "" {
		t.Errorf("block kinds (-want +got):\n%s", diff)
	}
	if sections != long {
		t.Error("sections do not add up to the text")
	}
	last := blocks[len(blocks)-1].Elements
	if len(last) != 2 || last[0].Value != "tok:a" || last[0].Style != "primary" || last[1].Value != "tok:d" || last[1].Style != "danger" {
		t.Errorf("buttons = %+v", last)
	}
}

func TestErrorTranslation(t *testing.T) {
	t.Parallel()
	fake := newFake(t, slacktest.Options{})
	a, err := slack.New(options(fake), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	conv := core.ConversationKey{Platform: "slack", Workspace: "T1", Channel: "C1", Thread: "1.1"}
	ref, err := a.Send(ctx, conv, core.Post{Text: "x"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		fail slacktest.Failure
		is   error
		ra   time.Duration
	}{
		{slacktest.Failure{Error: "msg_too_long"}, core.ErrMessageTooLong, 0},
		{slacktest.Failure{Error: "invalid_blocks"}, core.ErrFormatting, 0},
		{slacktest.Failure{Error: "message_not_found"}, core.ErrNotFound, 0},
		{slacktest.Failure{Status: 429, RetryAfter: 2, Error: "ratelimited"}, nil, 2 * time.Second},
	}
	for _, tc := range tests {
		fake.Fail("chat.update", tc.fail)
		// A fresh adapter each time: the 429 holds the workspace's edits.
		a, _ := slack.New(options(fake), nil)
		err := a.Edit(ctx, ref, core.Post{Text: "y"})
		if tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%s: got %v, want %v", tc.fail.Error, err, tc.is)
		}
		if tc.ra > 0 {
			if ra, ok := core.RetryAfter(err); !ok || ra != tc.ra {
				t.Errorf("429: got %v (retry after %v), want RetryAfter %v", err, ra, tc.ra)
			}
			// Every stream in the workspace now waits, without calling Slack.
			n := len(fake.Calls("chat.update"))
			err := a.Edit(ctx, ref, core.Post{Text: "z"})
			if _, ok := core.RetryAfter(err); !ok || len(fake.Calls("chat.update")) != n {
				t.Errorf("edit during the hold: %v, calls %d→%d", err, n, len(fake.Calls("chat.update")))
			}
		}
	}
	_ = a
	fake.Fail("chat.postMessage", slacktest.Failure{Error: "channel_not_found"})
	if _, err := a.Send(ctx, conv, core.Post{Text: "x"}); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("post to a missing channel: %v", err)
	}
}

// The workspace budget refuses edits without calling Slack once spent, and
// the refusal says how long to wait.
func TestEditBudgetSharedByWorkspace(t *testing.T) {
	t.Parallel()
	fake := newFake(t, slacktest.Options{})
	opts := options(fake)
	opts.EditsPerMinute, opts.EditBurst = 60, 3 // a burst of three (one kept for a final edit), then 90 % of one a second
	a, err := slack.New(opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	var refs []core.MessageRef
	for _, th := range []string{"1.1", "2.2", "3.3"} { // three threads, one workspace
		ref, err := a.Send(ctx, core.ConversationKey{Platform: "slack", Workspace: "T1", Channel: "C1", Thread: th}, core.Post{Text: "x"})
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref)
	}
	var errs []error
	for _, ref := range refs {
		errs = append(errs, a.Edit(ctx, ref, core.Post{Text: "y", Priority: core.PriorityInterim})) // stream frames
	}
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("first two edits: %v", errs)
	}
	ra, ok := core.RetryAfter(errs[2])
	// 90 % of 60 a minute, the burst included: one every 60/52 s.
	if !ok || ra <= time.Second || ra > 1200*time.Millisecond {
		t.Fatalf("third edit: %v; want a rate limit of 1.0–1.2 s", errs[2])
	}
	if n := len(fake.Calls("chat.update")); n != 2 {
		t.Errorf("chat.update calls = %d; want 2 (the refused edit must not reach Slack)", n)
	}
	// Another workspace has its own budget.
	other, err := a.Send(ctx, core.ConversationKey{Platform: "slack", Workspace: "T2", Channel: "C1", Thread: "4.4"}, core.Post{Text: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Edit(ctx, other, core.Post{Text: "y"}); err != nil {
		t.Errorf("edit in another workspace: %v", err)
	}
}

func TestFatalCredentialsNeverShowTokens(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		tweak func(*slack.Options)
		want  string
	}{
		{"bad bot token", func(o *slack.Options) { o.BotToken = "xoxb-secret-bot-123" }, "bot token was rejected"},
		{"bad app token", func(o *slack.Options) { o.AppToken = "xapp-secret-app-456" }, "app token was rejected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFake(t, slacktest.Options{})
			opts := options(fake)
			tc.tweak(&opts)
			logs := &syncBuffer{}
			a, err := slack.New(opts, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			err = a.Run(ctx, newRecorder())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run = %v; want a fatal error mentioning %q", err, tc.want)
			}
			for _, secret := range []string{"xoxb-secret-bot-123", "xapp-secret-app-456", "xoxb-test", "xapp-test"} {
				if strings.Contains(err.Error(), secret) || strings.Contains(logs.String(), secret) {
					t.Errorf("token %q leaked: err %q, logs %q", secret, err, logs.String())
				}
			}
		})
	}
}

func TestReconnectAfterDisconnect(t *testing.T) {
	t.Parallel()
	fake := newFake(t, slacktest.Options{})
	r := start(t, fake, nil, nil)
	fake.Disconnect("refresh_requested")
	waitFake(t, fake, "reconnected", func(s *slacktest.State) bool { return s.Opens() >= 2 && s.Connected() == 1 })
	env := fake.SendEvent("EvAfter", mention("U1", "C1", "7.000001", "", "<@UBOT> after reconnect"))
	waitFake(t, fake, "ack", func(s *slacktest.State) bool { return s.Acked(env) })
	r.rec.wait(t, "message after reconnect", func(ms []core.Message, _ []core.Action) bool {
		return len(ms) == 1 && ms[0].Text == "after reconnect"
	})
}

func TestButtonPressAndPrivateReply(t *testing.T) {
	t.Parallel()
	fake := newFake(t, slacktest.Options{})
	r := start(t, fake, nil, nil)
	env := fake.Press("U2", "C1", "8.000001", "8.000005", "tok:a")
	waitFake(t, fake, "ack", func(s *slacktest.State) bool { return s.Acked(env) })
	r.rec.wait(t, "action", func(_ []core.Message, as []core.Action) bool { return len(as) == 1 })
	act := r.rec.acts[0]
	conv := core.ConversationKey{Platform: "slack", Workspace: "T1", Channel: "C1", Thread: "8.000001"}
	if diff := cmp.Diff(core.Action{Conv: conv, From: core.User{ID: "U2", Name: "u2"}, Value: "tok:a",
		Ref: core.MessageRef{Conv: conv, ID: "8.000005"}}, act, cmpopts.IgnoreFields(core.Action{}, "Reply")); diff != "" {
		t.Errorf("action (-want +got):\n%s", diff)
	}
	act.Reply("") // the acknowledgement core gives a press it has nothing to say about
	act.Reply("not yours <!channel>")
	calls := fake.Calls("chat.postEphemeral")
	if len(calls) != 1 {
		t.Fatalf("ephemeral calls = %d", len(calls))
	}
	f := calls[0].Form
	if f.Get("user") != "U2" || f.Get("channel") != "C1" || f.Get("thread_ts") != "8.000001" || f.Get("text") != "not yours &lt;!channel&gt;" {
		t.Errorf("ephemeral form = %v", f)
	}
}

func TestDownloadAndTyping(t *testing.T) {
	t.Parallel()
	fake := newFake(t, slacktest.Options{})
	a, err := slack.New(options(fake), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	fake.AddFile("F7", "pic.png", "image/png", []byte("PNGDATA"))
	var buf bytes.Buffer
	if err := a.Download(ctx, core.Attachment{Source: "F7"}, &buf, 100); err != nil {
		t.Fatal(err)
	}
	if buf.String() != "PNGDATA" {
		t.Errorf("downloaded %q", buf.String())
	}
	err = a.Download(ctx, core.Attachment{Source: "F7"}, &bytes.Buffer{}, 3)
	if err == nil || strings.Contains(err.Error(), "files-pri") {
		t.Errorf("over the limit: %v; want an error without the private URL", err)
	}
	if err := a.Download(ctx, core.Attachment{Source: "F404"}, &bytes.Buffer{}, 100); err == nil {
		t.Error("missing file downloaded")
	}

	conv := core.ConversationKey{Platform: "slack", Workspace: "T1", Channel: "C1", Thread: "9.000001"}
	for range 3 {
		if err := a.Typing(ctx, conv); err != nil {
			t.Fatal(err)
		}
	}
	calls := fake.Calls("assistant.threads.setStatus")
	if len(calls) != 1 {
		t.Fatalf("setStatus calls = %d; want 1 (the status lasts, no need to repeat)", len(calls))
	}
	if f := calls[0].Form; f.Get("channel_id") != "C1" || f.Get("thread_ts") != "9.000001" || f.Get("status") == "" {
		t.Errorf("setStatus form = %v", f)
	}

	// Without the status feature, a reaction marks the thread instead, once.
	b, _ := slack.New(options(fake), nil)
	fake.Fail("assistant.threads.setStatus", slacktest.Failure{Error: "missing_scope"})
	other := core.ConversationKey{Platform: "slack", Workspace: "T1", Channel: "C1", Thread: "9.000002"}
	for _, c := range []core.ConversationKey{other, other, conv} {
		if err := b.Typing(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(fake.Calls("assistant.threads.setStatus")); n != 2 {
		t.Errorf("setStatus calls = %d; want no more tries after missing_scope", n)
	}
	var reacted []string
	for _, c := range fake.Calls("reactions.add") {
		reacted = append(reacted, c.Form.Get("name")+" "+c.Form.Get("channel")+" "+c.Form.Get("timestamp"))
	}
	if diff := cmp.Diff([]string{"eyes C1 9.000002", "eyes C1 9.000001"}, reacted); diff != "" {
		t.Errorf("reactions (-want +got):\n%s", diff)
	}
	// When the reply is final the reaction comes off, once, and the next
	// turn puts it back.
	reply := core.MessageRef{Conv: other, ID: "9.000003"}
	for range 2 {
		if err := b.FinalizeMessage(ctx, reply); err != nil {
			t.Fatal(err)
		}
	}
	removed := fake.Calls("reactions.remove")
	if len(removed) != 1 || removed[0].Form.Get("timestamp") != "9.000002" || removed[0].Form.Get("name") != "eyes" {
		t.Errorf("reactions.remove calls = %+v; want one for the thread's first message", removed)
	}
	if err := b.Typing(ctx, other); err != nil {
		t.Fatal(err)
	}
	if n := len(fake.Calls("reactions.add")); n != 3 {
		t.Errorf("reactions.add calls = %d after the next turn's typing; want 3", n)
	}
}

// A transient auth.test failure is retried; Run then connects.
func TestAuthRetriedAfterServerError(t *testing.T) {
	t.Parallel()
	fake := newFake(t, slacktest.Options{})
	fake.Fail("auth.test", slacktest.Failure{Status: 500, Error: "fatal_error"})
	r := start(t, fake, nil, nil)
	if n := len(fake.Calls("auth.test")); n < 2 {
		t.Errorf("auth.test calls = %d; want a retry", n)
	}
	env := fake.SendEvent("Ev1", mention("U1", "C1", "11.000001", "", "<@UBOT> hi"))
	waitFake(t, fake, "ack", func(s *slacktest.State) bool { return s.Acked(env) })
	r.rec.wait(t, "message", func(ms []core.Message, _ []core.Action) bool { return len(ms) == 1 })
}

func TestNewRefusesIncompleteOptions(t *testing.T) {
	t.Parallel()
	for _, o := range []slack.Options{
		{},
		{BotToken: "xoxb"},
		{BotToken: "xoxb", Mode: slack.ModeEvents, SigningSecret: "s"},
		{BotToken: "xoxb", AppToken: "xapp", Mode: "carrier-pigeon"},
	} {
		if _, err := slack.New(o, nil); err == nil {
			t.Errorf("New(%+v) = nil error", o)
		}
	}
}

// Posts in one channel keep to about one a second after a short burst,
// waiting rather than failing; another channel is not held up.
func TestPostsPacedPerChannel(t *testing.T) {
	t.Parallel()
	fake := newFake(t, slacktest.Options{})
	a, err := slack.New(options(fake), nil)
	if err != nil {
		t.Fatal(err)
	}
	c1 := core.ConversationKey{Platform: "slack", Workspace: "T1", Channel: "C1"}
	c2 := core.ConversationKey{Platform: "slack", Workspace: "T1", Channel: "C2"}
	for range 6 {
		if _, err := a.Send(t.Context(), c1, core.Post{Text: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Send(t.Context(), c2, core.Post{Text: "y"}); err != nil {
		t.Fatal(err)
	}
	calls := fake.Calls("chat.postMessage")
	if span := calls[5].At.Sub(calls[0].At); span < 1500*time.Millisecond {
		t.Errorf("6 posts in one channel took %v; want the 5th and 6th paced a second apart", span)
	}
	if gap := calls[6].At.Sub(calls[5].At); gap > 500*time.Millisecond {
		t.Errorf("a post in another channel waited %v", gap)
	}
}
