package claude

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/shim/internal/shimio"
	"github.com/agentbridge/agentbridge/shim/internal/shimtest"
)

// bufCloser is the CLI's stdin as a buffer.
type bufCloser struct{ bytes.Buffer }

func (*bufCloser) Close() error { return nil }

// FuzzClaudeTranslate feeds arbitrary claude stream-json stdout to a
// session, with permission on and off, answering each permission request
// as soon as it reaches the bridge (allow, deny, allow with updated_input
// in turn), then closes the bridge's channel. It checks what reaches the
// bridge (shimtest.CheckEvents; no permission requests with permission
// off) and that every line written to claude is a control_response object.
func FuzzClaudeTranslate(f *testing.F) {
	shimtest.SeedRecordings(f, "*.txt",
		`{"type":"control_request","request_id":"r 1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{}}}`,
		`{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","input":[]}}`,
		`{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":null}}`,
		`{"type":"control_request","request_id":"r1","request":{"subtype":"interrupt"}}`,
		`{"type":"control_cancel_request","request_id":"r1"}`,
		"{\"type\":\"control_request\",\"request_id\":\"r1\",\"request\":{\"subtype\":\"can_use_tool\",\"tool_name\":\"Bash\",\"input\":{}}}\n"+
			"{\"type\":\"control_request\",\"request_id\":\"r1\",\"request\":{\"subtype\":\"can_use_tool\",\"tool_name\":\"Bash\",\"input\":{}}}",
		`{"type":"stream_event","event":{"type":"content_block_delta","delta":null}}`,
		`{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":""}]}}`,
		`{"type":"result","is_error":true,"errors":[null,{},"",1]}`)
	f.Fuzz(func(t *testing.T, data string) {
		for _, perm := range []bool{true, false} {
			var out bytes.Buffer
			toClaude := &bufCloser{}
			s := newSession(claudeFlavor, claudeFlavor.cli, shimio.Turn{Type: "turn", Message: "hi", Permission: perm}, perm,
				shimio.NewEmitter(&out), shimio.NewStdinWriter(toClaude), io.Discard)
			read, asked := 0, 0
			_ = shimio.ReadLines(strings.NewReader(data), 1<<16, func(line []byte) error {
				_ = s.handle(line)
				// Answer what this line raised, as the bridge would.
				for _, ev := range bytes.Split(out.Bytes()[read:], []byte("\n")) {
					var req struct{ Type, RequestID string }
					if json.Unmarshal(ev, &req) != nil || req.Type != "permission_request" {
						continue
					}
					pr := shimio.PermissionResponse{Type: "permission_response", RequestID: req.RequestID, Behavior: "allow"}
					switch asked % 3 {
					case 1:
						pr.Behavior, pr.Message = "deny", "no"
					case 2:
						pr.UpdatedInput = json.RawMessage(`{"command":"true"}`)
					}
					asked++
					s.answer(pr)
				}
				read = out.Len()
				return nil
			})
			s.bridgeClosed()
			shimtest.CheckEvents(t, out.Bytes())
			if !perm && asked > 0 {
				t.Fatalf("permission off, yet %d permission requests reached the bridge:\n%s", asked, out.Bytes())
			}
			for _, line := range bytes.Split(bytes.TrimSpace(toClaude.Bytes()), []byte("\n")) {
				if len(line) == 0 {
					continue
				}
				var m struct {
					Type     string `json:"type"`
					Response struct {
						RequestID string `json:"request_id"`
					} `json:"response"`
				}
				if !bytes.HasPrefix(line, []byte("{")) || json.Unmarshal(line, &m) != nil {
					t.Fatalf("sent claude a line that is not a JSON object: %q", line)
				}
				if m.Type != "control_response" || m.Response.RequestID == "" {
					t.Fatalf("sent claude something other than a control_response to a request: %s", line)
				}
			}
		}
	})
}
