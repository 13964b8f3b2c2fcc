package codex

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/shim/internal/shimio"
	"github.com/agentbridge/agentbridge/shim/internal/shimtest"
)

// malformed are codex-shaped lines no recording holds.
var malformed = []string{`{"id":null,"method":""}`, `{"id":{},"result":1}`,
	`{"method":"item/completed","params":{"item":null}}`, `{"method":"turn/completed","params":{"turn":null}}`,
	`{"type":"item.completed","item":{"type":"agent_message","text":"\u0000"}}`}

// FuzzExecTranslate feeds arbitrary `codex exec --json` output to the exec
// translator.
func FuzzExecTranslate(f *testing.F) {
	shimtest.SeedRecordings(f, "*.txt", malformed...)
	f.Fuzz(func(t *testing.T, data string) {
		var out bytes.Buffer
		tr := newTranslator(shimio.NewEmitter(&out), nil, io.Discard, "")
		_ = shimio.ReadLines(strings.NewReader(data), 1<<16, tr.handle)
		shimtest.CheckEvents(t, out.Bytes())
	})
}

type discardCloser struct{ bytes.Buffer }

func (*discardCloser) Close() error { return nil }

// FuzzAppServerTranslate feeds arbitrary app-server output to the
// app-server session, answering every permission request it raises, and
// checks both what reaches the bridge and that every line sent to codex
// is a JSON object.
func FuzzAppServerTranslate(f *testing.F) {
	shimtest.SeedRecordings(f, "as_*.txt", malformed...)
	f.Fuzz(func(t *testing.T, data string) {
		var out bytes.Buffer
		toCodex := &discardCloser{}
		s := newServerSession(shimio.NewEmitter(&out), nil, cli, shimio.NewStdinWriter(toCodex), shimio.Turn{Type: "turn", Message: "hi", Permission: true}, "", "untrusted", io.Discard)
		_ = shimio.ReadLines(strings.NewReader(data), 1<<16, s.handle)
		sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
		for sc.Scan() {
			var ev shimio.PermissionResponse
			if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.RequestID != "" {
				s.answer(shimio.PermissionResponse{Type: "permission_response", RequestID: ev.RequestID, Behavior: "allow"})
			}
		}
		s.bridgeClosed()
		shimtest.CheckEvents(t, out.Bytes())
		for _, line := range bytes.Split(bytes.TrimSpace(toCodex.Bytes()), []byte("\n")) {
			var m map[string]any
			if len(line) > 0 && json.Unmarshal(line, &m) != nil {
				t.Fatalf("sent codex a line that is not a JSON object: %q", line)
			}
		}
	})
}
