package telegram_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge/adapters/telegram"
	"github.com/agentbridge/agentbridge/adapters/telegram/telegramtest"
	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/store"
)

const token = "123456:SECRET-token-value"

// logBuf is a concurrency-safe log sink, to check that no token is logged.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type env struct {
	t    *testing.T
	fake *telegramtest.Server
	st   *store.Store
	ad   *telegram.Adapter
	logs *logBuf
}

func newEnv(t *testing.T, mutate func(*telegram.Options)) *env {
	t.Helper()
	fake := telegramtest.NewServer(token)
	t.Cleanup(fake.Close)
	st, err := store.Open(filepath.Join(t.TempDir(), "bridge.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	logs := &logBuf{}
	opts := telegram.Options{Token: core.Secret(token), APIURL: fake.URL, Store: st, PollTimeout: 5 * time.Second}
	if mutate != nil {
		mutate(&opts)
	}
	ad, err := telegram.New(opts, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if strings.Contains(logs.String(), "SECRET") {
			t.Errorf("token in logs:\n%s", logs.String())
		}
	})
	return &env{t: t, fake: fake, st: st, ad: ad, logs: logs}
}

// recorder is a core.Handler that records what it is handed.
type recorder struct {
	msgs    chan core.Message
	actions chan core.Action
	onMsg   func(core.Message) // runs inside HandleMessage, before recording
}

func newRecorder() *recorder {
	return &recorder{msgs: make(chan core.Message, 100), actions: make(chan core.Action, 100)}
}

func (r *recorder) HandleMessage(ctx context.Context, m core.Message) {
	if r.onMsg != nil {
		r.onMsg(m)
	}
	r.msgs <- m
}

func (r *recorder) HandleAction(ctx context.Context, a core.Action) { r.actions <- a }

// run starts Run and returns a func that stops it and returns its result.
func (e *env) run(h core.Handler) func() error {
	ctx, cancel := context.WithCancel(e.t.Context())
	done := make(chan error, 1)
	go func() { done <- e.ad.Run(ctx, h) }()
	stop := sync.OnceValue(func() error { cancel(); return <-done })
	e.t.Cleanup(func() { stop() })
	return stop
}

// waitFor waits until cond holds for the fake's calls.
func (e *env) waitFor(what string, cond func() bool) {
	e.t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		ch := e.fake.Changed()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-timeout:
			e.t.Fatalf("timed out waiting for %s; calls: %v", what, methods(e.fake.Calls()))
		}
	}
}

func methods(calls []telegramtest.Call) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Method)
	}
	return out
}

func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(60 * time.Second):
		t.Fatal("timed out waiting for a handed-over event")
		panic("unreachable")
	}
}

var (
	alice = telegramtest.User(1001, "Alice", "alice")
	bob   = telegramtest.User(1002, "Bob", "")
)

const group = int64(-100777)

func TestRunNormalizesMessages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	rec := newRecorder()
	stop := e.run(rec)
	bot := strconv.Itoa(telegramtest.BotID)
	e.fake.Push(telegramtest.PrivateMessage(5, alice, "hello there"))
	e.fake.Push(telegramtest.GroupMessage(group, 6, 0, bob, "chatter not for the bot"))
	e.fake.Push(telegramtest.GroupMessage(group, 7, 0, bob, "@"+telegramtest.BotUsername+" what is 2+2?"))
	e.fake.Push(telegramtest.GroupMessage(group, 8, 55, alice, "@"+telegramtest.BotUsername+" in a topic"))
	e.fake.Push(telegramtest.GroupMessage(group, 9, 0, alice, "/status@"+telegramtest.BotUsername))
	e.fake.Push(telegramtest.GroupMessage(group, 10, 0, alice, "/status@other_bot"))
	var got []core.Message
	for range 4 {
		m := recv(t, rec.msgs)
		m.Time = time.Time{}
		got = append(got, m)
	}
	want := []core.Message{
		{Conv: core.ConversationKey{Platform: "telegram", Workspace: bot, Channel: "1001"}, ID: "1001:5", From: core.User{ID: "1001", Name: "Alice"}, Text: "hello there"},
		{Conv: core.ConversationKey{Platform: "telegram", Workspace: bot, Channel: "-100777"}, ID: "-100777:7", From: core.User{ID: "1002", Name: "Bob"}, Text: "what is 2+2?", Addressed: true},
		{Conv: core.ConversationKey{Platform: "telegram", Workspace: bot, Channel: "-100777", Thread: "55"}, ID: "-100777:8", From: core.User{ID: "1001", Name: "Alice"}, Text: "in a topic", Addressed: true},
		{Conv: core.ConversationKey{Platform: "telegram", Workspace: bot, Channel: "-100777"}, ID: "-100777:9", From: core.User{ID: "1001", Name: "Alice"}, Text: "/status", Addressed: true},
	}
	// Chats are handed over concurrently, in order within each chat.
	byID := func(ms []core.Message) map[string]core.Message {
		out := map[string]core.Message{}
		for _, m := range ms {
			out[m.ID] = m
		}
		return out
	}
	if d := cmp.Diff(byID(want), byID(got)); d != "" {
		t.Errorf("messages (-want +got):\n%s", d)
	}
	// Everything was handed over, so the offset moves past the last update.
	e.waitFor("offset confirmed", func() bool { return len(e.fake.Pending()) == 0 })
	if err := stop(); err != nil {
		t.Fatalf("Run returned %v after ctx end; want nil", err)
	}
	select {
	case m := <-rec.msgs:
		t.Errorf("unexpected message handed over: %+v", m)
	default:
	}
	cur, err := e.st.Cursor(t.Context(), "telegram:"+bot+":offset")
	if err != nil || cur == "" {
		t.Fatalf("cursor = %q, %v; want the next offset", cur, err)
	}
	if calls := e.fake.Calls("setMyCommands"); len(calls) != 0 {
		t.Errorf("setMyCommands called without commands configured")
	}
}

func TestGroupTriggerAllAndReplies(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *telegram.Options) { o.GroupTrigger = telegram.TriggerAll })
	rec := newRecorder()
	e.run(rec)
	e.fake.Push(telegramtest.GroupMessage(group, 6, 0, bob, "chatter"))
	if m := recv(t, rec.msgs); m.Text != "chatter" {
		t.Errorf("text = %q", m.Text)
	}
}

func TestOffsetAdvancesOnlyAfterHandoff(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	release := make(chan struct{})
	entered := make(chan struct{})
	rec := newRecorder()
	rec.onMsg = func(core.Message) { close(entered); <-release }
	stop := e.run(rec)
	id := e.fake.Push(telegramtest.PrivateMessage(5, alice, "slow"))
	<-entered
	// While core holds the update, it is not confirmed anywhere.
	if cur, _ := e.st.Cursor(t.Context(), "telegram:"+strconv.Itoa(telegramtest.BotID)+":offset"); cur != "" {
		t.Errorf("cursor saved before handoff finished: %q", cur)
	}
	if p := e.fake.Pending(); len(p) != 1 || p[0] != id {
		t.Errorf("pending = %v; want [%d]", p, id)
	}
	close(release)
	recv(t, rec.msgs)
	e.waitFor("next poll with offset", func() bool {
		for _, c := range e.fake.Calls("getUpdates") {
			if c.Form.Get("offset") == strconv.Itoa(id+1) {
				return true
			}
		}
		return false
	})
	stop()
	cur, _ := e.st.Cursor(t.Context(), "telegram:"+strconv.Itoa(telegramtest.BotID)+":offset")
	if cur != strconv.Itoa(id+1) {
		t.Errorf("cursor = %q; want %d", cur, id+1)
	}

	// A new adapter (a restart) starts from the stored offset.
	ad2, err := telegram.New(telegram.Options{Token: token, APIURL: e.fake.URL, Store: e.st, PollTimeout: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := len(e.fake.Calls("getUpdates"))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- ad2.Run(ctx, newRecorder()) }()
	e.waitFor("restarted poll", func() bool { return len(e.fake.Calls("getUpdates")) > n })
	cancel()
	<-done
	if got := e.fake.Calls("getUpdates")[n].Form.Get("offset"); got != strconv.Itoa(id+1) {
		t.Errorf("restart polled from offset %q; want %d", got, id+1)
	}
}

func TestRunFatalErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		fault telegramtest.Fault
		want  error
	}{
		{"conflict", telegramtest.Conflict, telegram.ErrConflict},
		{"unauthorized", telegramtest.Fault{Code: 401, Description: "Unauthorized"}, telegram.ErrUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			e.fake.Fail("getUpdates", tc.fault)
			err := e.ad.Run(t.Context(), newRecorder())
			if !errors.Is(err, tc.want) || !errors.Is(err, core.ErrFatal) {
				t.Fatalf("Run = %v; want %v marked core.ErrFatal", err, tc.want)
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Errorf("token in error: %v", err)
			}
		})
	}
}

// TestBadTokenAtStart: New makes no request; Run's first one, getMe, finds
// the token rejected and stops for good.
func TestBadTokenAtStart(t *testing.T) {
	t.Parallel()
	fake := telegramtest.NewServer("other:token")
	defer fake.Close()
	ad, err := telegram.New(telegram.Options{Token: token, APIURL: fake.URL}, nil)
	if err != nil {
		t.Fatalf("New = %v; want an adapter (it does no I/O)", err)
	}
	if n := len(fake.Calls("getMe")); n != 0 {
		t.Fatalf("New called getMe %d times; constructors do no network I/O", n)
	}
	err = ad.Run(t.Context(), newRecorder())
	if !errors.Is(err, telegram.ErrUnauthorized) || !errors.Is(err, core.ErrFatal) || strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("Run = %v; want ErrUnauthorized marked core.ErrFatal, without the token", err)
	}
}

func TestTransportErrorsNeverShowToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.fake.Close()
	_, err := e.ad.Send(t.Context(), core.ConversationKey{Platform: "telegram", Channel: "1001"}, core.Post{Text: "hi"})
	if err == nil || strings.Contains(err.Error(), "SECRET") || !strings.Contains(err.Error(), "<token>") {
		t.Fatalf("Send to a dead server = %v; want an error with the token scrubbed", err)
	}
}

func TestPollHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.fake.Fail("getUpdates", telegramtest.RateLimit(1))
	e.run(newRecorder())
	e.waitFor("second poll", func() bool { return len(e.fake.Calls("getUpdates")) >= 2 })
	c := e.fake.Calls("getUpdates")
	if gap := c[1].At.Sub(c[0].At); gap < time.Second {
		t.Errorf("polled again after %v; retry_after said 1s", gap)
	}
	if !strings.Contains(e.logs.String(), "retry") {
		t.Errorf("rate limit not logged")
	}
}

func TestSendAndEdit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := t.Context()
	topic := core.ConversationKey{Platform: "telegram", Channel: strconv.FormatInt(group, 10), Thread: "55"}
	ref, err := e.ad.Send(ctx, topic, core.Post{Text: "<b>Permission</b>", Buttons: []core.Button{
		{Label: "Allow", Value: "tok:a"}, {Label: "Deny", Value: "tok:d"}, {Label: "Allow for this session", Value: "tok:s"}}})
	if err != nil {
		t.Fatal(err)
	}
	msgs := e.fake.Messages(group)
	if len(msgs) != 1 || msgs[0].ThreadID != 55 || msgs[0].ParseMode != "HTML" || strconv.Itoa(msgs[0].ID) != ref.ID {
		t.Fatalf("sent %+v, ref %+v", msgs, ref)
	}
	var kb struct {
		InlineKeyboard [][]struct {
			Text         string `json:"text"`
			CallbackData string `json:"callback_data"`
		} `json:"inline_keyboard"`
	}
	if err := json.Unmarshal([]byte(msgs[0].Markup), &kb); err != nil {
		t.Fatal(err)
	}
	if len(kb.InlineKeyboard) != 2 || kb.InlineKeyboard[0][1].CallbackData != "tok:d" || kb.InlineKeyboard[1][0].Text != "Allow for this session" {
		t.Errorf("keyboard = %+v", kb)
	}

	// Editing without buttons removes the keyboard.
	if err := e.ad.Edit(ctx, ref, core.Post{Text: "<b>Permission</b>\n\n✅ Allowed"}); err != nil {
		t.Fatal(err)
	}
	if m := e.fake.Messages(group)[0]; m.Markup != "" || m.Edits != 1 {
		t.Errorf("after edit: %+v", m)
	}

	// Error translation.
	dm := core.ConversationKey{Platform: "telegram", Channel: "1001"}
	ref2, err := e.ad.Send(ctx, dm, core.Post{Text: "a < b", Plain: true})
	if err != nil {
		t.Fatalf("plain text with '<' must go without parse_mode: %v", err)
	}
	for _, tc := range []struct {
		name string
		ref  core.MessageRef
		post core.Post
		want error
	}{
		{"not modified", ref2, core.Post{Text: "a < b", Plain: true}, core.ErrNotModified},
		{"bad markup", ref2, core.Post{Text: "<b>unclosed"}, core.ErrFormatting},
		{"too long", ref2, core.Post{Text: strings.Repeat("x", 4097), Plain: true}, core.ErrMessageTooLong},
		{"gone", core.MessageRef{Conv: dm, ID: "999999"}, core.Post{Text: "x"}, core.ErrNotFound},
	} {
		// Each case is its own chat budget's worth: wait out the budget.
		err := editEventually(t, e.ad, tc.ref, tc.post)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: Edit = %v; want %v", tc.name, err, tc.want)
		}
	}
}

// editEventually retries Edit past the adapter's own budget only.
func editEventually(t *testing.T, ad *telegram.Adapter, ref core.MessageRef, p core.Post) error {
	for {
		err := ad.Edit(t.Context(), ref, p)
		var rl *core.RateLimitError
		if errors.As(err, &rl) && rl.Err == nil {
			time.Sleep(rl.RetryAfter) // the adapter's budget, not under test here
			continue
		}
		return err
	}
}

func TestRateLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := t.Context()
	conv := core.ConversationKey{Platform: "telegram", Channel: strconv.FormatInt(group, 10)}
	ref, err := e.ad.Send(ctx, conv, core.Post{Text: "one"})
	if err != nil {
		t.Fatal(err)
	}
	// A platform 429 becomes a RateLimitError with its retry_after, and
	// the chat is then held back without calling Telegram.
	e.fake.Fail("editMessageText", telegramtest.RateLimit(3))
	err = e.ad.Edit(ctx, ref, core.Post{Text: "two"})
	if ra, ok := core.RetryAfter(err); !ok || ra != 3*time.Second {
		t.Fatalf("Edit after 429 = %v; want retry after 3s", err)
	}
	n := len(e.fake.Calls("editMessageText"))
	err = e.ad.Edit(ctx, ref, core.Post{Text: "three"})
	// (At least the 3 s hold; the group's budget, spent by the send and
	// the edit, may put the turn a little later.)
	if ra, ok := core.RetryAfter(err); !ok || ra < 2*time.Second || ra > 5*time.Second {
		t.Fatalf("Edit during retry_after = %v; want a rate limit of about 3 s", err)
	}
	if len(e.fake.Calls("editMessageText")) != n {
		t.Errorf("Edit called Telegram during retry_after")
	}

	// The group budget (20 a minute) is enforced locally.
	other := core.ConversationKey{Platform: "telegram", Channel: "-100888"}
	ref2, err := e.ad.Send(ctx, other, core.Post{Text: "x0"})
	if err != nil {
		t.Fatal(err)
	}
	var limited bool
	for i := 1; i <= 10 && !limited; i++ {
		err := e.ad.Edit(ctx, ref2, core.Post{Text: "x" + strconv.Itoa(i)})
		if ra, ok := core.RetryAfter(err); ok {
			limited = ra > 0
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if !limited {
		t.Errorf("ten quick edits in a group were never rate limited locally")
	}
	if got := e.fake.Messages(-100888)[0].Edits; got > 5 {
		t.Errorf("Telegram saw %d edits; budget allows a burst of 2 (one after the send)", got)
	}
}

func TestCallbackQueries(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	rec := newRecorder()
	e.run(rec)
	e.fake.Push(telegramtest.CallbackQuery("cb1", bob, group, 77, 55, "tok:a"))
	a := recv(t, rec.actions)
	bot := strconv.Itoa(telegramtest.BotID)
	conv := core.ConversationKey{Platform: "telegram", Workspace: bot, Channel: "-100777", Thread: "55"}
	if d := cmp.Diff(core.Action{Conv: conv, From: core.User{ID: "1002", Name: "Bob"}, Value: "tok:a", Ref: core.MessageRef{Conv: conv, ID: "77"}},
		a, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Reply" }, cmp.Ignore())); d != "" {
		t.Errorf("action (-want +got):\n%s", d)
	}
	// Core has nothing to say (Reply("")): the press is answered silently.
	if n := len(e.fake.Calls("answerCallbackQuery")); n != 0 {
		t.Errorf("answered %d times before core's Reply", n)
	}
	a.Reply("")
	e.waitFor("answer", func() bool { return len(e.fake.Calls("answerCallbackQuery")) == 1 })
	if c := e.fake.Calls("answerCallbackQuery")[0]; c.Form.Get("callback_query_id") != "cb1" || c.Form.Get("text") != "" {
		t.Errorf("answer = %v", c.Form)
	}
}

type replier struct{ *recorder }

func (r replier) HandleAction(ctx context.Context, a core.Action) {
	a.Reply("Only the person who asked can answer this request.")
	r.actions <- a
}

func TestCallbackReplyAnswersOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	rec := newRecorder()
	e.run(replier{rec})
	e.fake.Push(telegramtest.CallbackQuery("cb2", bob, 1001, 78, 0, "tok:a"))
	recv(t, rec.actions)
	e.waitFor("answer", func() bool { return len(e.fake.Calls("answerCallbackQuery")) >= 1 })
	e.fake.Push(telegramtest.PrivateMessage(5, alice, "sync point"))
	recv(t, rec.msgs)
	calls := e.fake.Calls("answerCallbackQuery")
	if len(calls) != 1 || !strings.HasPrefix(calls[0].Form.Get("text"), "Only the person") {
		t.Errorf("answers = %v; want exactly one, with the refusal", calls)
	}
}

func TestTypingDownloadAndCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *telegram.Options) {
		o.Commands = []telegram.Command{{Command: "new", Description: "start a fresh session"}}
	})
	ctx := t.Context()
	topic := core.ConversationKey{Platform: "telegram", Channel: "-100777", Thread: "55"}
	if err := e.ad.Typing(ctx, topic); err != nil {
		t.Fatal(err)
	}
	c := e.fake.Calls("sendChatAction")
	if len(c) != 1 || c[0].Form.Get("action") != "typing" || c[0].Form.Get("message_thread_id") != "55" {
		t.Errorf("sendChatAction = %v", c)
	}

	e.fake.AddFile("F1", "documents/notes.txt", []byte("file body"))
	var buf bytes.Buffer
	if err := e.ad.Download(ctx, core.Attachment{Source: "F1"}, &buf, 100); err != nil || buf.String() != "file body" {
		t.Fatalf("Download = %q, %v", buf.String(), err)
	}
	err := e.ad.Download(ctx, core.Attachment{Source: "F1"}, &bytes.Buffer{}, 4)
	if err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("Download over the limit = %v", err)
	}

	rec := newRecorder()
	e.run(rec)
	e.waitFor("setMyCommands", func() bool { return len(e.fake.Calls("setMyCommands")) == 1 })
	if got := e.fake.Calls("setMyCommands")[0].Form.Get("commands"); got != `[{"command":"new","description":"start a fresh session"}]` {
		t.Errorf("commands = %s", got)
	}

	// A photo without caption becomes a message with an attachment and no text.
	upd := telegramtest.PrivateMessage(9, alice, "")
	msg := upd["message"].(map[string]any)
	delete(msg, "text")
	msg["photo"] = []any{
		map[string]any{"file_id": "small", "file_unique_id": "us", "width": 90, "height": 90, "file_size": 100},
		map[string]any{"file_id": "big", "file_unique_id": "ub", "width": 900, "height": 900, "file_size": 9000},
	}
	e.fake.Push(upd)
	m := recv(t, rec.msgs)
	want := []core.Attachment{{Kind: "image", Name: "photo-ub.jpg", MIME: "image/jpeg", Size: 9000, Source: "big"}}
	if d := cmp.Diff(want, m.Attachments); d != "" || m.Text != "" {
		t.Errorf("photo message text %q, attachments (-want +got):\n%s", m.Text, d)
	}
}

var _ http.Handler = http.NotFoundHandler() // keep net/http for helpers

func TestDraftErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *telegram.Options) { o.Drafts = true })
	ctx := t.Context()
	dm := core.ConversationKey{Platform: "telegram", Channel: "1001"}
	// Rejected markup is about the text: core resends plain, drafts stay on.
	if _, err := e.ad.Send(ctx, dm, core.Post{Text: "<b>unclosed", Priority: core.PriorityInterim}); !errors.Is(err, core.ErrFormatting) {
		t.Fatalf("Send with bad markup = %v; want ErrFormatting", err)
	}
	ref, err := e.ad.Send(ctx, dm, core.Post{Text: "<b>fine</b>", Priority: core.PriorityInterim})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(e.fake.Calls("sendMessageDraft")); n != 2 || len(e.fake.Messages(1001)) != 0 {
		t.Errorf("%d drafts, %d messages; want the second post as a draft", n, len(e.fake.Messages(1001)))
	}
	// A post that is not interim (a notice, a reply's final text) is a real
	// message at once.
	if _, err := e.ad.Send(ctx, dm, core.Post{Text: "<b>final</b>"}); err != nil {
		t.Fatal(err)
	}
	if n := len(e.fake.Calls("sendMessageDraft")); n != 2 || len(e.fake.Messages(1001)) != 1 {
		t.Errorf("%d drafts, %d messages; want the final post as a message", n, len(e.fake.Messages(1001)))
	}
	// A draft unknown to this process (from before a restart) is gone.
	if err := e.ad.Edit(ctx, core.MessageRef{Conv: dm, ID: "draft-999"}, core.Post{Text: "x"}); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("Edit of an unknown draft = %v; want ErrNotFound", err)
	}
	// Nor is a draft of another chat with the same id (a stale ref from
	// before a restart, when ids began again).
	other := core.MessageRef{Conv: core.ConversationKey{Platform: "telegram", Channel: "1002"}, ID: ref.ID}
	if err := e.ad.Edit(ctx, other, core.Post{Text: "x"}); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("Edit of another chat's draft id = %v; want ErrNotFound", err)
	}
	// Putting buttons on a draft turns it into a real message at once.
	if err := e.ad.Edit(ctx, ref, core.Post{Text: "<b>fine</b>", Buttons: []core.Button{{Label: "OK", Value: "v"}}}); err != nil {
		t.Fatal(err)
	}
	if msgs := e.fake.Messages(1001); len(msgs) != 2 || msgs[1].Markup == "" {
		t.Errorf("messages after adding buttons: %+v", msgs)
	}
	// Later edits of the draft's ref edit that message.
	if err := editEventually(t, e.ad, ref, core.Post{Text: "<b>done</b>"}); err != nil {
		t.Fatal(err)
	}
	if msgs := e.fake.Messages(1001); len(msgs) != 2 || msgs[1].Text != "<b>done</b>" || msgs[1].Markup != "" {
		t.Errorf("messages after editing the draft ref: %+v", msgs)
	}
}

func TestPromptOutcomeEditWaitsForBudget(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := t.Context()
	conv := core.ConversationKey{Platform: "telegram", Channel: "-100999"}
	prompt, err := e.ad.Send(ctx, conv, core.Post{Text: "allow?", Buttons: []core.Button{{Label: "Allow", Value: "t:a"}}})
	if err != nil {
		t.Fatal(err)
	}
	stream, err := e.ad.Send(ctx, conv, core.Post{Text: "s0"})
	if err != nil {
		t.Fatal(err)
	}
	// A streaming reply uses up the group's budget...
	for i := 1; ; i++ {
		err := e.ad.Edit(ctx, stream, core.Post{Text: "s" + strconv.Itoa(i), Priority: core.PriorityInterim})
		if _, limited := core.RetryAfter(err); limited {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	// ...yet the prompt's outcome edit, made once, waits and lands.
	if err := e.ad.Edit(ctx, prompt, core.Post{Text: "allow? ✅ Allowed"}); err != nil {
		t.Fatalf("outcome edit = %v; want it to wait for the budget", err)
	}
	m := e.fake.Messages(-100999)[0]
	if m.Markup != "" || !strings.Contains(m.Text, "Allowed") {
		t.Errorf("prompt after the outcome edit: %+v", m)
	}
	// Once its keyboard is gone, it is an ordinary message again: over
	// budget, an interim edit is refused at once for the caller to coalesce.
	if _, limited := core.RetryAfter(e.ad.Edit(ctx, prompt, core.Post{Text: "again", Priority: core.PriorityInterim})); !limited {
		t.Errorf("an edit over budget of a message without buttons was not refused")
	}
}

// A Telegram outage while the bridge starts does not stop it: Run
// identifies the bot once Telegram answers, then polls and hands messages
// over.
func TestOutageAtStartIsRetriedByRun(t *testing.T) {
	t.Parallel()
	fake := telegramtest.NewServer(token)
	defer fake.Close()
	outage := telegramtest.Fault{Code: 502, Description: "Bad Gateway"}
	fake.Fail("getMe", outage, outage)
	ad, err := telegram.New(telegram.Options{Token: token, APIURL: fake.URL, PollTimeout: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- ad.Run(ctx, rec) }()
	fake.Push(telegramtest.PrivateMessage(1, telegramtest.User(7, "Ann", "ann"), "hello after the outage"))
	select {
	case m := <-rec.msgs:
		if m.Text != "hello after the outage" || m.Conv.Workspace != strconv.Itoa(telegramtest.BotID) {
			t.Errorf("message = %+v; want the text, keyed by the bot's id", m)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("no message after the outage ended")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
	if n := len(fake.Calls("getMe")); n < 3 {
		t.Errorf("getMe calls = %d; want the failed ones retried", n)
	}
}
