package engine_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/core/engine"
	"github.com/agentbridge/agentbridge/core/platformtest"
	"github.com/agentbridge/agentbridge/core/render"
	"github.com/agentbridge/agentbridge/internal/testagent"
	"github.com/agentbridge/agentbridge/store"
)

var (
	conv  = core.ConversationKey{Platform: "fake", Workspace: "w", Channel: "c1", Thread: "t1"}
	alice = core.User{ID: "alice", Name: "Alice"}
	bob   = core.User{ID: "bob", Name: "Bob"}
	boss  = core.User{ID: "boss", Name: "Boss"}
)

// harness is a running engine with a fake platform, a real bbolt store and
// the test binary as its agent.
type harness struct {
	t       *testing.T
	eng     *engine.Engine
	plat    *platformtest.Platform
	handler core.Handler
	st      *store.Store
	dbPath  string
	prof    *agentproc.Profile
	logs    *logKeys
	cancel  context.CancelFunc
	done    chan struct{}
	nextID  atomic.Int64
}

func testProfile() *agentproc.Profile {
	return &agentproc.Profile{
		Name:    "test",
		Command: os.Args[0],
		Args:    []string{"-test.run=^$"},
		// The race detector sleeps 1s at exit by default; agents need not.
		Env:               map[string]string{testagent.Env: "1", "GORACE": "atexit_sleep_ms=0"},
		Timeout:           30 * time.Second,
		KillGrace:         300 * time.Millisecond,
		Streaming:         true,
		Permission:        true,
		PermissionTimeout: 20 * time.Second,
	}
}

func settings(prof *agentproc.Profile) *engine.Settings {
	return &engine.Settings{
		Platforms: map[string]engine.PlatformSettings{
			"fake": {AllowUsers: []string{"alice", "bob"}, Approvers: []string{"boss"}},
		},
		Profiles:       map[string]*agentproc.Profile{"test": prof},
		DefaultProfile: "test",
		QueueDepth:     2,
		Presenter:      engine.PresenterSettings{UsageFooter: true},
	}
}

func newHarness(t *testing.T, dbPath string, tweak func(*engine.Settings)) *harness {
	t.Helper()
	return newSeededHarness(t, dbPath, tweak, nil)
}

// newSeededHarness is newHarness with seed run on the new platform before
// Recover: what a previous bridge left on the chat.
func newSeededHarness(t *testing.T, dbPath string, tweak func(*engine.Settings), seed func(*platformtest.Platform)) *harness {
	t.Helper()
	return buildHarness(t, dbPath, tweak, seed, nil)
}

// buildHarness is newSeededHarness with options tweaked by opts, when set.
func buildHarness(t *testing.T, dbPath string, tweak func(*engine.Settings), seed func(*platformtest.Platform), opts func(*engine.Options)) *harness {
	t.Helper()
	if dbPath == "" {
		dbPath = filepath.Join(t.TempDir(), "bridge.db")
	}
	st, err := store.Open(dbPath, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, st: st, dbPath: dbPath, prof: testProfile(), logs: &logKeys{}, done: make(chan struct{})}
	s := settings(h.prof)
	if tweak != nil {
		tweak(s)
	}
	lim := platformtest.DefaultLimits
	lim.EditInterval = 20 * time.Millisecond
	lim.Dialect = render.Plain
	h.plat = platformtest.New("fake", lim)
	if seed != nil {
		seed(h.plat)
	}
	o := engine.Options{TempDir: t.TempDir(), Log: slog.New(logHandler{keys: h.logs})}
	if opts != nil {
		opts(&o)
	}
	h.eng = engine.New(st, s, o)
	handler := h.eng.Handler(h.plat)
	h.handler = handler
	if err := h.eng.Recover(t.Context()); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() {
		defer close(h.done)
		h.plat.Run(ctx, handler)
	}()
	<-h.plat.Running()
	t.Cleanup(h.close)
	return h
}

// close shuts the engine down and closes the store; safe to call twice.
func (h *harness) close() {
	select {
	case <-h.done:
		return
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h.eng.Shutdown(ctx, 5*time.Second)
	h.cancel()
	<-h.done
	h.st.Close()
}

func (h *harness) send(from core.User, text string) string {
	// Ids are unique across harnesses: a restarted bridge shares the store's dedup memory.
	id := fmt.Sprintf("%s-m%d", h.t.Name(), time.Now().UnixNano()+h.nextID.Add(1))
	h.plat.Deliver(h.t.Context(), core.Message{Conv: conv, ID: id, From: from, Text: text})
	return id
}

// waitText waits until some message in conv contains want, and returns it.
func (h *harness) waitText(want string) platformtest.Message {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.t.Context(), 60*time.Second)
	defer cancel()
	var found platformtest.Message
	ok := h.plat.Wait(ctx, func() bool {
		for _, m := range h.plat.Messages(conv) {
			if strings.Contains(m.Post.Text, want) {
				found = m
				return true
			}
		}
		return false
	})
	if !ok {
		h.t.Fatalf("no message contains %q; messages: %q", want, h.plat.Texts(conv))
	}
	return found
}

// idle waits until the engine runs nothing.
func (h *harness) idle() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.t.Context(), 60*time.Second)
	defer cancel()
	if err := h.eng.Idle(ctx); err != nil {
		h.t.Fatalf("engine not idle: %v; messages: %q", err, h.plat.Texts(conv))
	}
}

// waitJournal waits until the journal holds one entry and ok accepts it,
// and returns it.
func (h *harness) waitJournal(ok func(core.JournalEntry) bool) core.JournalEntry {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		entries, err := h.st.Journal(h.t.Context())
		if err != nil {
			h.t.Fatal(err)
		}
		if len(entries) == 1 && ok(entries[0]) {
			return entries[0]
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("journal = %+v; want one entry as the test expects", entries)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (h *harness) waitTextN(want string, n int) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.t.Context(), 60*time.Second)
	defer cancel()
	if !h.plat.Wait(ctx, func() bool { return h.count(want) >= n }) {
		h.t.Fatalf("want %d messages containing %q; messages: %q", n, want, h.plat.Texts(conv))
	}
}

func (h *harness) count(want string) int {
	n := 0
	for _, m := range h.plat.Messages(conv) {
		if strings.Contains(m.Post.Text, want) {
			n++
		}
	}
	return n
}

func TestTurnStreamsAndResumesSession(t *testing.T) {
	h := newHarness(t, "", nil)
	h.send(alice, "hello brave new world")
	m := h.waitText("12 in / 34 out tokens")
	if !strings.HasPrefix(m.Post.Text, "hello brave new world") {
		t.Fatalf("reply = %q, want the streamed words then the usage footer", m.Post.Text)
	}
	if m.Edits == 0 {
		t.Log("reply arrived in one post (the agent was faster than the cadence)")
	}
	// P-SID-1: the first session id is stored and sent back on the next turn.
	h.idle()
	sessions, err := h.st.Sessions(t.Context(), conv)
	if err != nil || len(sessions) != 1 || !strings.HasPrefix(sessions[0].AgentID("test"), "sess-") {
		t.Fatalf("sessions = %+v, %v; want one with the agent's id", sessions, err)
	}
	h.send(alice, "again")
	h.waitText("(resumed " + sessions[0].AgentID("test") + ") again")
}

func TestSessionSurvivesBridgeRestart(t *testing.T) {
	h := newHarness(t, "", nil)
	h.send(alice, "first")
	h.waitText("tokens")
	h.idle()
	sessions, _ := h.st.Sessions(t.Context(), conv)
	h.close()

	h2 := newHarness(t, h.dbPath, nil)
	h2.send(alice, "second")
	h2.waitText("(resumed " + sessions[0].AgentID("test") + ") second")
}

func TestDuplicateDeliveryRunsOnce(t *testing.T) {
	h := newHarness(t, "", nil)
	m := core.Message{Conv: conv, ID: "dup-1", From: alice, Text: "only once"}
	h.plat.Deliver(t.Context(), m)
	h.plat.Deliver(t.Context(), m)
	h.waitText("tokens")
	h.idle()
	if n := h.count("only once"); n != 1 {
		t.Fatalf("%d replies to one message delivered twice; want 1", n)
	}
}

func TestAccessDeniedGetsOneClearMessage(t *testing.T) {
	h := newHarness(t, "", nil)
	mallory := core.User{ID: "mallory"}
	h.send(mallory, "hello")
	h.waitText("not allowed")
	// /whoami works before access is granted: it is how users learn their id.
	h.send(mallory, "/whoami")
	h.waitText("fake user mallory")
	for _, c := range h.plat.CallsOf(platformtest.OpSend) {
		if strings.Contains(c.Post.Text, "hello") {
			t.Fatalf("an agent ran for a denied user: %q", c.Post.Text)
		}
	}
	if n := h.count("not allowed"); n != 1 {
		t.Errorf("%d denial messages, want 1", n)
	}
}

func TestQueueBusyAndStop(t *testing.T) {
	h := newHarness(t, "", nil) // queue depth 2
	h.send(alice, "hang")
	h.waitText("working")
	h.send(alice, "queued one")
	h.waitText("Queued — position 1")
	h.send(bob, "queued two")
	h.waitText("Queued — position 2")
	h.send(alice, "one too many")
	h.waitText("Busy")

	h.send(alice, "/status")
	h.waitText("Running for")
	h.send(alice, "/stop")
	h.waitText("also cancelled 2 queued")
	h.waitText("working\n\n⏹ Stopped.")
	h.waitTextN("Cancelled: /stop was sent", 2)
	h.idle()
	if n := h.count("queued one"); n != 1 { // only the user's own text in the notice? no: it never ran
		t.Logf("queued message text appears %d times", n)
	}
}

func TestStopKillsAgentThatIgnoresSIGTERM(t *testing.T) {
	h := newHarness(t, "", nil)
	h.send(alice, "ignore-term")
	h.waitText("working")
	start := time.Now()
	h.send(alice, "/stop")
	h.waitText("⏹ Stopped.")
	// D-STOP-1: SIGKILL after the grace (300ms), not never.
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("stop took %v", d)
	}
	h.send(alice, "next")
	h.waitText("next")
}

func TestQueuedTurnRunsAfterCurrent(t *testing.T) {
	h := newHarness(t, "", nil)
	h.send(alice, "sleep:300")
	h.send(alice, "after the sleep")
	h.waitText("Queued — position 1")
	h.waitText("after the sleep\n\n")
	msgs := h.plat.Texts(conv)
	iDone, iAfter := -1, -1
	for i, m := range msgs {
		if strings.HasPrefix(m, "done") {
			iDone = i
		}
		if strings.Contains(m, "after the sleep") && !strings.HasPrefix(m, "⏳") {
			iAfter = i
		}
	}
	if iDone < 0 || iAfter < iDone {
		t.Fatalf("replies out of order: %q", msgs)
	}
}

// TestRepliesNameTheMessageTheyAnswer: every message the engine sends
// first for a user's message — the reply, a queue notice, a permission
// prompt — carries that message's id (core.Post.ReplyTo), so adapters can
// show it as a reply.
func TestRepliesNameTheMessageTheyAnswer(t *testing.T) {
	h := newHarness(t, "", nil)
	first := h.send(alice, "sleep:300")
	second := h.send(alice, "after the sleep")
	h.waitText("after the sleep\n\n")
	third := h.send(alice, "perm")
	h.waitText("Permission needed")
	var got, wantIDs []string
	queued := []string{second, third} // the third waits behind the second's turn, which may still be ending
	final := map[string]string{}      // message id → its text after the edits
	for _, m := range h.plat.Messages(conv) {
		final[m.Ref.ID] = m.Post.Text
	}
	for _, c := range h.plat.CallsOf(platformtest.OpSend) {
		switch text := final[c.Ref.ID]; {
		case strings.HasPrefix(text, "⏳ Queued") && len(queued) > 0:
			wantIDs, queued = append(wantIDs, queued[0]), queued[1:]
		case strings.HasPrefix(text, "done"):
			wantIDs = append(wantIDs, first)
		case strings.Contains(text, "after the sleep"):
			wantIDs = append(wantIDs, second)
		case strings.Contains(text, "Permission needed"):
			wantIDs = append(wantIDs, third)
		default:
			t.Errorf("unexpected send %q", text)
			continue
		}
		got = append(got, c.Post.ReplyTo)
	}
	if !slices.Equal(got, wantIDs) || len(got) < 4 {
		t.Errorf("ReplyTo of the sends = %q, want %q; sends: %q", got, wantIDs, h.plat.Texts(conv))
	}
}

func TestPermissionAllowDenyAndStranger(t *testing.T) {
	h := newHarness(t, "", nil)
	h.send(alice, "perm")
	prompt := h.waitText("Permission needed")
	if len(prompt.Post.Buttons) != 3 {
		t.Fatalf("prompt buttons = %+v, want Allow / Deny / Allow for this session", prompt.Post.Buttons)
	}
	for _, b := range prompt.Post.Buttons {
		if len(b.Value) > 64 {
			t.Errorf("button value %q is over Telegram's 64 bytes", b.Value)
		}
	}
	if !strings.Contains(prompt.Post.Text, "echo ok > f.txt") {
		t.Errorf("prompt lacks the input preview: %q", prompt.Post.Text)
	}
	// D-PERM-2: a stranger's press is refused privately. Every press gets
	// exactly one Reply call ("" when there is nothing to say).
	replies := make(chan string, 10)
	reply := func(s string) { replies <- s }
	nextReply := func() string {
		t.Helper()
		select {
		case r := <-replies:
			return r
		case <-time.After(60 * time.Second):
			t.Fatal("no reply to the press")
			return ""
		}
	}
	h.plat.Press(t.Context(), core.Action{Conv: conv, From: bob, Value: prompt.Post.Buttons[0].Value, Ref: prompt.Ref, Reply: reply})
	if r := nextReply(); !strings.Contains(r, "Only the person who asked") {
		t.Fatalf("stranger got %q", r)
	}
	h.plat.Press(t.Context(), core.Action{Conv: conv, From: alice, Value: prompt.Post.Buttons[1].Value, Ref: prompt.Ref, Reply: reply})
	if r := nextReply(); r != "" {
		t.Errorf("the requester's press got %q, want the empty acknowledgement", r)
	}
	h.waitText("deny:denied by Alice")
	h.waitText("❌ Denied by Alice.")
	// Pressing again after the answer changes nothing.
	h.plat.Press(t.Context(), core.Action{Conv: conv, From: alice, Value: prompt.Post.Buttons[0].Value, Ref: prompt.Ref, Reply: reply})
	if r := nextReply(); !strings.Contains(r, "no longer waiting") {
		t.Errorf("late press got %q", r)
	}

	// An approver may answer someone else's request.
	h.send(alice, "perm")
	h.waitTextN("Permission needed", 2)
	p2 := h.plat.Messages(conv)
	var pending platformtest.Message
	for _, m := range p2 {
		if len(m.Post.Buttons) > 0 {
			pending = m
		}
	}
	h.plat.Press(t.Context(), core.Action{Conv: conv, From: boss, Value: pending.Post.Buttons[0].Value, Ref: pending.Ref})
	h.waitText("allow:")
	h.waitText("✅ Allowed by Boss.")
}

func TestPermissionAllowForSessionIsRemembered(t *testing.T) {
	h := newHarness(t, "", nil)
	h.send(alice, "perm")
	prompt := h.waitText("Permission needed")
	h.plat.Press(t.Context(), core.Action{Conv: conv, From: alice, Value: prompt.Post.Buttons[2].Value, Ref: prompt.Ref})
	h.waitText("Allowed for this session by Alice")
	h.waitTextN("allow:", 1)
	h.idle()
	// D-PERM-3: the next request for Bash in this session is allowed without a prompt.
	h.send(alice, "perm")
	h.waitTextN("allow:", 2)
	if n := h.count("Permission needed"); n != 1 {
		t.Errorf("%d prompts; the second request should have been answered from the grant", n)
	}
	// /new forgets the grant.
	h.idle()
	h.send(alice, "/new")
	h.waitText("Fresh session")
	h.send(alice, "perm")
	h.waitTextN("Permission needed", 2)
}

func TestPermissionTimeoutDenies(t *testing.T) {
	prof := testProfile()
	prof.PermissionTimeout = 300 * time.Millisecond
	h := newHarness(t, "", func(s *engine.Settings) { s.Profiles["test"] = prof })
	h.send(alice, "perm")
	h.waitText("No answer in time — denied.")
	h.waitText("deny:")
}

func TestAgentErrorShownAfterPartials(t *testing.T) {
	h := newHarness(t, "", nil)
	h.send(alice, "fail")
	m := h.waitText("upstream exploded")
	if !strings.HasPrefix(m.Post.Text, "partial before failing") {
		t.Fatalf("reply = %q; the partials must stay first, the error after", m.Post.Text)
	}
}

func TestSessionCommands(t *testing.T) {
	h := newHarness(t, "", nil)
	h.send(alice, "in default")
	h.waitText("tokens")
	h.idle()
	h.send(alice, "/session work")
	h.waitText("Switched to new session work.")
	h.send(alice, "in work")
	h.waitTextN("tokens", 2)
	h.idle() // the reply is posted before the session is saved
	h.send(alice, "/sessions")
	list := h.waitText("Sessions here:")
	if !strings.Contains(list.Post.Text, "▶ work — test, 1 turn(s), last ") || !strings.Contains(list.Post.Text, "  default — test, 1 turn(s), last ") {
		t.Errorf("/sessions = %q", list.Post.Text)
	}
	h.send(alice, "/session ../etc")
	h.waitText("Session names are")
	h.send(alice, "/help")
	help := h.waitText("/whoami — show your user id")
	if want := "/session [NAME] — switch to (or create) the session NAME; without NAME, show the active one"; !strings.Contains(help.Post.Text, want) {
		t.Errorf("/help lacks %q:\n%s", want, help.Post.Text)
	}
	// A required argument shows bare, an optional one in brackets.
	if want := "\n/forget NAME — "; !strings.Contains(help.Post.Text, want) {
		t.Errorf("/help lacks %q:\n%s", want, help.Post.Text)
	}
	for _, c := range core.Commands {
		if !strings.Contains(help.Post.Text, "\n/"+c.Name) {
			t.Errorf("/help lacks /%s:\n%s", c.Name, help.Post.Text)
		}
	}
	// "@bot sessions" (a bare command word addressed to the bot) is the
	// command on every platform.
	h.plat.Deliver(t.Context(), core.Message{Conv: conv, ID: t.Name() + "-addressed", From: alice, Text: "sessions", Addressed: true})
	h.waitTextN("Sessions here:", 2)
}

// TestLaneCommandAnsweredInOrder: a command that runs on an idle lane
// (/new) is answered before a command sent right after it (/session), as
// the intake handles a conversation's events in order; before, the lane's
// goroutine raced the intake and the second answer usually came first.
func TestLaneCommandAnsweredInOrder(t *testing.T) {
	h := newHarness(t, "", nil)
	for i := range 3 {
		h.send(alice, "/new")
		h.send(alice, "/session")
		h.waitTextN("Active session:", i+1)
		h.waitTextN("Fresh session started", i+1)
	}
	var order []string
	for _, m := range h.plat.Messages(conv) {
		switch {
		case strings.Contains(m.Post.Text, "Fresh session started"):
			order = append(order, "new")
		case strings.Contains(m.Post.Text, "Active session:"):
			order = append(order, "session")
		}
	}
	if want := []string{"new", "session", "new", "session", "new", "session"}; !slices.Equal(order, want) {
		t.Errorf("answers came in the order %v, want %v", order, want)
	}
}

// TestRestartMarksInterruptedTurns: a turn a crash interrupted is marked on
// restart, never run again — not by recovery, nor when the platform
// redelivers the message the crash left unacknowledged.
func TestRestartMarksInterruptedTurns(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "bridge.db")
	h := newHarness(t, dbPath, nil)
	hung := h.send(alice, "hang")
	h.waitText("working")
	// Simulate a crash: the journal still holds the running turn when the
	// store is reopened by a new bridge. The journal writes the shown reply
	// off the turn's path, so the platform shows "working" before the
	// entry does: wait for the entry to say so, as a crash now would find it.
	entry := h.waitJournal(func(e core.JournalEntry) bool {
		return e.Reply.Text == "working" && !e.Placeholder && e.Agent.PID != 0
	})
	h.send(alice, "/stop")
	h.waitText("Stopped.")
	h.close()

	// Put the entry back, as a crash would have left it.
	st, err := store.Open(dbPath, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.JournalPut(t.Context(), entry); err != nil {
		t.Fatal(err)
	}
	st.Close()

	h2 := newHarness(t, dbPath, nil)
	// The new platform has no such message to edit, so what the reply
	// showed is sent again with the notice, answering the interrupted message.
	const want = "working\n\n⚠️ The bridge restarted, so this answer was interrupted. Press ↻ Retry to run your message again."
	if notice := h2.waitText("The bridge restarted"); notice.Post.Text != want || notice.Post.ReplyTo != hung {
		t.Errorf("restart notice = %q replying to %q, want %q replying to the interrupted message %q",
			notice.Post.Text, notice.Post.ReplyTo, want, hung)
	}
	left, _ := h2.st.Journal(t.Context())
	if len(left) != 0 {
		t.Errorf("journal after recovery = %+v, want empty", left)
	}
	// The platform redelivers the message (its delivery was never
	// acknowledged); the intake handles the conversation's events in order,
	// so /status answers after the redelivery was dropped or became a turn.
	h2.plat.Deliver(t.Context(), core.Message{Conv: conv, ID: hung, From: alice, Text: "hang"})
	h2.send(alice, "/status")
	if status := h2.waitText("Session "); !strings.Contains(status.Post.Text, "Idle: no turn is running.") {
		t.Errorf("status after the redelivery = %q, want idle", status.Post.Text)
	}
	if texts := h2.plat.Texts(conv); len(texts) != 2 {
		t.Errorf("messages after restart = %q, want the notice and the status: the interrupted turn was re-run", texts)
	}
}

func TestAttachmentsArePassedAsLocalFiles(t *testing.T) {
	h := newHarness(t, "", nil)
	h.plat.AddFile("secret-token-url", []byte("file body"))
	h.plat.Deliver(t.Context(), core.Message{Conv: conv, ID: "att", From: alice, Text: "see file",
		Attachments: []core.Attachment{{Kind: "file", Name: "notes.txt", Source: "secret-token-url"}}})
	m := h.waitText("see file")
	if !strings.Contains(m.Post.Text, "[notes.txt: file body <nil>]") {
		t.Fatalf("agent did not read the downloaded file: %q", m.Post.Text)
	}
}

func TestShutdownStopsTurnsAfterTheDrainDeadline(t *testing.T) {
	h := newHarness(t, "", nil)
	h.send(alice, "hang")
	h.waitText("working")
	h.send(bob, "waiting behind it")
	h.waitText("Queued — position 1")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	shut := make(chan struct{})
	go func() {
		defer close(shut)
		h.eng.Shutdown(ctx, 5*time.Second)
	}()
	<-core.DrainSignal(h.handler)
	// While draining, a message the platform cannot hold is refused, once
	// per conversation; commands still work.
	h.send(alice, "during the drain")
	h.send(alice, "and again")
	h.send(alice, "/status")
	h.waitText("Running for")
	if n := h.count("not taking new messages"); n != 1 {
		t.Errorf("%d draining notices, want 1; messages: %q", n, h.plat.Texts(conv))
	}
	cancel() // the drain deadline
	// The running turn is stopped and says why; the queued one is answered.
	h.waitText("working\n\n⏹ Stopped: the bridge is shutting down.")
	h.waitText("Not run: the bridge is shutting down")
	<-shut
	if left, _ := h.st.Journal(t.Context()); len(left) != 0 {
		t.Errorf("journal after a clean shutdown = %+v, want empty", left)
	}
}

// TestShutdownLetsRunningTurnsFinish: a turn running when Shutdown begins
// may finish within the drain, and Shutdown waits for it. The turn waits on
// a permission prompt, so it is running until the test answers it, after
// the drain began; button presses are still handled while draining.
func TestShutdownLetsRunningTurnsFinish(t *testing.T) {
	h := newHarness(t, "", nil)
	h.send(alice, "perm")
	prompt := h.waitText("Permission needed")
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	shut := make(chan struct{})
	go func() {
		defer close(shut)
		h.eng.Shutdown(ctx, time.Second)
	}()
	<-core.DrainSignal(h.handler)
	select {
	case <-shut:
		t.Fatalf("Shutdown returned while a turn was running: %q", h.plat.Texts(conv))
	default:
	}
	h.plat.Press(t.Context(), core.Action{Conv: conv, From: alice, Value: prompt.Post.Buttons[0].Value, Ref: prompt.Ref})
	<-shut
	// Shutdown returned after the turn finished on its own within the drain.
	if !strings.Contains(strings.Join(h.plat.Texts(conv), "\n"), "answer=allow") {
		t.Fatalf("Shutdown returned before the running turn finished: %q", h.plat.Texts(conv))
	}
	if n := h.count("Stopped"); n != 0 {
		t.Errorf("a turn that finished within the drain was stopped: %q", h.plat.Texts(conv))
	}
}

func TestNoticesAndPromptsSurviveRateLimits(t *testing.T) {
	h := newHarness(t, "", nil)
	// The prompt's post and its outcome edit are one-off writes: rate
	// limits are waited out, not dropped.
	h.plat.RateLimit(platformtest.OpSend, 100*time.Millisecond, 2)
	h.send(alice, "perm")
	prompt := h.waitText("Permission needed")
	h.plat.RateLimit(platformtest.OpEdit, 100*time.Millisecond, 2)
	h.plat.Press(t.Context(), core.Action{Conv: conv, From: alice, Value: prompt.Post.Buttons[0].Value, Ref: prompt.Ref})
	h.waitText("✅ Allowed by Alice.")
	h.idle()
	h.plat.RateLimit(platformtest.OpSend, 100*time.Millisecond, 1)
	h.send(alice, "/help")
	h.waitText("/whoami — show your user id")
}

func TestDenyPromptsAnswersWaitingAndLaterRequests(t *testing.T) {
	h := newHarness(t, "", nil)
	h.send(alice, "perm")
	h.waitText("Permission needed")
	h.eng.DenyPrompts("fake", "nobody is here")
	h.waitText("deny:nobody is here")
	h.waitText("❌ Denied: nobody is here.")
	h.idle()
	// A later request is denied at once, without a prompt.
	h.send(alice, "perm")
	h.waitTextN("deny:nobody is here", 2)
	if n := h.count("Permission needed"); n != 1 {
		t.Errorf("%d prompts; after DenyPrompts none should be shown", n)
	}
}

// TestIdleTimeoutStopsASilentAgent: an agent that sends nothing for
// IdleTimeout is stopped (SIGTERM to its group), the reply says why, and
// the conversation takes the next message.
func TestIdleTimeoutStopsASilentAgent(t *testing.T) {
	h := newHarness(t, "", func(s *engine.Settings) { s.IdleTimeout = 500 * time.Millisecond })
	h.send(alice, "hang")
	h.waitText("⏹ Stopped: the agent sent nothing for 500ms (idle_timeout).")
	h.send(alice, "next one")
	h.waitText("next one")
}

// TestIdleTimeoutSparesActiveAgentsAndOpenPrompts: output more often than
// IdleTimeout keeps a turn alive however long it runs, and so does a
// permission prompt waiting for a person.
func TestIdleTimeoutSparesActiveAgentsAndOpenPrompts(t *testing.T) {
	// Partials 150 ms apart keep it alive past the 1 s timeout (8 of them,
	// 1.2 s in all), with a wide margin for a loaded machine.
	h := newHarness(t, "", func(s *engine.Settings) { s.IdleTimeout = time.Second })
	h.send(alice, "slow:150")
	h.waitText("SLOW-DONE")
	h.send(alice, "perm")
	prompt := h.waitText("Permission needed")
	// Only time shows that nothing happens: wait past the idle timeout
	// while the prompt is open.
	time.Sleep(2 * time.Second)
	h.plat.Press(t.Context(), core.Action{Conv: conv, From: alice, Value: prompt.Post.Buttons[0].Value, Ref: prompt.Ref})
	h.waitText("answer=allow")
	h.idle()
	if all := strings.Join(h.plat.Texts(conv), "\n"); strings.Contains(all, "Stopped") {
		t.Errorf("a turn was stopped for idleness: %q", h.plat.Texts(conv))
	}
}

// callIndex returns the index of the first call of op whose post text
// contains want, or -1.
func callIndex(calls []platformtest.Call, op platformtest.Op, want string) int {
	for i, c := range calls {
		if c.Op == op && c.Err == nil && strings.Contains(c.Post.Text, want) {
			return i
		}
	}
	return -1
}

// TestPromptComesAfterWhatTheAgentSaidFirst: text the agent streamed before
// asking is on the platform before the prompt, even when the reply's next
// edit is held back by the edit cadence; and a press's outcome is on the
// prompt before the agent's answer continues the reply.
func TestPromptComesAfterWhatTheAgentSaidFirst(t *testing.T) {
	h := newHarness(t, "", func(s *engine.Settings) { s.Presenter.MinEditInterval = 700 * time.Millisecond })
	h.send(alice, "say-perm")
	prompt := h.waitText("Permission needed")
	calls := h.plat.Calls()
	said, asked := callIndex(calls, platformtest.OpEdit, "then more"), callIndex(calls, platformtest.OpSend, "Permission needed")
	if said < 0 {
		said = callIndex(calls, platformtest.OpSend, "then more")
	}
	if said < 0 || said > asked {
		t.Fatalf("the prompt (call %d) came before the text said before it (call %d): %+v", asked, said, calls)
	}
	h.plat.Press(t.Context(), core.Action{Conv: conv, From: alice, Value: prompt.Post.Buttons[0].Value, Ref: prompt.Ref})
	h.waitText("answer=allow")
	calls = h.plat.Calls()
	outcome, answer := callIndex(calls, platformtest.OpEdit, "✅ Allowed by Alice."), callIndex(calls, platformtest.OpEdit, "answer=allow")
	if outcome < 0 || outcome > answer {
		t.Errorf("the answer's continuation (call %d) came before the prompt's outcome (call %d)", answer, outcome)
	}
	for _, c := range calls {
		if c.Op == platformtest.OpEdit && c.Ref == prompt.Ref && strings.Count(c.Post.Text, "Allowed") > 1 {
			t.Errorf("outcome shown twice: %q", c.Post.Text)
		}
	}
}

// TestInterruptPlatform: Ctrl-C in the terminal chat stops the running turn
// as an interrupt and cancels the queue, and the engine goes on.
func TestInterruptPlatform(t *testing.T) {
	h := newHarness(t, "", nil)
	if h.eng.InterruptPlatform("fake") {
		t.Error("InterruptPlatform with nothing running reported true")
	}
	h.send(alice, "hang")
	h.waitText("working")
	h.send(alice, "queued one")
	h.waitText("Queued — position 1")
	if h.eng.InterruptPlatform("other") {
		t.Error("InterruptPlatform of another platform reported true")
	}
	if !h.eng.InterruptPlatform("fake") {
		t.Fatal("InterruptPlatform with a running turn reported false")
	}
	h.waitText("working\n\n⏹ Stopped.")
	h.waitText("⏹ Cancelled: the running turn was interrupted before this message ran.")
	h.idle()
	h.send(alice, "still here")
	h.waitText("still here")
}

// TestMessageAnswerCarriesNotices: a message's Answer takes the notices
// answering it (a command's answer, the refusal to a stranger) instead of
// the platform's Send; when it declines, the notice is posted as usual.
func TestMessageAnswerCarriesNotices(t *testing.T) {
	h := newHarness(t, "", nil)
	answered := make(chan string, 4)
	var decline atomic.Bool
	deliver := func(from core.User, text string) {
		h.plat.Deliver(t.Context(), core.Message{Conv: conv, ID: h.t.Name() + "-" + text + from.ID, From: from, Text: text,
			Answer: func(_ context.Context, p core.Post) (core.MessageRef, bool) {
				if decline.Load() {
					return core.MessageRef{}, false
				}
				answered <- p.Text
				return core.MessageRef{Conv: conv, ID: "answer"}, true
			}})
	}
	waitAnswer := func(want string) {
		t.Helper()
		select {
		case got := <-answered:
			if !strings.Contains(got, want) {
				t.Fatalf("answered %q, want %q in it", got, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no answer containing %q", want)
		}
	}
	deliver(alice, "/status")
	waitAnswer("Idle")
	deliver(core.User{ID: "mallory"}, "hello")
	waitAnswer("not allowed")
	for _, c := range h.plat.CallsOf(platformtest.OpSend) {
		if strings.Contains(c.Post.Text, "Idle") || strings.Contains(c.Post.Text, "not allowed") {
			t.Fatalf("a notice that Answer took was posted too: %q", c.Post.Text)
		}
	}
	decline.Store(true)
	deliver(alice, "/sessions")
	h.waitText("Sessions here")
}
