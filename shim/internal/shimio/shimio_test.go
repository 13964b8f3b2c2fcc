package shimio

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

const (
	uuid1 = "1dbc0ce2-76e2-43aa-93a6-951aacb4a03c"
	uuid2 = "01A229D3-4374-7CF3-9613-535264693A9E"
)

// TestSetSessionKeepsFirstResumableID: P-SID-4 (first valid id sticks) with
// the shim's resume rule: an id it could not pass back to the CLI is never
// reported to the bridge.
func TestSetSessionKeepsFirstResumableID(t *testing.T) {
	for _, tc := range []struct {
		ids  []string
		want string
	}{
		{[]string{uuid1, uuid2}, uuid1},
		{[]string{"", uuid2}, uuid2},
		{[]string{"x/y", "-" + uuid1[1:], uuid1 + " ", "demo-485bc65220c3", "latest", "1", uuid1}, uuid1},
		{[]string{"1dbc0ce2-76e2-43aa-93a6-951aacb4a03g", "1dbc0ce2_76e2_43aa_93a6_951aacb4a03c"}, ""},
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

func events(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		out = append(out, m)
	}
	return out
}

// TestRestartedNotice: the resume notice is one output partial, and the
// result repeats it; when nothing else was streamed the result text is
// streamed too, since a streamed reply never shows result.text (P-RES-2).
func TestRestartedNotice(t *testing.T) {
	var out bytes.Buffer
	e := NewEmitter(&out)
	_ = e.Restarted()
	_ = e.Restarted() // once only
	_ = e.Partial("thinking…", "thinking")
	e.SetSession(uuid1)
	_ = e.Result("The answer.", nil)
	want := []map[string]any{
		{"type": "partial", "text": ResumeNotice + "\n\n"},
		{"type": "partial", "role": "thinking", "text": "thinking…"},
		{"type": "partial", "text": "The answer.", "session_id": uuid1},
		{"type": "result", "text": ResumeNotice + "\n\nThe answer.", "session_id": uuid1},
	}
	if diff := cmp.Diff(want, events(t, out.Bytes())); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestToolLine: one short, safe line per tool call (issue 10).
func TestToolLine(t *testing.T) {
	for _, tc := range []struct{ name, detail, want string }{
		{"Bash", "ls -la", "🔧 Bash: ls -la\n"},
		{"Write", "notes.md", "✏️ Write: notes.md\n"},
		{"write_file", "", "✏️ write_file\n"},
		{"Bash", "echo one\necho\ttwo\r\n\x1b[31mred\x1b[0m", "🔧 Bash: echo one echo two [31mred [0m\n"},
		// Mentions stay as written: the bridge defuses them per platform.
		{"Bash", "echo @everyone <@U123> @here", "🔧 Bash: echo @everyone <@U123> @here\n"},
		{"Bash", "a\u202eb\u200bc", "🔧 Bash: a b c\n"},
		{"Bash", strings.Repeat("x", 300), "🔧 Bash: " + strings.Repeat("x", 100) + "…\n"},
		{"", "ls", ""},
		{" \n", "ls", ""},
	} {
		if got := ToolLine(tc.name, tc.detail); got != tc.want {
			t.Errorf("ToolLine(%q, %q) = %q, want %q", tc.name, tc.detail, got, tc.want)
		}
	}
}

func TestToolDetail(t *testing.T) {
	for _, tc := range []struct{ input, want string }{
		{`{"command":"ls -la","description":"list"}`, "ls -la"},
		{`{"file_path":"/w/notes.md","content":"…"}`, "/w/notes.md"},
		{`{"command":["bash","-lc","ls"]}`, "bash -lc ls"},
		{`{"pattern":"TODO","path":"src"}`, "src"},
		{`{"x":1}`, `{"x":1}`},
		{`{}`, ""},
		{`[1]`, ""},
		{``, ""},
	} {
		if got := ToolDetail(json.RawMessage(tc.input)); got != tc.want {
			t.Errorf("ToolDetail(%s) = %q, want %q", tc.input, got, tc.want)
		}
	}
}

// A tool line after thinking that did not end its line starts a new one.
func TestToolAfterThinking(t *testing.T) {
	var out bytes.Buffer
	e := NewEmitter(&out)
	_ = e.Partial("Let me look.", "thinking")
	_ = e.Tool("Read", `a.go`)
	_ = e.Tool("Bash", `go test`)
	got := events(t, out.Bytes())
	if got[1]["text"] != "\n🔧 Read: a.go\n" || got[2]["text"] != "🔧 Bash: go test\n" || got[2]["role"] != "thinking" {
		t.Errorf("tool partials = %v", got)
	}
}

func TestWithHint(t *testing.T) {
	c := CLI{Bin: "x", NoLogin: []string{"Not logged in"}, Login: "log in on the host"}
	if got := c.WithHint("Not logged in · Please run /login"); got != "Not logged in · Please run /login — log in on the host" {
		t.Errorf("WithHint = %q", got)
	}
	if got := c.WithHint("rate limited"); got != "rate limited" {
		t.Errorf("WithHint(unrelated) = %q", got)
	}
}

func TestRetryLimit(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want time.Duration
	}{
		{nil, DefaultRetryLimit},
		{[]string{RetryEnv + "="}, DefaultRetryLimit},
		{[]string{RetryEnv + "=5"}, 5 * time.Second},
		{[]string{RetryEnv + "=0"}, 0},
		{[]string{RetryEnv + "=soon"}, DefaultRetryLimit},
	} {
		if got := RetryLimit(tc.env); got != tc.want {
			t.Errorf("RetryLimit(%q) = %v, want %v", tc.env, got, tc.want)
		}
	}
}

func TestWithDefaults(t *testing.T) {
	got := dropEmpty(withDefaults([]string{"A=", "B=2", "PATH=/bin"}, []string{"A=1", "B=9", "C=3"}))
	want := []string{"B=2", "PATH=/bin", "A=1", "C=3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("environment (-want +got):\n%s", diff)
	}
}

// TestBeginRefusesEmptyTurn: F-EMPTY-1 — a turn with neither message nor
// attachment is an error event, never handed to the CLI (qwen waits for a
// prompt on its own stdin when given an empty one).
func TestBeginRefusesEmptyTurn(t *testing.T) {
	var out, stderr strings.Builder
	in := strings.NewReader(`{"type":"turn","message":"","session_id":"","attachments":[],"protocol_version":"0.4"}` + "\n")
	_, err := Begin(NewEmitter(&out), "qwen", CLI{Bin: "qwen"}, in, &stderr, nil, nil)
	if err == nil || !strings.Contains(out.String(), `"type":"error"`) || !strings.Contains(out.String(), "empty turn") {
		t.Errorf("Begin(empty turn) = %v, stdout %q; want an error event", err, out.String())
	}
	in = strings.NewReader(`{"type":"turn","message":"","session_id":"","attachments":[{"kind":"image","url":"file:///a.png"}],"protocol_version":"0.4"}` + "\n")
	out.Reset()
	st, err := Begin(NewEmitter(&out), "qwen", CLI{Bin: "qwen"}, in, &stderr, nil, nil)
	if err != nil || out.Len() != 0 {
		t.Errorf("Begin(image-only turn) = %v, stdout %q; want it accepted", err, out.String())
	}
	st.SendFile.Close()
}

// FuzzToolLine: whatever a CLI puts in a tool call, its line is one short
// line without control or format characters.
func FuzzToolLine(f *testing.F) {
	f.Add("Bash", "ls -la")
	f.Add("Write", "notes.md\n@everyone\x1b[2J\u202e")
	f.Add("x", strings.Repeat("é", 200))
	f.Fuzz(func(t *testing.T, name, detail string) {
		line := ToolLine(name, detail)
		if line == "" {
			return
		}
		body, ok := strings.CutSuffix(line, "\n")
		if !ok || strings.ContainsAny(body, "\n\r") {
			t.Fatalf("ToolLine(%q, %q) = %q: not one line", name, detail, line)
		}
		if n := utf8.RuneCountInString(body); n > maxToolName+maxToolDetail+8 {
			t.Fatalf("ToolLine(%q, %q) is %d runes long", name, detail, n)
		}
		for i, r := range body {
			if unicode.IsControl(r) || (unicode.Is(unicode.Cf, r) && r != '\ufe0f') {
				t.Fatalf("ToolLine(%q, %q) = %q: %U at %d", name, detail, line, r, i)
			}
		}
	})
}

// TestRetryCountsFromLastProgress: a CLI that has heard nothing from its
// API for the bound when it first retries (a server that never answered
// until the CLI's own timeout) is stopped at once, with the error.
func TestRetryCountsFromLastProgress(t *testing.T) {
	var out bytes.Buffer
	em := NewEmitter(&out)
	stopped := make(chan struct{})
	p := &Proc{retry: retryWatch{em: em, bin: "gemini", limit: time.Hour, since: time.Now().Add(-2 * time.Hour),
		stop: func() { close(stopped) }}}
	p.Retrying("Attempt 1 failed. Retrying with backoff...")
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("the CLI was not stopped")
	}
	got := events(t, out.Bytes())
	if len(got) != 1 || got[0]["type"] != "error" || !strings.HasPrefix(got[0]["message"].(string), "gemini could not reach its model API for 1h0m0s (Attempt 1 failed.") {
		t.Errorf("events %v, want the retry bound's error", got)
	}
	p.retry.done()
}
