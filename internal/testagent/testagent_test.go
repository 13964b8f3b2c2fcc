package testagent_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge/internal/testagent"
)

// reply is what one run of the agent said.
type reply struct {
	Status int
	Text   string   // the partials, joined
	Events []string // event types in order
	SIDs   []string // distinct session ids
	Last   map[string]any
}

// play runs the agent on the given stdin lines.
func play(t *testing.T, lines ...string) reply {
	t.Helper()
	var in string
	if len(lines) > 0 {
		in = strings.Join(lines, "\n") + "\n"
	}
	var out bytes.Buffer
	status := testagent.Run(strings.NewReader(in), &out)
	r := reply{Status: status}
	dec := json.NewDecoder(&out)
	for dec.More() {
		var ev map[string]any
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("event: %v; output %q", err, out.String())
		}
		typ, _ := ev["type"].(string)
		r.Events = append(r.Events, typ)
		if typ == "partial" {
			r.Text += ev["text"].(string)
		}
		if sid, _ := ev["session_id"].(string); len(r.SIDs) == 0 || r.SIDs[len(r.SIDs)-1] != sid {
			r.SIDs = append(r.SIDs, sid)
		}
		r.Last = ev
	}
	return r
}

func turn(msg, sid string) string {
	b, _ := json.Marshal(map[string]any{"message": msg, "session_id": sid})
	return string(b)
}

func TestScripts(t *testing.T) {
	newSID := fmt.Sprintf("sess-%d", os.Getpid())
	tests := []struct {
		name  string
		lines []string
		frame bool
		want  reply
	}{
		{"echo in a new session", []string{turn("hello  brave\nworld", "")}, false,
			reply{Text: "hello brave world", Events: []string{"partial", "partial", "partial", "result"}, SIDs: []string{newSID}}},
		{"echo in a resumed session", []string{turn("again", "s-9")}, false,
			reply{Text: "(resumed s-9) again", Events: []string{"partial", "partial", "result"}, SIDs: []string{"s-9"}}},
		{"framed new", []string{turn("first", "")}, true,
			reply{Text: "new " + newSID + "\n\nfirst END", Events: []string{"partial", "partial", "partial", "result"}, SIDs: []string{newSID}}},
		{"framed resumed", []string{turn("second", "s-9")}, true,
			reply{Text: "resumed s-9\n\nsecond END", Events: []string{"partial", "partial", "partial", "result"}, SIDs: []string{"s-9"}}},
		{"permission allowed", []string{turn("perm", "s-1"), `{"type":"permission_response","request_id":"r1","behavior":"allow","message":"ok"}`}, false,
			reply{Text: "answer=allow:ok", Events: []string{"permission_request", "partial", "result"}, SIDs: []string{"s-1"}}},
		{"permission unanswered", []string{turn("perm", "s-1")}, false,
			reply{Text: "stdin closed", Events: []string{"permission_request", "partial"}, SIDs: []string{"s-1"}}},
		{"fail", []string{turn("fail", "s-1")}, false,
			reply{Status: 1, Text: "partial before failing", Events: []string{"partial", "error"}, SIDs: []string{"s-1"}}},
		{"sleep", []string{turn("sleep:1", "")}, false,
			reply{Text: "", Events: []string{"result"}, SIDs: []string{newSID}}},
		{"slow", []string{turn("slow:1", "")}, false,
			reply{Text: "w0 w1 w2 w3 w4 w5 w6 w7 SLOW-DONE", Events: []string{"partial", "partial", "partial", "partial", "partial", "partial", "partial", "partial", "partial", "result"}, SIDs: []string{newSID}}},
		{"stream framed", []string{turn("stream:3", "")}, true,
			reply{Text: "new " + newSID + "\n\nw1 w2 w3 END", Events: []string{"partial", "partial", "partial", "partial", "partial", "result"}, SIDs: []string{newSID}}},
		{"long", []string{turn("long:2", "")}, false,
			reply{Text: "Here:\n\n```\nline 0000 of the long answer\nline 0001 of the long answer\n```\n\nEND-OF-LONG", Events: []string{"partial", "partial", "partial", "partial", "result"}, SIDs: []string{newSID}}},
		{"code", []string{turn("code:2", "")}, false,
			reply{Text: "```go\nline 0001: fmt.Println(\"a < b && c > d\")\nline 0002: fmt.Println(\"a < b && c > d\")\n```\n\n", Events: []string{"partial", "result"}, SIDs: []string{newSID}}},
		{"no turn", nil, false, reply{Status: 3}},
		{"bad turn", []string{"{"}, false, reply{Status: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.frame {
				t.Setenv(testagent.FrameEnv, "1")
			}
			got := play(t, tt.lines...)
			got.Last = nil
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("reply (-want +got):\n%s", d)
			}
		})
	}
}

func TestResultReportsUsage(t *testing.T) {
	got := play(t, turn("hi", ""))
	want := map[string]any{"input_tokens": 12.0, "output_tokens": 34.0}
	if d := cmp.Diff(want, got.Last["usage"]); d != "" {
		t.Errorf("usage (-want +got):\n%s", d)
	}
}

func TestEssayStreamsWhole(t *testing.T) {
	got := play(t, turn("essay", ""))
	if got.Text != testagent.Essay() || len(got.Text) < 2000 || strings.Count(got.Text, "```") != 2 {
		t.Errorf("essay streamed %d characters, want Essay (%d)", len(got.Text), len(testagent.Essay()))
	}
}

func TestAttachmentsAreRead(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(path, []byte("body"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"message": "see", "attachments": []map[string]any{
		{"kind": "file", "url": "file://" + path, "name": "a.txt", "mime": "text/plain"},
		{"kind": "file", "url": "file://" + filepath.Join(dir, "gone"), "name": "gone"},
	}})
	got := play(t, string(b))
	want := "[a.txt text/plain: body <nil>] [gone:  open " + filepath.Join(dir, "gone") + ": no such file or directory] see"
	if got.Text != want {
		t.Errorf("text = %q, want %q", got.Text, want)
	}
}

func TestRunLog(t *testing.T) {
	log := filepath.Join(t.TempDir(), "runs.log")
	t.Setenv(testagent.LogEnv, log)
	play(t, turn("one", ""))
	play(t, turn("two words", ""))
	data, err := os.ReadFile(log)
	if err != nil || string(data) != "one\ntwo words\n" {
		t.Errorf("run log = %q, %v; want both messages", data, err)
	}
}
