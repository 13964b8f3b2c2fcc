package engine_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/core/engine"
	"github.com/agentbridge/agentbridge/core/platformtest"
	"github.com/agentbridge/agentbridge/internal/testagent"
	"github.com/agentbridge/agentbridge/store"
)

// twoProfiles gives the harness a second profile, "other", running the same
// test agent: its session ids are its own.
func twoProfiles(s *engine.Settings) {
	s.Profiles["other"] = testProfile()
}

// session reads the conversation's default session from the real store.
func (h *harness) session() core.Session {
	h.t.Helper()
	sess, _, err := h.st.Session(h.t.Context(), conv, "default")
	if err != nil {
		h.t.Fatal(err)
	}
	return sess
}

// useProfile routes the conversation to profile, as a reload with another
// default_profile does.
func (h *harness) useProfile(profile string) {
	s := settings(h.prof)
	twoProfiles(s)
	s.DefaultProfile = profile
	h.eng.Reload(s)
}

// TestProfileChangeKeepsAnAgentSessionPerProfile: test → other → test in
// one conversation. An agent session id is resumed only by the profile
// whose agent made it; the change is said once; going back resumes.
func TestProfileChangeKeepsAnAgentSessionPerProfile(t *testing.T) {
	h := newHarness(t, "", twoProfiles)
	h.send(alice, "first")
	h.waitTextN("tokens", 1)
	h.idle()
	idTest := h.session().AgentID("test")
	if !strings.HasPrefix(idTest, "sess-") {
		t.Fatalf("session after the first turn = %+v", h.session())
	}

	h.useProfile("other")
	second := h.send(alice, "second")
	note := h.waitText("Profile changed")
	want := "🔀 Profile changed from test to other: starting a fresh session for other (the test session is kept for when you switch back)."
	if note.Post.Text != want || note.Post.ReplyTo != second {
		t.Errorf("notice = %q answering %q, want %q answering %q", note.Post.Text, note.Post.ReplyTo, want, second)
	}
	m := h.waitText("second")
	if strings.Contains(m.Post.Text, "resumed") {
		t.Errorf("the other profile's agent was given the test profile's session id: %q", m.Post.Text)
	}
	h.waitTextN("tokens", 2)
	h.idle()
	idOther := h.session().AgentID("other")
	if idOther == "" || idOther == idTest {
		t.Fatalf("sessions = %+v; want a separate id for other", h.session().Agents)
	}
	h.send(alice, "third")
	h.waitText("(resumed " + idOther + ") third")
	h.waitTextN("tokens", 3)
	h.idle()
	if n := h.count("fresh session"); n != 1 {
		t.Errorf("the fresh-session line was shown %d times, want once", n)
	}

	h.useProfile("test")
	h.send(alice, "fourth")
	h.waitText("🔀 Profile changed from other back to test: resuming the earlier test session.")
	h.waitText("(resumed " + idTest + ") fourth")
	h.waitTextN("tokens", 4)
	h.idle()
	got := h.session()
	if got.Agents["test"] != idTest || got.Agents["other"] != idOther || got.Profile != "test" || got.Turns != 4 {
		t.Errorf("session = %+v; want both ids kept, profile test, 4 turns", got)
	}
	h.send(alice, "/status")
	if st := h.waitText("Profile: test"); !strings.Contains(st.Post.Text, "agent session id "+idTest) {
		t.Errorf("/status = %q, want the test profile's id", st.Post.Text)
	}
}

// TestPlaceholderAfterTheProfileNotice: the profile-change notice is a
// message of its own, so the reply still gets its placeholder while the
// new profile's agent is silent.
func TestPlaceholderAfterTheProfileNotice(t *testing.T) {
	h := newHarness(t, "", func(s *engine.Settings) {
		twoProfiles(s)
		s.Presenter.PlaceholderDelay = 20 * time.Millisecond
	})
	h.send(alice, "first")
	h.waitTextN("tokens", 1)
	h.idle()
	s := settings(h.prof)
	twoProfiles(s)
	s.Presenter.PlaceholderDelay = 20 * time.Millisecond
	s.DefaultProfile = "other"
	h.eng.Reload(s)
	h.send(alice, "sleep:2000")
	h.waitText("Profile changed")
	h.waitText("thinking…")
	h.waitText("done")
}

// TestFailedTurnsStoreOnlyResumableIDs: a turn whose agent cannot start
// stores nothing, and a failed turn under one profile never touches the id
// of another (P-SID-5 keeps the failing agent's own id).
func TestFailedTurnsStoreOnlyResumableIDs(t *testing.T) {
	broken := testProfile()
	broken.Command = filepath.Join(t.TempDir(), "no-such-agent")
	h := newHarness(t, "", twoProfiles)
	h.send(alice, "first")
	h.waitTextN("tokens", 1)
	h.idle()
	idTest := h.session().AgentID("test")

	s := settings(h.prof)
	twoProfiles(s)
	s.Profiles["broken"] = broken
	s.DefaultProfile = "broken"
	h.eng.Reload(s)
	h.send(alice, "never runs")
	h.waitText("not found")
	h.idle()
	if got := h.session().Agents; len(got) != 1 || got["test"] != idTest {
		t.Errorf("after a start failure the ids are %v; want only test's %q", got, idTest)
	}

	h.useProfile("other")
	h.send(alice, "fail")
	h.waitText("upstream exploded")
	h.idle()
	got := h.session().Agents
	if got["test"] != idTest || !strings.HasPrefix(got["other"], "sess-") || got["other"] == idTest {
		t.Errorf("after other's failed turn the ids are %v; want test's kept and other's own", got)
	}
}

// TestFirstSessionIDIsSavedBeforeTheTurnEnds: P-SID-1 — the id is in the
// store while the agent still runs, so a crash mid-turn keeps it.
func TestFirstSessionIDIsSavedBeforeTheTurnEnds(t *testing.T) {
	h := newHarness(t, "", nil)
	h.send(alice, "hang")
	h.waitText("working")
	deadline := time.Now().Add(30 * time.Second)
	for h.session().AgentID("test") == "" {
		if time.Now().After(deadline) {
			t.Fatal("the running turn's session id was not saved")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The hang agent runs until stopped: the id was saved mid-turn.
	h.send(alice, "/stop")
	h.waitText("Stopped.")
}

// TestRecoverCleansUpAfterACrash: what a crashed bridge left — an agent
// group still running (leader and child), an orphaned CLI whose agent
// Pdeathsig killed, a half-written reply, a placeholder, an open prompt, a
// queued message — is cleaned up by the next start's Recover.
func TestRecoverCleansUpAfterACrash(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "bridge.db")
	live, liveChild := testagent.StartGroup(t)
	dead, orphan := testagent.StartGroup(t)
	deadGroup := agentproc.GroupOf(dead.Process.Pid)
	dead.Process.Kill()
	dead.Wait()
	if !testagent.Running(orphan) {
		t.Fatal("the orphan died with its parent; the test proves nothing")
	}

	// Refs "1", "2" and "3" are what seed posts, in order.
	ref := func(id string) core.MessageRef { return core.MessageRef{Conv: conv, ID: id} }
	const promptText = "🔐 Permission needed: Bash"
	st, err := store.Open(dbPath, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	for _, e := range []core.JournalEntry{
		{TurnID: "t1", Conv: conv, MessageID: "u1", StartedAt: at,
			Reply: core.Shown{Ref: ref("1"), Text: "half an answer", Plain: true},
			Agent: core.ProcessRef(agentproc.GroupOf(live.Process.Pid))},
		{TurnID: "t2", Conv: conv, MessageID: "u2", StartedAt: at.Add(time.Millisecond),
			Reply: core.Shown{Ref: ref("2"), Text: "thinking… (20 s)", Plain: true}, Placeholder: true,
			Prompts: []core.Shown{{Ref: ref("3"), Text: promptText}},
			Agent:   core.ProcessRef(deadGroup)},
		{TurnID: "t3", Conv: conv, MessageID: "u3", StartedAt: at.Add(2 * time.Millisecond)},
	} {
		if err := st.JournalPut(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	h := newSeededHarness(t, dbPath, nil, func(p *platformtest.Platform) {
		for _, post := range []core.Post{
			{Text: "half an answer", Plain: true},
			{Text: "thinking… (20 s)", Plain: true},
			{Text: promptText, Buttons: []core.Button{{Label: "Allow", Value: "tok:a"}, {Label: "Deny", Value: "tok:d"}}},
		} {
			if _, err := p.Send(t.Context(), conv, post); err != nil {
				t.Fatal(err)
			}
		}
	})
	live.Wait() // reaped here: the test is its parent, as the crashed bridge was
	for _, pid := range []int{live.Process.Pid, liveChild, orphan} {
		if testagent.Running(pid) {
			t.Errorf("process %d of an interrupted turn still runs after Recover", pid)
		}
	}
	msgs := h.plat.Messages(conv)
	if len(msgs) != 4 {
		t.Fatalf("messages after recovery = %q, want the 3 edited and one notice", h.plat.Texts(conv))
	}
	for i, want := range []string{
		"half an answer\n\n⚠️ The bridge restarted, so this answer was interrupted. Please send your message again.",
		"⚠️ The bridge restarted, so this answer was interrupted. Please send your message again.",
		promptText + "\n\n⌛ Expired: the bridge restarted before this request was answered.",
		"⚠️ The bridge restarted before answering your message. Please send it again.",
	} {
		if msgs[i].Post.Text != want {
			t.Errorf("message %d = %q, want %q", i+1, msgs[i].Post.Text, want)
		}
	}
	if len(msgs[2].Post.Buttons) != 0 {
		t.Errorf("the expired prompt still has buttons: %+v", msgs[2].Post.Buttons)
	}
	if msgs[3].Post.ReplyTo != "u3" {
		t.Errorf("the notice answers %q, want the queued message u3", msgs[3].Post.ReplyTo)
	}
	if left, _ := h.st.Journal(t.Context()); len(left) != 0 {
		t.Errorf("journal after recovery = %+v, want empty", left)
	}
}

// TestNoPlaceholderWhileAPromptWaits: the agent asks before the placeholder
// is due; while the prompt waits for a person no "thinking…" is posted, as
// if the agent were busy.
func TestNoPlaceholderWhileAPromptWaits(t *testing.T) {
	h := newHarness(t, "", func(s *engine.Settings) { s.Presenter.PlaceholderDelay = 20 * time.Millisecond })
	h.send(alice, "perm")
	prompt := h.waitText("Permission needed")
	// Only time shows that nothing happens: many placeholder delays pass.
	time.Sleep(500 * time.Millisecond)
	if n := h.count("thinking…"); n != 0 {
		t.Fatalf("a placeholder was posted under the open prompt: %q", h.plat.Texts(conv))
	}
	h.plat.Press(t.Context(), core.Action{Conv: conv, From: alice, Value: prompt.Post.Buttons[0].Value, Ref: prompt.Ref})
	h.waitText("answer=allow")
}
