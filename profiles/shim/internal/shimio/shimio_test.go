package shimio

import "testing"

// TestSetSessionKeepsFirstResumableID: P-SID-4 (first valid id sticks) with
// the shim's resume rule: an id it could not pass back to the CLI is never
// reported to the bridge.
func TestSetSessionKeepsFirstResumableID(t *testing.T) {
	for _, tc := range []struct {
		ids  []string
		want string
	}{
		{[]string{"a1", "b2"}, "a1"},
		{[]string{"", "a1"}, "a1"},
		{[]string{"x/y", `x\y`, "x\x01y", "x y", "-flag", "ok"}, "ok"},
		{[]string{"bad\u0085id"}, ""},
	} {
		var e Emitter
		for _, id := range tc.ids {
			e.SetSession(id)
		}
		if got := e.Session(); got != tc.want {
			t.Errorf("SetSession(%q…) → %q, want %q", tc.ids, got, tc.want)
		}
	}
}
