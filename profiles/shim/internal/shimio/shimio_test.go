package shimio

import (
	"bytes"
	"encoding/json"
	"testing"
)

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
		var out bytes.Buffer
		e := NewEmitter(&out)
		for _, id := range tc.ids {
			e.SetSession(id)
		}
		if err := e.Partial("x", ""); err != nil {
			t.Fatal(err)
		}
		var ev struct {
			SessionID string `json:"session_id"`
		}
		if err := json.Unmarshal(out.Bytes(), &ev); err != nil {
			t.Fatalf("emitted %q: %v", out.String(), err)
		}
		if ev.SessionID != tc.want {
			t.Errorf("SetSession(%q…) → session_id %q, want %q", tc.ids, ev.SessionID, tc.want)
		}
	}
}
