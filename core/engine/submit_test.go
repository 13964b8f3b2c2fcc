package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/engine"
)

// submit starts a turn nobody typed in conv and returns its id and where
// its Result arrives.
func (h *harness) submit(s engine.Submission) (string, <-chan engine.Result) {
	h.t.Helper()
	res := make(chan engine.Result, 1)
	s.Done = func(r engine.Result) { res <- r }
	if s.Conv == (core.ConversationKey{}) {
		s.Conv = conv
	}
	id, err := h.eng.Submit(h.t.Context(), s)
	if err != nil {
		h.t.Fatal(err)
	}
	return id, res
}

func result(t *testing.T, res <-chan engine.Result) engine.Result {
	t.Helper()
	select {
	case r := <-res:
		return r
	case <-time.After(60 * time.Second):
		t.Fatal("no result")
		return engine.Result{}
	}
}

// A submitted turn streams into its conversation, returns the reply's
// text, and shares the conversation's session with chat messages.
func TestSubmittedTurnStreamsAndResumes(t *testing.T) {
	h := newHarness(t, "", nil)
	id, res := h.submit(engine.Submission{Text: "scheduled words here", Origin: engine.OriginSchedule, Name: "daily"})
	r := result(t, res)
	if r.TurnID != id || r.Status != "ok" || !strings.Contains(r.Reply, "scheduled words here") {
		t.Fatalf("result %+v; want ok with the reply, turn %s", r, id)
	}
	h.waitText("12 in / 34 out tokens")
	h.idle()
	sessions, err := h.st.Sessions(t.Context(), conv)
	if err != nil || len(sessions) != 1 {
		t.Fatalf("sessions %+v, %v", sessions, err)
	}
	agentID := sessions[0].AgentID("test")
	h.send(alice, "and now me")
	h.waitText("(resumed " + agentID + ") and now me")
}

// A named session is used without changing the conversation's active
// one, and is resumed by the next submission naming it.
func TestSubmittedTurnNamedSession(t *testing.T) {
	h := newHarness(t, "", nil)
	r := result(t, second(h.submit(engine.Submission{Text: "first", Session: "reports", Origin: engine.OriginTrigger})))
	if r.Status != "ok" {
		t.Fatalf("result %+v", r)
	}
	h.idle()
	sess, ok, err := h.st.Session(t.Context(), conv, "reports")
	if err != nil || !ok || sess.AgentID("test") == "" {
		t.Fatalf("session reports = %+v, %v, %v", sess, ok, err)
	}
	if active, _ := h.st.ActiveSession(t.Context(), conv); active != "" {
		t.Errorf("active session changed to %q", active)
	}
	r = result(t, second(h.submit(engine.Submission{Text: "second", Session: "reports", Origin: engine.OriginTrigger})))
	if !strings.Contains(r.Reply, "(resumed "+sess.AgentID("test")+") second") {
		t.Errorf("second reply %q; want it to resume %s", r.Reply, sess.AgentID("test"))
	}
}

func second[A, B any](_ A, b B) B { return b }

// A submitted turn that finds the conversation busy queues like a
// message; past the queue's depth it is refused, and says so.
func TestSubmittedTurnQueuesBehindRunningTurn(t *testing.T) {
	h := newHarness(t, "", nil) // queue depth 2
	h.send(alice, "hang")
	h.waitText("working")
	_, queued := h.submit(engine.Submission{Text: "after hang", Origin: engine.OriginSchedule, Name: "q"})
	h.waitText("Queued — position 1")
	h.send(bob, "filler")
	h.waitText("Queued — position 2")
	_, refused := h.submit(engine.Submission{Text: "too many", Origin: engine.OriginSchedule, Name: "q"})
	if r := result(t, refused); r.Status != "busy" {
		t.Errorf("over the depth: %+v; want busy", r)
	}
	h.send(alice, "/stop")
	if r := result(t, queued); r.Status != "cancelled" {
		t.Errorf("queued behind /stop: %+v; want cancelled", r)
	}
}

// A submitted turn's prompt can be answered by an approver only: there is
// no requester, not even a user whose id is empty.
func TestSubmittedTurnPromptGoesToApprovers(t *testing.T) {
	h := newHarness(t, "", nil)
	_, res := h.submit(engine.Submission{Text: "perm", Origin: engine.OriginSchedule, Name: "nightly"})
	prompt := h.waitText("Permission needed")
	if !strings.Contains(prompt.Post.Text, `schedule "nightly"`) || !strings.Contains(prompt.Post.Text, "only an approver") {
		t.Errorf("prompt %q; want it to name the schedule and its approvers", prompt.Post.Text)
	}
	replies := make(chan string, 4)
	for _, u := range []core.User{alice, {}} {
		h.plat.Press(t.Context(), core.Action{Conv: conv, From: u, Value: prompt.Post.Buttons[0].Value, Ref: prompt.Ref, Reply: func(s string) { replies <- s }})
		if r := <-replies; !strings.Contains(r, "Only the person who asked, or an approver") {
			t.Errorf("press by %+v got %q; want a refusal", u, r)
		}
	}
	h.plat.Press(t.Context(), core.Action{Conv: conv, From: boss, Value: prompt.Post.Buttons[0].Value, Ref: prompt.Ref})
	h.waitText("✅ Allowed by Boss.")
	if r := result(t, res); r.Status != "ok" {
		t.Errorf("result %+v", r)
	}
}

// Unanswered, it times out to deny.
func TestSubmittedTurnPromptTimesOutToDeny(t *testing.T) {
	prof := testProfile()
	prof.PermissionTimeout = 300 * time.Millisecond
	h := newHarness(t, "", func(s *engine.Settings) { s.Profiles["test"] = prof })
	_, res := h.submit(engine.Submission{Text: "perm", Origin: engine.OriginTrigger})
	h.waitText("No answer in time — denied.")
	if r := result(t, res); !strings.Contains(r.Reply, "deny:") {
		t.Errorf("result %+v; want the agent's deny", r)
	}
}

// A submission for a platform that is not served is refused at once; an
// unknown profile fails the turn with a notice.
func TestSubmitRefusals(t *testing.T) {
	h := newHarness(t, "", nil)
	if _, err := h.eng.Submit(t.Context(), engine.Submission{Conv: core.ConversationKey{Platform: "nope", Channel: "c"}, Text: "x"}); err == nil {
		t.Error("Submit to an unserved platform succeeded")
	}
	_, res := h.submit(engine.Submission{Text: "x", Profile: "missing", Origin: engine.OriginTrigger})
	if r := result(t, res); r.Status != "failed" {
		t.Errorf("unknown profile: %+v; want failed", r)
	}
	h.waitText(`profile "missing"`)
}

// /schedules lists what the Schedules option reports for the channel.
func TestSchedulesCommand(t *testing.T) {
	h := newHarness(t, "", nil)
	h.send(alice, "/schedules")
	h.waitText("Nothing is scheduled in this channel.")
}
