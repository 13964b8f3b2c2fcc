package gemini

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/shim/internal/shimio"
	"github.com/agentbridge/agentbridge/shim/internal/shimtest"
)

// FuzzGeminiTranslate feeds arbitrary `gemini -o stream-json` output to
// the translator and checks what reaches the bridge.
func FuzzGeminiTranslate(f *testing.F) {
	shimtest.SeedRecordings(f, "*.txt",
		`{"type":"message","role":"assistant"}`,
		`{"type":"error","severity":"error"}`,
		`{"type":"result","status":"error","error":null,"stats":null}`,
		`{"type":"init","session_id":"a/b"}`)
	f.Fuzz(func(t *testing.T, data string) {
		var out bytes.Buffer
		tr := &translator{em: shimio.NewEmitter(&out), stderr: io.Discard}
		_ = shimio.ReadLines(strings.NewReader(data), 1<<16, tr.handle)
		shimtest.CheckEvents(t, out.Bytes())
		for _, line := range bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n")) {
			var ev struct{ Type string }
			if json.Unmarshal(line, &ev) == nil && ev.Type == "permission_request" {
				t.Fatalf("gemini has no approval channel, yet a permission request was sent: %s", line)
			}
		}
	})
}
