package slack_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/slack"
	"github.com/agentbridge/agentbridge/adapters/slack/slacktest"
	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/core/engine"
	"github.com/agentbridge/agentbridge/internal/testagent"
	"github.com/agentbridge/agentbridge/store"
)

// bridge is the real engine, a real store and the adapter against a fake
// Slack, with the test binary as the agent.
type bridge struct {
	t    *testing.T
	fake *slacktest.Server
	eng  *engine.Engine
	st   *store.Store
	a    *slack.Adapter
	stop func()
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

const editInterval = 100 * time.Millisecond

func startBridge(t *testing.T, fake *slacktest.Server, dbPath string, tweak func(*slack.Options)) *bridge {
	t.Helper()
	return startBridgeWith(t, fake, dbPath, tweak, engine.PresenterSettings{})
}

// startBridgeWith is startBridge with the engine's presenter settings;
// profile, when given, changes the agent's profile.
func startBridgeWith(t *testing.T, fake *slacktest.Server, dbPath string, tweak func(*slack.Options), pres engine.PresenterSettings, profile ...func(*agentproc.Profile)) *bridge {
	t.Helper()
	st, err := store.Open(dbPath, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	prof := testProfile()
	for _, p := range profile {
		p(prof)
	}
	eng := engine.New(st, &engine.Settings{
		Platforms: map[string]engine.PlatformSettings{
			"slack": {Prefix: "!", AllowUsers: []string{"U1", "U2", "U3"}, Approvers: []string{"UBOSS"}},
		},
		Profiles:       map[string]*agentproc.Profile{"test": prof},
		DefaultProfile: "test",
		Presenter:      pres,
	}, engine.Options{TempDir: t.TempDir()})
	opts := options(fake)
	opts.Store = st
	opts.EditInterval = editInterval
	if tweak != nil {
		tweak(&opts)
	}
	a, err := slack.New(opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := eng.Handler(a)
	if err := eng.Recover(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, h) }()
	var once sync.Once
	b := &bridge{t: t, fake: fake, eng: eng, st: st, a: a}
	b.stop = func() {
		once.Do(func() {
			drain, cancelDrain := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancelDrain()
			eng.Shutdown(drain, 5*time.Second)
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
			st.Close()
		})
	}
	t.Cleanup(b.stop)
	waitFake(t, fake, "connected", func(s *slacktest.State) bool { return s.Connected() > 0 })
	return b
}

// reply waits for a bot message in thread containing sub and returns it.
func (b *bridge) reply(thread, sub string) slacktest.Message {
	b.t.Helper()
	var m slacktest.Message
	waitFake(b.t, b.fake, fmt.Sprintf("reply containing %q in %s", sub, thread), func(s *slacktest.State) bool {
		var ok bool
		m, ok = s.Message(thread, sub)
		return ok
	})
	return m
}

func newDB(t *testing.T) string { return filepath.Join(t.TempDir(), "bridge.db") }

// The agent's words come 150 ms apart, over many edit intervals: a loaded
// machine that delays the first post still leaves edits to stream.
func TestEndToEndStreamsInThreadAtCadence(t *testing.T) {
	t.Parallel()
	fake := newFake(t, slacktest.Options{})
	b := startBridge(t, fake, newDB(t), nil)
	fake.SendEvent("Ev1", mention("U1", "C1", "300.000001", "", "<@UBOT> slow:150"))
	m := b.reply("300.000001", "SLOW-DONE")
	if want := "w0 w1 w2 w3 w4 w5 w6 w7 SLOW-DONE"; m.Text != want {
		t.Errorf("final text %q; want %q", m.Text, want)
	}
	if m.Edits < 2 {
		t.Errorf("%d edits; want a streamed reply", m.Edits)
	}
	var edits []slacktest.Call
	for _, c := range fake.Calls("chat.update") {
		if c.Form.Get("ts") == m.TS {
			edits = append(edits, c)
		}
	}
	atCadence(t, "edits", edits)
	if len(fake.Calls("assistant.threads.setStatus")) == 0 {
		t.Error("no status shown while the turn ran")
	}
}

func TestEndToEndLongAnswerSplitsWithoutBreakingCode(t *testing.T) {
	t.Parallel()
	fake := newFake(t, slacktest.Options{})
	b := startBridge(t, fake, newDB(t), nil)
	fake.SendEvent("Ev1", mention("U1", "C1", "301.000001", "", "<@UBOT> long:400"))
	b.reply("301.000001", "END-OF-LONG")
	if err := b.eng.Idle(t.Context()); err != nil {
		t.Fatal(err)
	}
	var parts []slacktest.Message
	for _, m := range fake.Messages() {
		if m.ThreadTS == "301.000001" {
			parts = append(parts, m)
		}
	}
	if len(parts) < 3 {
		t.Fatalf("%d messages; want the 11k-character answer split in at least 3", len(parts))
	}
	lines := 0
	for i, p := range parts {
		if n := len([]rune(p.Text)); n > b.a.Limits().MaxText {
			t.Errorf("part %d has %d characters", i, n)
		}
		if n := strings.Count(p.Text, "```"); n%2 != 0 {
			t.Errorf("part %d has %d fences (a code block is cut open):\n%s", i, n, p.Text)
		}
		lines += strings.Count(p.Text, "of the long answer")
	}
	if lines != 400 {
		t.Errorf("%d lines across the parts; want 400", lines)
	}
}

func TestEndToEndApprovals(t *testing.T) {
	t.Parallel()
	fake := newFake(t, slacktest.Options{})
	b := startBridge(t, fake, newDB(t), nil)
	const thread = "302.000001"
	fake.SendEvent("Ev1", mention("U1", "C1", thread, "", "<@UBOT> perm"))
	prompt := b.reply(thread, "Permission needed")
	values := prompt.Buttons()
	if len(values) != 3 {
		t.Fatalf("prompt buttons %v; want Allow, Deny, Allow for this session", values)
	}
	// A stranger's press is refused privately and changes nothing.
	fake.Press("U3", "C1", thread, prompt.TS, values[0])
	waitFake(t, fake, "ephemeral refusal", func(s *slacktest.State) bool { return s.Calls("chat.postEphemeral") == 1 })
	eph := fake.Calls("chat.postEphemeral")[0].Form
	if eph.Get("user") != "U3" || !strings.Contains(eph.Get("text"), "Only the person who asked") {
		t.Errorf("refusal = %v", eph)
	}
	// The requester allows: the prompt shows the outcome without buttons,
	// and the agent gets the answer.
	fake.Press("U1", "C1", thread, prompt.TS, values[0])
	b.reply(thread, "answer=allow")
	waitFake(t, fake, "prompt updated", func(s *slacktest.State) bool {
		m, ok := s.Message(thread, "Permission needed")
		return ok && strings.Contains(m.Text, "Allowed by") && m.Blocks == ""
	})
	if n := len(fake.Calls("chat.postEphemeral")); n != 1 {
		t.Errorf("%d ephemeral messages; want only the stranger's", n)
	}
}

func TestEndToEndDuplicateMentionRunsOnce(t *testing.T) {
	t.Parallel()
	fake := newFake(t, slacktest.Options{})
	b := startBridge(t, fake, newDB(t), nil)
	const ts = "303.000001"
	// Slack sends a mention twice when the app subscribes to app_mention and
	// message.channels: different event ids, same channel and ts.
	fake.SendEvent("EvMention", mention("U1", "C1", ts, "", "<@UBOT> only once please"))
	fake.SendEvent("EvMessage", message("U1", "C1", "channel", ts, "", "<@UBOT> only once please"))
	b.reply(ts, "only once please")
	if err := b.eng.Idle(t.Context()); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range fake.Messages() {
		if m.ThreadTS == ts {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d replies in the thread; want 1 turn", n)
	}
}

// Concurrent threads share the workspace's chat.update budget: the fake
// answers 429 above its limit, and the adapter's budget keeps every stream
// under it while all still end with their full text.
func TestEndToEndConcurrentThreadsShareBudget(t *testing.T) {
	t.Parallel()
	fake := newFake(t, slacktest.Options{UpdateLimit: 6, UpdateWindow: time.Second})
	b := startBridge(t, fake, newDB(t), func(o *slack.Options) {
		o.EditsPerMinute, o.EditBurst = 180, 2 // at most 5 in any second
		o.EditInterval = 20 * time.Millisecond // per message; the budget is what binds
	})
	threads := []string{"304.000001", "304.000002", "304.000003", "304.000004"}
	for i, th := range threads {
		fake.SendEvent(fmt.Sprintf("Ev%d", i), mention("U1", "C1", th, "", "<@UBOT> slow:30"))
	}
	for _, th := range threads {
		m := b.reply(th, "SLOW-DONE")
		if !strings.HasPrefix(m.Text, "w0 w1") {
			t.Errorf("thread %s ends with %q", th, m.Text)
		}
	}
	for _, c := range fake.Calls("chat.update") {
		if c.Status == 429 {
			t.Errorf("chat.update got a 429 at %v: the budget let too many through", c.At)
		}
	}
}

// A session lives on across a restart: a reply in the thread without a
// mention still reaches the bridge, and the agent resumes its session.
func TestEndToEndSessionResumedAfterRestart(t *testing.T) {
	t.Parallel()
	fake := newFake(t, slacktest.Options{})
	db := newDB(t)
	const thread = "305.000001"
	b := startBridge(t, fake, db, nil)
	fake.SendEvent("Ev1", mention("U1", "C1", thread, "", "<@UBOT> remember me"))
	first := b.reply(thread, "remember me")
	if strings.Contains(first.Text, "resumed") {
		t.Fatalf("first turn resumed: %q", first.Text)
	}
	if err := b.eng.Idle(t.Context()); err != nil {
		t.Fatal(err)
	}
	b.stop()

	b2 := startBridge(t, fake, db, nil)
	fake.SendEvent("Ev2", message("U1", "C1", "channel", "305.000002", thread, "and again"))
	m := b2.reply(thread, "and again")
	if !strings.Contains(m.Text, "(resumed sess-") {
		t.Errorf("reply after restart %q; want the session resumed", m.Text)
	}
}

// A disconnect in the middle of a turn loses nothing: the running reply is
// finished, and a message sent while the socket was away arrives after the
// reconnect.
func TestEndToEndReconnectMidTurn(t *testing.T) {
	t.Parallel()
	fake := newFake(t, slacktest.Options{})
	b := startBridge(t, fake, newDB(t), nil)
	const thread = "306.000001"
	fake.SendEvent("Ev1", mention("U1", "C1", thread, "", "<@UBOT> slow:60"))
	b.reply(thread, "w0")
	fake.Disconnect("refresh_requested")
	fake.SendEvent("Ev2", mention("U2", "C2", "306.000009", "", "<@UBOT> sent during the reconnect"))
	b.reply(thread, "SLOW-DONE")
	b.reply("306.000009", "sent during the reconnect")
	if fake.Opens() < 2 {
		t.Errorf("%d connections; want a reconnect", fake.Opens())
	}
}

// With native streaming on, a mention's reply streams through
// chat.startStream / appendStream / stopStream at the edit cadence and ends
// with the full text and the usage footer, without chat.update. With it off,
// or outside a thread, the reply is posted and edited as before.
func TestEndToEndNativeStreaming(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		native     bool
		ev         map[string]any
		thread     string // where the reply goes
		wantStream bool
	}{
		{"native in a channel thread", true, mention("U1", "C1", "310.000001", "", "<@UBOT> slow:150"), "310.000001", true},
		{"native off", false, mention("U1", "C1", "311.000001", "", "<@UBOT> slow:150"), "311.000001", false},
		{"native in a DM without a thread", true, message("U1", "D7", "im", "312.000001", "", "slow:150"), "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFake(t, slacktest.Options{})
			b := startBridgeWith(t, fake, newDB(t), func(o *slack.Options) { o.NativeStreaming = tc.native },
				engine.PresenterSettings{UsageFooter: true})
			fake.SendEvent("Ev1", tc.ev)
			m := b.reply(tc.thread, "out tokens")
			if err := b.eng.Idle(t.Context()); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(m.Text, "w0 w1 w2 w3 w4 w5 w6 w7 SLOW-DONE") || !strings.Contains(m.Text, "12 in ") || !strings.Contains(m.Text, "34 out tokens") {
				t.Errorf("final text %q; want the whole answer and the usage footer", m.Text)
			}
			streams, updates := fake.Calls("chat.startStream"), fake.Calls("chat.update")
			if !tc.wantStream {
				if len(streams) != 0 || m.Streamed || len(updates) == 0 {
					t.Errorf("%d startStream and %d chat.update calls; want the reply posted and edited", len(streams), len(updates))
				}
				return
			}
			if !m.Streamed || m.Streaming {
				t.Errorf("reply %+v; want a stopped native stream", m)
			}
			if len(updates) != 0 {
				t.Errorf("%d chat.update calls; want none", len(updates))
			}
			if n := len(fake.Calls("chat.postMessage")); n != 0 {
				t.Errorf("%d chat.postMessage calls; want none", n)
			}
			if len(streams) != 1 || streams[0].Form.Get("recipient_user_id") != "U1" || streams[0].Form.Get("thread_ts") != tc.thread {
				t.Errorf("startStream calls %+v; want one in the thread for U1", streams)
			}
			appends := fake.Calls("chat.appendStream")
			if len(appends) < 2 {
				t.Errorf("%d appendStream calls; want the answer streamed", len(appends))
			}
			atCadence(t, "streaming calls", append(appends, fake.Calls("chat.stopStream")...))
		})
	}
}

// atCadence checks that calls came no faster than one per editInterval.
// The adapter paces when it sends, the fake sees when each call arrives,
// and on a loaded machine one call can arrive late and the next on time;
// so the check is over the whole run, which a burst still fails: n calls
// span at least n-1 intervals, less one arrival's lateness (bounded at
// 150 ms here).
func atCadence(t *testing.T, what string, calls []slacktest.Call) {
	t.Helper()
	if len(calls) < 2 {
		return
	}
	span := calls[len(calls)-1].At.Sub(calls[0].At)
	if want := time.Duration(len(calls)-1)*editInterval - 150*time.Millisecond; span < want {
		t.Errorf("%d %s in %v; at a cadence of %v they take at least %v", len(calls), what, span, editInterval, want)
	}
}

// Concurrent native streams share the workspace's Tier 4 budget: the fake
// answers 429 above its limit, and none arrives, while every reply ends
// whole.
func TestEndToEndNativeStreamsShareBudget(t *testing.T) {
	t.Parallel()
	fake := newFake(t, slacktest.Options{AppendLimit: 6, AppendWindow: time.Second})
	b := startBridge(t, fake, newDB(t), func(o *slack.Options) {
		o.NativeStreaming = true
		o.AppendsPerMinute, o.AppendBurst = 180, 2 // at most 5 in any second
		o.EditInterval = 20 * time.Millisecond
	})
	threads := []string{"313.000001", "313.000002", "313.000003", "313.000004"}
	for i, th := range threads {
		fake.SendEvent(fmt.Sprintf("Ev%d", i), mention("U1", "C1", th, "", "<@UBOT> slow:30"))
	}
	for _, th := range threads {
		m := b.reply(th, "SLOW-DONE")
		if m.Text != "w0 w1 w2 w3 w4 w5 w6 w7 SLOW-DONE" || !m.Streamed {
			t.Errorf("thread %s ends with %q (streamed %v)", th, m.Text, m.Streamed)
		}
	}
	for _, c := range fake.Calls("chat.appendStream") {
		if c.Status == 429 {
			t.Errorf("chat.appendStream got a 429 at %v: the budget let too many through", c.At)
		}
	}
}
