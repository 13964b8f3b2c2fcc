package telegram_test

import (
	"context"
	"encoding/json"
	"errors"
	"html"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/telegram"
	"github.com/agentbridge/agentbridge/adapters/telegram/telegramtest"
	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/core/engine"
	"github.com/agentbridge/agentbridge/internal/testagent"
	"github.com/agentbridge/agentbridge/store"
)

// cadence is the edit interval the end-to-end tests configure.
const cadence = 400 * time.Millisecond

// stack is the real bridge around the fake Bot API: store, engine,
// adapter, and agents that are real processes.
type stack struct {
	t      *testing.T
	fake   *telegramtest.Server
	st     *store.Store
	ad     *telegram.Adapter
	eng    *engine.Engine
	cancel context.CancelFunc
	done   chan error
	logs   *logBuf
	runLog string
}

// agentProfile runs this test binary as the agent, framed (every reply
// names its session and ends with "END") and logging each run to runLog,
// in runLog's directory (a test's own, never the package's).
func agentProfile(runLog string) *agentproc.Profile {
	return &agentproc.Profile{
		Name:              "test",
		Cwd:               filepath.Dir(runLog),
		Command:           os.Args[0],
		Args:              []string{"-test.run=^$"},
		Env:               map[string]string{testagent.Env: "1", testagent.FrameEnv: "1", testagent.LogEnv: runLog, "GORACE": "atexit_sleep_ms=0"},
		Timeout:           30 * time.Second,
		KillGrace:         300 * time.Millisecond,
		Streaming:         true,
		Permission:        true,
		PermissionTimeout: 20 * time.Second,
	}
}

// startStack starts the bridge on db (a fresh one when ""). wrap, if set,
// wraps the engine's handler.
func startStack(t *testing.T, fake *telegramtest.Server, db string, wrap func(core.Handler, context.CancelFunc) core.Handler, tweaks ...func(*telegram.Options)) *stack {
	t.Helper()
	if db == "" {
		db = filepath.Join(t.TempDir(), "bridge.db")
	}
	st, err := store.Open(db, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	logs := &logBuf{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts := telegram.Options{Token: token, APIURL: fake.URL, Store: st, PollTimeout: 5 * time.Second, EditInterval: cadence}
	for _, tw := range tweaks {
		tw(&opts)
	}
	ad, err := telegram.New(opts, log)
	if err != nil {
		t.Fatal(err)
	}
	runLog := filepath.Join(filepath.Dir(db), "runs.log")
	eng := engine.New(st, &engine.Settings{
		Platforms: map[string]engine.PlatformSettings{
			"telegram": {AllowUsers: []string{"1001"}, AllowChats: []string{strconv.FormatInt(group, 10)}},
		},
		Profiles:       map[string]*agentproc.Profile{"test": agentProfile(runLog)},
		DefaultProfile: "test",
	}, engine.Options{Log: log, TempDir: t.TempDir()})
	ctx, cancel := context.WithCancel(context.Background())
	var h core.Handler = eng.Handler(ad)
	if wrap != nil {
		h = wrap(h, cancel)
	}
	s := &stack{t: t, fake: fake, st: st, ad: ad, eng: eng, cancel: cancel, done: make(chan error, 1), logs: logs, runLog: runLog}
	go func() { s.done <- ad.Run(ctx, h) }()
	if err := eng.Recover(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.stop)
	return s
}

// stop shuts the bridge down like serve does; safe to call twice.
func (s *stack) stop() {
	if s.st == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.eng.Shutdown(ctx, 5*time.Second)
	s.cancel()
	if err := <-s.done; err != nil {
		s.t.Errorf("Run = %v; want nil after ctx end", err)
	}
	s.st.Close()
	s.st = nil
	if strings.Contains(s.logs.String(), "SECRET") {
		s.t.Errorf("token in logs:\n%s", s.logs.String())
	}
}

// waitMsg waits until a message in chat satisfies cond and returns it.
func waitMsg(t *testing.T, fake *telegramtest.Server, chat int64, cond func(telegramtest.Message) bool) telegramtest.Message {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		ch := fake.Changed()
		for _, m := range fake.Messages(chat) {
			if cond(m) {
				return m
			}
		}
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("timed out; messages in %d: %+v", chat, fake.Messages(chat))
		}
	}
}

func contains(s string) func(telegramtest.Message) bool {
	return func(m telegramtest.Message) bool { return strings.Contains(m.Text, s) }
}

// opsOn returns the times of sendMessage and editMessageText on message id.
func opsOn(fake *telegramtest.Server, chat int64, id int) []time.Time {
	var out []time.Time
	c, mid := strconv.FormatInt(chat, 10), strconv.Itoa(id)
	sends := 0
	for _, call := range fake.Calls("sendMessage", "editMessageText") {
		if call.Form.Get("chat_id") != c {
			continue
		}
		if call.Method == "editMessageText" && call.Form.Get("message_id") == mid {
			out = append(out, call.At)
		}
		if call.Method == "sendMessage" {
			sends++
		}
	}
	return out
}

func TestE2EStreamedReplyInDM(t *testing.T) {
	t.Parallel()
	fake := telegramtest.NewServer(token)
	t.Cleanup(fake.Close)
	s := startStack(t, fake, "", nil)
	fake.Push(telegramtest.PrivateMessage(1, alice, "stream:12"))
	final := waitMsg(t, fake, 1001, contains("END"))
	if !strings.Contains(final.Text, "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 w12 END") || final.ParseMode != "HTML" {
		t.Errorf("final reply = %q (%s)", final.Text, final.ParseMode)
	}
	edits := opsOn(fake, 1001, final.ID)
	if len(edits) < 1 {
		t.Fatalf("the reply was not streamed with edits")
	}
	// The send that created the message is the first op.
	var sentAt time.Time
	for _, c := range fake.Calls("sendMessage") {
		if c.Form.Get("chat_id") == "1001" {
			sentAt = c.At
			break
		}
	}
	ops := append([]time.Time{sentAt}, edits...)
	// The final text goes as soon as the chat's budget allows (not at the
	// cadence, which is for coalescing interim frames).
	for i := 1; i < len(ops)-1; i++ {
		// A little slack for the clock between the adapter and the fake.
		if gap := ops[i].Sub(ops[i-1]); gap < cadence-20*time.Millisecond {
			t.Errorf("edit %d came %v after the previous; cadence is %v", i, gap, cadence)
		}
	}
	if len(fake.Calls("sendChatAction")) == 0 {
		t.Errorf("no typing indicator")
	}
	s.stop()
}

var preRE = regexp.MustCompile(`(?s)<pre>(?:<code[^>]*>)?(.*?)(?:</code>)?</pre>`)

func TestE2ELongAnswerSplitsKeepingCodeBlocks(t *testing.T) {
	t.Parallel()
	fake := telegramtest.NewServer(token)
	t.Cleanup(fake.Close)
	startStack(t, fake, "", nil)
	const lines = 250 // about 12,000 characters
	fake.Push(telegramtest.PrivateMessage(1, alice, "code:"+strconv.Itoa(lines)))
	waitMsg(t, fake, 1001, contains("END"))
	msgs := fake.Messages(1001)
	if len(msgs) < 3 {
		t.Fatalf("got %d messages; want the answer split into at least 3", len(msgs))
	}
	var code []string
	for i, m := range msgs {
		blocks := preRE.FindAllStringSubmatch(m.Text, -1)
		if len(blocks) == 0 && !strings.Contains(m.Text, "END") && !strings.Contains(m.Text, "sess-") {
			t.Errorf("message %d has no complete code block: %.200q", i, m.Text)
		}
		for _, b := range blocks {
			code = append(code, strings.Split(strings.TrimRight(html.UnescapeString(b[1]), "\n"), "\n")...)
		}
	}
	if len(code) != lines {
		t.Fatalf("code lines across messages = %d; want %d", len(code), lines)
	}
	for i, l := range code {
		if want := "line " + leftPad(i+1) + `: fmt.Println("a < b && c > d")`; l != want {
			t.Fatalf("code line %d = %q; want %q", i, l, want)
		}
	}
}

func leftPad(n int) string { s := strconv.Itoa(n); return strings.Repeat("0", 4-len(s)) + s }

// buttonData returns the callback_data of the button labelled label.
func buttonData(t *testing.T, m telegramtest.Message, label string) string {
	t.Helper()
	var kb struct {
		InlineKeyboard [][]struct {
			Text         string `json:"text"`
			CallbackData string `json:"callback_data"`
		} `json:"inline_keyboard"`
	}
	if err := json.Unmarshal([]byte(m.Markup), &kb); err != nil {
		t.Fatalf("keyboard %q: %v", m.Markup, err)
	}
	for _, row := range kb.InlineKeyboard {
		for _, b := range row {
			if b.Text == label {
				if len(b.CallbackData) > 64 {
					t.Errorf("callback_data is %d bytes", len(b.CallbackData))
				}
				return b.CallbackData
			}
		}
	}
	t.Fatalf("no %q button in %s", label, m.Markup)
	return ""
}

func TestE2EPermissionPromptInGroup(t *testing.T) {
	t.Parallel()
	fake := telegramtest.NewServer(token)
	t.Cleanup(fake.Close)
	startStack(t, fake, "", nil)
	fake.Push(telegramtest.GroupMessage(group, 1, 0, alice, "@"+telegramtest.BotUsername+" perm"))
	prompt := waitMsg(t, fake, group, func(m telegramtest.Message) bool { return m.Markup != "" })
	if !strings.Contains(prompt.Text, "Permission needed") {
		t.Errorf("prompt = %q", prompt.Text)
	}
	allow := buttonData(t, prompt, "Allow")

	// A stranger's press is refused privately and changes nothing.
	fake.Push(telegramtest.CallbackQuery("cb-bob", bob, group, prompt.ID, 0, allow))
	waitCall(t, fake, func(c telegramtest.Call) bool {
		return c.Method == "answerCallbackQuery" && c.Form.Get("callback_query_id") == "cb-bob"
	}, func(c telegramtest.Call) {
		if !strings.Contains(c.Form.Get("text"), "Only the person who asked") {
			t.Errorf("refusal = %q", c.Form.Get("text"))
		}
	})
	// The requester's press is answered and allows the tool.
	fake.Push(telegramtest.CallbackQuery("cb-alice", alice, group, prompt.ID, 0, allow))
	waitMsg(t, fake, group, contains("answer=allow: END"))
	done := waitMsg(t, fake, group, func(m telegramtest.Message) bool { return m.ID == prompt.ID && m.Markup == "" })
	if !strings.Contains(done.Text, "Allowed by Alice") {
		t.Errorf("prompt after the answer = %q", done.Text)
	}
	waitCall(t, fake, func(c telegramtest.Call) bool {
		return c.Method == "answerCallbackQuery" && c.Form.Get("callback_query_id") == "cb-alice"
	}, nil)
}

func waitCall(t *testing.T, fake *telegramtest.Server, match func(telegramtest.Call) bool, check func(telegramtest.Call)) {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		ch := fake.Changed()
		for _, c := range fake.Calls() {
			if match(c) {
				if check != nil {
					check(c)
				}
				return
			}
		}
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("timed out waiting for a call; calls: %v", methods(fake.Calls()))
		}
	}
}

var sidRE = regexp.MustCompile(`(new|resumed) (sess-\d+)`)

func session(t *testing.T, m telegramtest.Message) (state, sid string) {
	t.Helper()
	g := sidRE.FindStringSubmatch(m.Text)
	if g == nil {
		t.Fatalf("no session in %q", m.Text)
	}
	return g[1], g[2]
}

func TestE2ESessionsResumeAcrossRestartAndTopics(t *testing.T) {
	t.Parallel()
	fake := telegramtest.NewServer(token)
	t.Cleanup(fake.Close)
	db := filepath.Join(t.TempDir(), "bridge.db")
	s := startStack(t, fake, db, nil)
	fake.Push(telegramtest.PrivateMessage(1, alice, "first"))
	state, dmSID := session(t, waitMsg(t, fake, 1001, contains("first END")))
	if state != "new" {
		t.Errorf("first turn: %s session", state)
	}
	fake.Push(telegramtest.PrivateMessage(2, alice, "second"))
	if state, sid := session(t, waitMsg(t, fake, 1001, contains("second END"))); state != "resumed" || sid != dmSID {
		t.Errorf("second turn: %s %s; want resumed %s", state, sid, dmSID)
	}

	// A forum topic is its own conversation with its own session, and the
	// reply goes to the topic.
	at := "@" + telegramtest.BotUsername + " "
	fake.Push(telegramtest.GroupMessage(group, 10, 55, alice, at+"topic-one"))
	m := waitMsg(t, fake, group, contains("topic-one END"))
	state, topicSID := session(t, m)
	if state != "new" || topicSID == dmSID || m.ThreadID != 55 {
		t.Errorf("topic turn: %s %s in thread %d; want a new session in thread 55", state, topicSID, m.ThreadID)
	}
	fake.Push(telegramtest.GroupMessage(group, 11, 56, alice, at+"other-topic"))
	if state, _ := session(t, waitMsg(t, fake, group, contains("other-topic END"))); state != "new" {
		t.Errorf("second topic shares a session")
	}

	s.stop()
	startStack(t, fake, db, nil)
	fake.Push(telegramtest.PrivateMessage(3, alice, "third"))
	if state, sid := session(t, waitMsg(t, fake, 1001, contains("third END"))); state != "resumed" || sid != dmSID {
		t.Errorf("after restart: %s %s; want resumed %s", state, sid, dmSID)
	}
	fake.Push(telegramtest.GroupMessage(group, 12, 55, alice, at+"topic-two"))
	m = waitMsg(t, fake, group, contains("topic-two END"))
	if state, sid := session(t, m); state != "resumed" || sid != topicSID || m.ThreadID != 55 {
		t.Errorf("topic after restart: %s %s in %d; want resumed %s in 55", state, sid, m.ThreadID, topicSID)
	}
}

func TestE2ERateLimitStormKeepsFinalText(t *testing.T) {
	t.Parallel()
	fake := telegramtest.NewServer(token)
	t.Cleanup(fake.Close)
	startStack(t, fake, "", nil)
	fake.Fail("editMessageText", telegramtest.RateLimit(1), telegramtest.RateLimit(1), telegramtest.RateLimit(1))
	fake.Fail("sendMessage", telegramtest.RateLimit(1))
	// Paced so that edits follow the first send: a 429 on the send is
	// the presenter's to wait out (Send does not retry), and it then
	// sends everything that arrived meanwhile.
	fake.Push(telegramtest.PrivateMessage(1, alice, "slow:400"))
	final := waitMsg(t, fake, 1001, contains("w7 SLOW-DONE"))
	if final.ParseMode != "HTML" {
		t.Errorf("final parse mode %q", final.ParseMode)
	}
	// Every 429 was waited out: no call came sooner than retry_after.
	calls := fake.Calls("sendMessage", "editMessageText")
	limited := 0
	for i := 1; i < len(calls); i++ {
		if f := calls[i-1].Fault; f != nil && f.Code == 429 {
			limited++
			if gap := calls[i].At.Sub(calls[i-1].At); gap < 950*time.Millisecond {
				t.Errorf("call %d came %v after a 429 asking for 1s", i, gap)
			}
		}
	}
	if limited != 4 {
		t.Errorf("%d calls were rate limited; want all 4 injected 429s used", limited)
	}
}

// crashBeforeCursor is the store as a process sees it that dies between
// handing updates to core and saving the offset: the cursor never lands.
type crashBeforeCursor struct{ *store.Store }

func (crashBeforeCursor) SetCursor(ctx context.Context, name, value string) error {
	return errors.New("simulated crash before the cursor was saved")
}

func TestE2ERedeliveryAfterRestartDoesNotRerun(t *testing.T) {
	t.Parallel()
	fake := telegramtest.NewServer(token)
	t.Cleanup(fake.Close)
	db := filepath.Join(t.TempDir(), "bridge.db")
	s := startStack(t, fake, db, nil, func(o *telegram.Options) { o.Store = crashBeforeCursor{o.Store.(*store.Store)} })
	id := fake.Push(telegramtest.PrivateMessage(1, alice, "once"))
	waitMsg(t, fake, 1001, contains("once END"))
	s.stop()
	if p := fake.Pending(); len(p) != 1 || p[0] != id {
		t.Fatalf("pending after the crash = %v; want the unconfirmed update %d", p, id)
	}
	before := len(fake.Messages(1001))

	s2 := startStack(t, fake, db, nil)
	// The update is delivered again and confirmed, but not run again.
	waitCall(t, fake, func(c telegramtest.Call) bool {
		return c.Method == "getUpdates" && c.Form.Get("offset") == strconv.Itoa(id+1)
	}, nil)
	if err := s2.eng.Idle(t.Context()); err != nil {
		t.Fatal(err)
	}
	s2.stop()
	runs, err := os.ReadFile(s.runLog)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(runs), "once\n"); got != 1 {
		t.Errorf("agent ran the message %d times; want 1", got)
	}
	if after := len(fake.Messages(1001)); after != before {
		t.Errorf("the redelivery produced %d more messages", after-before)
	}
}

// withDrafts turns drafts on with an idle limit far beyond the tests'
// waits: a finished reply must become a real message because the presenter
// says it is final (core.MessageFinalizer), not because the draft went quiet.
func withDrafts(o *telegram.Options) { o.Drafts, o.DraftIdle = true, time.Minute }

func TestE2EDraftStreamingInDM(t *testing.T) {
	t.Parallel()
	fake := telegramtest.NewServer(token)
	t.Cleanup(fake.Close)
	startStack(t, fake, "", nil, withDrafts)
	fake.Push(telegramtest.PrivateMessage(1, alice, "stream:12"))
	final := waitMsg(t, fake, 1001, contains("END"))
	if !strings.Contains(final.Text, "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 w12 END") {
		t.Errorf("final message = %q", final.Text)
	}
	drafts := fake.Calls("sendMessageDraft")
	if len(drafts) < 2 {
		t.Fatalf("%d sendMessageDraft calls; want the reply streamed as a draft", len(drafts))
	}
	for _, d := range drafts {
		if d.Form.Get("draft_id") != drafts[0].Form.Get("draft_id") || d.Form.Get("draft_id") == "0" {
			t.Errorf("draft ids %q and %q; want one non-zero id per reply", d.Form.Get("draft_id"), drafts[0].Form.Get("draft_id"))
		}
	}
	for i := 1; i < len(drafts); i++ {
		if gap := drafts[i].At.Sub(drafts[i-1].At); gap < cadence-20*time.Millisecond {
			t.Errorf("draft update %d came %v after the previous; cadence is %v", i, gap, cadence)
		}
	}
	// The draft was finished with one real message, after the last update.
	if msgs := fake.Messages(1001); len(msgs) != 1 || !msgs[0].Sent.After(drafts[len(drafts)-1].At) {
		t.Errorf("messages %+v; want one real message sent after the draft", msgs)
	}
}

func TestE2EDraftsUnsupportedFallBackToEdits(t *testing.T) {
	t.Parallel()
	fake := telegramtest.NewServer(token)
	t.Cleanup(fake.Close)
	startStack(t, fake, "", nil, withDrafts)
	fake.Fail("sendMessageDraft", telegramtest.Fault{Code: 404, Description: "Not Found: method not found"})
	fake.Push(telegramtest.PrivateMessage(1, alice, "stream:8"))
	final := waitMsg(t, fake, 1001, contains("w8 END"))
	if final.Edits == 0 {
		t.Errorf("final message was never edited; want streaming by edits after drafts failed")
	}
	if n := len(fake.Calls("sendMessageDraft")); n != 1 {
		t.Errorf("%d sendMessageDraft calls; want drafts off after the first failure", n)
	}
}

func TestE2ERejectedMarkupResentAsPlainText(t *testing.T) {
	t.Parallel()
	fake := telegramtest.NewServer(token)
	t.Cleanup(fake.Close)
	s := startStack(t, fake, "", nil)
	fake.Fail("sendMessage", telegramtest.Fault{Code: 400, Description: "Bad Request: can't parse entities: Unsupported start tag \"foo\" at byte offset 0"})
	fake.Push(telegramtest.PrivateMessage(1, alice, "**bold** words"))
	waitMsg(t, fake, 1001, contains("END"))
	if err := s.eng.Idle(t.Context()); err != nil {
		t.Fatal(err)
	}
	msgs := fake.Messages(1001)
	final := msgs[len(msgs)-1]
	if final.ParseMode != "" || !strings.Contains(final.Text, "bold") {
		t.Errorf("final = %q with parse_mode %q; want the reply as plain text", final.Text, final.ParseMode)
	}
}

func TestE2EPhotoWithoutCaption(t *testing.T) {
	t.Parallel()
	fake := telegramtest.NewServer(token)
	t.Cleanup(fake.Close)
	startStack(t, fake, "", nil)
	fake.AddFile("PHOTO-BIG", "photos/file_1.jpg", []byte("jpeg bytes"))
	upd := telegramtest.PrivateMessage(1, alice, "")
	msg := upd["message"].(map[string]any)
	delete(msg, "text")
	msg["photo"] = []any{
		map[string]any{"file_id": "PHOTO-SMALL", "file_unique_id": "s1", "width": 90, "height": 90, "file_size": 10},
		map[string]any{"file_id": "PHOTO-BIG", "file_unique_id": "b1", "width": 900, "height": 900, "file_size": 10},
	}
	fake.Push(upd)
	final := waitMsg(t, fake, 1001, contains("END"))
	if !strings.Contains(final.Text, "[photo-b1.jpg image/jpeg: jpeg bytes &lt;nil&gt;]") {
		t.Errorf("agent saw %q; want the largest photo as a local file", final.Text)
	}
	if strings.Contains(final.Text, "SECRET") || strings.Contains(final.Text, "PHOTO-BIG") {
		t.Errorf("a platform handle reached the agent: %q", final.Text)
	}
}

func TestE2ENoticesInDraftModeAreRealMessages(t *testing.T) {
	t.Parallel()
	fake := telegramtest.NewServer(token)
	t.Cleanup(fake.Close)
	startStack(t, fake, "", nil, withDrafts)
	fake.Push(telegramtest.PrivateMessage(1, alice, "/help"))
	help := waitMsg(t, fake, 1001, contains("Commands"))
	if help.ParseMode != "" {
		t.Errorf("help notice parse_mode %q; want plain", help.ParseMode)
	}
	if n := len(fake.Calls("sendMessageDraft")); n != 0 {
		t.Errorf("%d drafts for a notice; want none", n)
	}
}

// A long answer streamed as a draft: when it outgrows the message, the
// piece the user read becomes a real message as it was shown (at most a
// partly shown word moves on), never re-split shorter, and the answer goes
// on in the next message.
func TestE2EDraftFullPieceKeepsWhatWasShown(t *testing.T) {
	t.Parallel()
	fake := telegramtest.NewServer(token)
	t.Cleanup(fake.Close)
	startStack(t, fake, "", nil, withDrafts)
	fake.Push(telegramtest.PrivateMessage(1, alice, "essay"))
	waitMsg(t, fake, 1001, contains("The end."))
	msgs := fake.Messages(1001)
	if len(msgs) < 2 {
		t.Fatalf("%d messages; want the essay in at least two", len(msgs))
	}
	longest := map[string]int{} // draft id → longest text it showed
	for _, d := range fake.Calls("sendMessageDraft") {
		id, n := d.Form.Get("draft_id"), len(d.Form.Get("text"))
		if n < longest[id]-20 {
			t.Errorf("draft %s went from %d to %d characters: text the user read vanished", id, longest[id], n)
		}
		longest[id] = max(longest[id], n)
	}
	if first := len(msgs[0].Text); first < longest["1"]-20 {
		t.Errorf("the first message has %d characters; its draft showed %d", first, longest["1"])
	}
	if !strings.Contains(msgs[0].Text, "Paragraph 0:") || strings.Contains(msgs[1].Text, "Paragraph 0:") {
		t.Errorf("messages start %.40q, %.40q", msgs[0].Text, msgs[1].Text)
	}
}
