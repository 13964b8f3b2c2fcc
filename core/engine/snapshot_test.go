package engine_test

import (
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/core/engine"
)

// TestFailures: a turn whose agent fails and one routed to a profile that
// is not configured are listed, newest first, with how they failed; a
// turn that succeeds is not.
func TestFailures(t *testing.T) {
	h := newHarness(t, "", nil)
	h.send(alice, "hello")
	h.waitText("hello")
	h.send(alice, "fail")
	h.waitText("partial before failing")
	eventually := func(n int) []engine.Failure {
		t.Helper()
		var f []engine.Failure
		h.plat.Wait(t.Context(), func() bool { f = h.eng.Failures(); return len(f) >= n })
		return f
	}
	f := eventually(1)
	if len(f) != 1 || f[0].Kind != "error" || f[0].From.ID != "alice" || f[0].Profile != "test" || f[0].Error == "" || f[0].MsgID == "" {
		t.Fatalf("failures %+v; want the failed turn", f)
	}
	h.eng.Reload(func() *engine.Settings { s := settings(h.prof); s.DefaultProfile = "gone"; return s }())
	h.send(alice, "anyone?")
	h.waitText("not configured")
	f = eventually(2)
	if f[0].Kind != "start_failed" || !strings.Contains(f[0].Error, `"gone"`) || f[1].Kind != "error" {
		t.Errorf("failures %+v; want the unrouted turn first, start_failed", f)
	}
}
