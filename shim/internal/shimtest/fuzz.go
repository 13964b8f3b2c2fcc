package shimtest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
)

// malformedSeeds are lines no CLI should write, seeded for every shim.
var malformedSeeds = []string{"", "{", "}", "null", "[]", "0", `"x"`, "\x00", "\xff\xfe", `{"type":null}`, `{"type":{}}`}

// SeedRecordings adds as fuzz seeds each line the recordings in testdata
// matching glob make the CLI write (their "<< " lines), one seed per line
// since the fuzzer minimizes large interesting inputs very slowly, then a
// few malformed lines, then extra.
func SeedRecordings(f *testing.F, glob string, extra ...string) {
	f.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", glob))
	if err != nil || len(files) == 0 {
		f.Fatalf("no recordings for %s: %v", glob, err)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "<< "); ok && len(rest) < 1000 {
				f.Add(rest)
			}
		}
	}
	for _, s := range malformedSeeds {
		f.Add(s)
	}
	for _, s := range extra {
		f.Add(s)
	}
}

// CheckEvents asserts that out, a shim's stdout, is AgentProc's closed
// vocabulary: JSON objects of the four event types (P-OUT-1), partials of
// role output or thinking (P-PART-2), at most one terminal event and
// nothing after it (P-RES-1, P-ERR-2), one session id at most (P-SID-4),
// and permission requests the bridge accepts (F-PERM-1): a request_id
// that is non-empty, without spaces or control characters and unique in
// the turn, a tool_name, an object input.
func CheckEvents(t testing.TB, out []byte) {
	t.Helper()
	ended := false
	sid := ""
	ids := map[string]bool{}
	for _, line := range bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var ev struct {
			Type      string          `json:"type"`
			Role      string          `json:"role"`
			RequestID *string         `json:"request_id"`
			ToolName  string          `json:"tool_name"`
			Input     json.RawMessage `json:"input"`
			SessionID string          `json:"session_id"`
		}
		if !bytes.HasPrefix(line, []byte("{")) || json.Unmarshal(line, &ev) != nil {
			t.Fatalf("event is not a JSON object: %q", line)
		}
		if ended {
			t.Fatalf("event after the terminal one: %s", line)
		}
		if ev.SessionID != "" {
			if sid != "" && ev.SessionID != sid {
				t.Fatalf("session id changed from %q: %s", sid, line)
			}
			sid = ev.SessionID
		}
		switch ev.Type {
		case "partial":
			if ev.Role != "" && ev.Role != core.RoleThinking {
				t.Fatalf("partial role %q", ev.Role)
			}
		case "result", "error":
			ended = true
		case "permission_request":
			if ev.RequestID == nil || !agentproc.ValidRequestID(*ev.RequestID) || ev.ToolName == "" || !bytes.HasPrefix(ev.Input, []byte("{")) {
				t.Fatalf("malformed permission_request: %s", line)
			}
			if ids[*ev.RequestID] {
				t.Fatalf("permission_request reuses request_id %q: %s", *ev.RequestID, line)
			}
			ids[*ev.RequestID] = true
		default:
			t.Fatalf("event type %q outside the vocabulary: %s", ev.Type, line)
		}
	}
}
