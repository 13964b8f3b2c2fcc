package codex

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/profiles/shim/internal/shimio"
)

// seedLines adds each line the recordings make codex write as a seed (one
// line each: the fuzzer minimizes large interesting inputs very slowly),
// plus a few malformed ones.
func seedLines(f *testing.F, glob string) {
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
	for _, s := range []string{"", "{", "null", "[]", `{"id":null,"method":""}`, `{"id":{},"result":1}`,
		`{"method":"item/completed","params":{"item":null}}`, `{"method":"turn/completed","params":{"turn":null}}`,
		`{"type":"item.completed","item":{"type":"agent_message","text":"\u0000"}}`} {
		f.Add(s)
	}
}

// checkEvents asserts the shim's output is AgentProc's closed vocabulary:
// JSON objects of the four event types (P-OUT), partial roles output or
// thinking, at most one terminal event and nothing after it (P-RES-1,
// P-ERR-2), well-formed permission requests (F-PERM-1).
func checkEvents(t *testing.T, out []byte) {
	t.Helper()
	ended := false
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
		}
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("event is not JSON: %q", line)
		}
		if ended {
			t.Fatalf("event after the terminal one: %s", line)
		}
		switch ev.Type {
		case "partial":
			if ev.Role != "" && ev.Role != "thinking" {
				t.Fatalf("partial role %q", ev.Role)
			}
		case "result", "error":
			ended = true
		case "permission_request":
			if ev.RequestID == nil || *ev.RequestID == "" || strings.ContainsAny(*ev.RequestID, " \t\r\n") || ev.ToolName == "" || !bytes.HasPrefix(ev.Input, []byte("{")) {
				t.Fatalf("malformed permission_request: %s", line)
			}
		default:
			t.Fatalf("event type %q outside the vocabulary: %s", ev.Type, line)
		}
	}
}

// FuzzExecTranslate feeds arbitrary `codex exec --json` output to the exec
// translator.
func FuzzExecTranslate(f *testing.F) {
	seedLines(f, "*.txt")
	f.Fuzz(func(t *testing.T, data string) {
		var out bytes.Buffer
		tr := &translator{em: shimio.NewEmitter(&out), stderr: io.Discard}
		_ = shimio.ReadLines(strings.NewReader(data), 1<<16, tr.handle)
		checkEvents(t, out.Bytes())
	})
}

type discardCloser struct{ bytes.Buffer }

func (*discardCloser) Close() error { return nil }

// FuzzAppServerTranslate feeds arbitrary app-server output to the
// app-server session, answering every permission request it raises, and
// checks both what reaches the bridge and that every line sent to codex
// is a JSON object.
func FuzzAppServerTranslate(f *testing.F) {
	seedLines(f, "as_*.txt")
	f.Fuzz(func(t *testing.T, data string) {
		var out bytes.Buffer
		toCodex := &discardCloser{}
		s := newServerSession(shimio.NewEmitter(&out), &rpcWriter{w: toCodex}, shimio.Turn{Type: "turn", Message: "hi", Permission: true}, io.Discard)
		_ = shimio.ReadLines(strings.NewReader(data), 1<<16, s.handle)
		sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
		for sc.Scan() {
			var ev shimio.PermissionResponse
			if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.RequestID != "" {
				s.answer(shimio.PermissionResponse{Type: "permission_response", RequestID: ev.RequestID, Behavior: "allow"})
			}
		}
		s.bridgeClosed()
		checkEvents(t, out.Bytes())
		for _, line := range bytes.Split(bytes.TrimSpace(toCodex.Bytes()), []byte("\n")) {
			var m map[string]any
			if len(line) > 0 && json.Unmarshal(line, &m) != nil {
				t.Fatalf("sent codex a line that is not a JSON object: %q", line)
			}
		}
	})
}
