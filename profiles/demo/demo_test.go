package demo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// event is any AgentProc event, decoded loosely enough to check it.
type event struct {
	Type        string         `json:"type"`
	Role        string         `json:"role"`
	Text        *string        `json:"text"`
	Message     string         `json:"message"`
	SessionID   string         `json:"session_id"`
	Usage       map[string]int `json:"usage"`
	RequestID   string         `json:"request_id"`
	ToolName    string         `json:"tool_name"`
	Description string         `json:"description"`
	Input       map[string]any `json:"input"`
	Attachments []struct {
		Kind     string `json:"kind"`
		URL      string `json:"url"`
		Filename string `json:"filename"`
		MIMEType string `json:"mime_type"`
		Size     int64  `json:"size"`
	} `json:"attachments"`
}

var mintedID = regexp.MustCompile(`^demo-[0-9a-f]{12}$`)

// parseEvents checks every stdout line against P-OUT-1 (one JSON object per
// line, type in the closed vocabulary) and returns the events.
func parseEvents(t testing.TB, out []byte) []event {
	t.Helper()
	if len(out) > 0 && out[len(out)-1] != '\n' {
		t.Errorf("stdout does not end in a newline: %q", out)
	}
	var evs []event
	for _, line := range bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n")) {
		if len(line) == 0 {
			if len(out) > 0 {
				t.Errorf("empty line in stdout %q", out)
			}
			continue
		}
		var obj map[string]any
		if err := json.Unmarshal(line, &obj); err != nil {
			t.Errorf("P-OUT-1: line is not a JSON object: %q: %v", line, err)
			continue
		}
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			t.Errorf("line %q: %v", line, err)
			continue
		}
		switch e.Type {
		case "partial", "result":
			if e.Text == nil {
				t.Errorf("%s event without text: %q", e.Type, line)
			}
		case "error":
			if e.Message == "" {
				t.Errorf("error event without message: %q", line)
			}
		case "permission_request":
			// F-PERM-1: request_id without whitespace, tool_name, input object.
			if e.RequestID == "" || strings.ContainsAny(e.RequestID, " \t\r\n") || e.ToolName == "" || e.Input == nil {
				t.Errorf("F-PERM-1: malformed permission_request %q", line)
			}
		default:
			t.Errorf("P-OUT-1: type %q outside the closed vocabulary: %q", e.Type, line)
		}
		evs = append(evs, e)
	}
	return evs
}

// output concatenates the output partials: the streamed answer.
func output(evs []event) string {
	var b strings.Builder
	for _, e := range evs {
		if e.Type == "partial" && e.Role != "thinking" && e.Text != nil {
			b.WriteString(*e.Text)
		}
	}
	return b.String()
}

func turnJSON(msg, sessionID string, permission bool) string {
	b, _ := json.Marshal(map[string]any{
		"type": "turn", "message": msg, "session_id": sessionID, "session_name": "default",
		"attachments": []any{}, "permission": permission, "protocol_version": "0.4",
	})
	return string(b) + "\n"
}

// runTurn runs one turn with stdin closed after the turn line (P-STDIN-1).
func runTurn(t *testing.T, dir, msg, sessionID string) ([]event, error) {
	t.Helper()
	var out bytes.Buffer
	err := Run(t.Context(), strings.NewReader(turnJSON(msg, sessionID, false)), &out, dir, 0)
	return parseEvents(t, out.Bytes()), err
}

// sessionOf returns the one session id all events carry, failing the test if
// any event lacks it or they differ (P-SID-2, P-SID-4).
func sessionOf(t *testing.T, evs []event) string {
	t.Helper()
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	id := evs[0].SessionID
	for i, e := range evs {
		if e.SessionID != id || id == "" {
			t.Errorf("P-SID-2: event %d (%s) session_id %q, want %q on every event", i, e.Type, e.SessionID, id)
		}
	}
	return id
}

func TestNewSessionMintsSafeID(t *testing.T) {
	dir := t.TempDir()
	evs, err := runTurn(t, dir, "hello", "")
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	id := sessionOf(t, evs)
	if !mintedID.MatchString(id) {
		t.Errorf("minted id %q does not match %v", id, mintedID)
	}
	if _, err := os.Stat(filepath.Join(dir, id+".json")); err != nil {
		t.Errorf("P-SID-3: minted id has no memory to resume from: %v", err)
	}
	// A second new session gets another id.
	evs2, _ := runTurn(t, dir, "hello", "")
	if id2 := sessionOf(t, evs2); id2 == id {
		t.Errorf("two new sessions share id %q", id)
	}
}

func TestTurnShape(t *testing.T) {
	for _, msg := range []string{"hello", "help", "what is my name?", "Call me Ishmael!", "write a file please"} {
		t.Run(msg, func(t *testing.T) {
			evs, err := runTurn(t, t.TempDir(), msg, "")
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			sessionOf(t, evs)
			var types []string
			for _, e := range evs {
				types = append(types, e.Type+"/"+e.Role)
			}
			if len(evs) < 3 || evs[0].Type != "partial" || evs[0].Role != "thinking" {
				t.Fatalf("want a thinking partial first, got %v", types)
			}
			for _, e := range evs[1 : len(evs)-1] {
				if e.Type != "partial" || e.Role != "output" {
					t.Errorf("want output partials between thinking and result, got %v", types)
					break
				}
			}
			last := evs[len(evs)-1]
			if last.Type != "result" || *last.Text != "" {
				t.Errorf("P-RES-2: want a final result with empty text, got %+v", last)
			}
			if last.Usage["input_tokens"] <= 0 || last.Usage["output_tokens"] <= 0 ||
				last.Usage["total_tokens"] != last.Usage["input_tokens"]+last.Usage["output_tokens"] {
				t.Errorf("F-USAGE-1: implausible usage %v", last.Usage)
			}
			if got := last.Usage["output_tokens"]; got != wordCount(output(evs)) {
				t.Errorf("output_tokens %d, want the %d words streamed", got, wordCount(output(evs)))
			}
		})
	}
}

func TestResumeRemembers(t *testing.T) {
	dir := t.TempDir()
	evs, err := runTurn(t, dir, "remember my name is Ada", "")
	if err != nil {
		t.Fatalf("turn 1: %v", err)
	}
	id := sessionOf(t, evs)

	evs, err = runTurn(t, dir, "what is my name?", id)
	if err != nil {
		t.Fatalf("turn 2: %v", err)
	}
	if got := sessionOf(t, evs); got != id {
		t.Errorf("resumed turn reports session %q, want %q", got, id)
	}
	if got := output(evs); !strings.Contains(got, "Your name is Ada.") {
		t.Errorf("turn 2 answer %q does not recall the name", got)
	}

	evs, _ = runTurn(t, dir, "the weather is nice", id)
	got := output(evs)
	for _, want := range []string{"turn **3**", "Before this you said: “what is my name?”", "**the weather is nice**"} {
		if !strings.Contains(got, want) {
			t.Errorf("turn 3 answer lacks %q:\n%s", want, got)
		}
	}

	// A new session knows nothing.
	evs, _ = runTurn(t, dir, "what's my name?", "")
	if got := output(evs); !strings.Contains(got, "don't know your name") {
		t.Errorf("new session answer %q, want it not to know the name", got)
	}
}

func TestUnsafeSessionIDIsNotAPath(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "state")
	for _, bad := range []string{"../escape", "a/b", "x\x00y", strings.Repeat("a", 65), "..", "id with space"} {
		evs, err := runTurn(t, dir, "hello", bad)
		if err != nil {
			t.Fatalf("Run(%q): %v", bad, err)
		}
		if id := sessionOf(t, evs); !mintedID.MatchString(id) {
			t.Errorf("session %q: answered under %q, want a freshly minted id", bad, id)
		}
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "state" {
		t.Errorf("files outside the state dir: %v", entries)
	}
}

func TestResumeUnknownIDKeepsIt(t *testing.T) {
	evs, err := runTurn(t, t.TempDir(), "hello", "my-own_ID-1")
	if err != nil {
		t.Fatal(err)
	}
	if got := sessionOf(t, evs); got != "my-own_ID-1" {
		t.Errorf("session %q, want the safe id it was given", got)
	}
}

func TestStatelessOmitsSessionID(t *testing.T) {
	evs, err := runTurn(t, "", "hello", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.SessionID != "" {
			t.Errorf("P-SID-3: stateless agent reported session_id %q", e.SessionID)
		}
	}
}

func TestFailEmitsError(t *testing.T) {
	dir := t.TempDir()
	evs, err := runTurn(t, dir, "fail", "")
	if !errors.Is(err, errFailed) {
		t.Errorf("Run error %v, want errFailed so the process exits 1", err)
	}
	id := sessionOf(t, evs) // P-SID-5: the id travels with the error too
	last := evs[len(evs)-1]
	if last.Type != "error" || last.Message == "" {
		t.Fatalf("last event %+v, want an error event", last)
	}
	for _, e := range evs {
		if e.Type == "result" {
			t.Errorf("P-ERR-2: result emitted around an error: %+v", e)
		}
	}
	// The failed turn still counts in memory.
	evs, _ = runTurn(t, dir, "hi", id)
	if got := output(evs); !strings.Contains(got, "Before this you said: “fail”") {
		t.Errorf("after fail, answer %q lacks recap", got)
	}
}

func TestBadInput(t *testing.T) {
	tests := []struct {
		name, stdin string
	}{
		{"no turn line", ""},
		{"not JSON", "hello\n"},
		{"wrong type", `{"type":"permission_response","request_id":"w1"}` + "\n"},
		{"empty turn", turnJSON("", "", false)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := Run(t.Context(), strings.NewReader(tt.stdin), &out, t.TempDir(), 0)
			if err == nil {
				t.Error("Run returned nil, want an error")
			}
			evs := parseEvents(t, out.Bytes())
			if len(evs) != 1 || evs[0].Type != "error" {
				t.Errorf("events %+v, want exactly one error event", evs)
			}
		})
	}
}

func TestHistoryCapped(t *testing.T) {
	dir := t.TempDir()
	// A session already at the cap, written as Run writes it.
	s := &session{Version: stateVersion, ID: "full"}
	for i := range maxHistory + 4 {
		s.record(fmt.Sprintf("message %d", i), "ok", time.Now())
	}
	if err := s.save(dir); err != nil {
		t.Fatal(err)
	}
	evs, err := runTurn(t, dir, "one more", "full")
	if err != nil {
		t.Fatal(err)
	}
	if got := output(evs); !strings.Contains(got, fmt.Sprintf("turn **%d**", maxHistory+5)) {
		t.Errorf("answer %q does not count past the cap", got)
	}
	s, err = load(dir, "full")
	if err != nil {
		t.Fatal(err)
	}
	if s.Turns != maxHistory+5 || len(s.History) != maxHistory {
		t.Errorf("turns %d, history %d; want %d and %d", s.Turns, len(s.History), maxHistory+5, maxHistory)
	}
	if first, last := s.History[0].User, s.History[len(s.History)-1].User; first != "message 5" || last != "one more" {
		t.Errorf("history runs %q..%q, want \"message 5\"..\"one more\"", first, last)
	}
	// Only the memory file remains: temp files were renamed away.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("state dir holds %d entries, want 1", len(entries))
	}
}

// pipeTurn runs Run on pipes so the test can answer a permission request.
type pipeTurn struct {
	stdin  *io.PipeWriter
	events chan event // closed when stdout ends
	done   chan error // Run's result
	cancel context.CancelFunc
}

func startTurn(t *testing.T, dir, turnLine string, delay time.Duration) *pipeTurn {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &pipeTurn{stdin: inW, events: make(chan event, 256), done: make(chan error, 1), cancel: cancel}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		err := Run(ctx, inR, outW, dir, delay)
		outW.Close()
		p.done <- err
	}()
	go func() {
		defer wg.Done()
		defer close(p.events)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			for _, e := range parseEvents(t, append(sc.Bytes(), '\n')) {
				p.events <- e
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		inW.Close() // ends Run's stdin reader, which cannot be interrupted
		wg.Wait()
	})
	if _, err := io.WriteString(inW, turnLine); err != nil {
		t.Fatal(err)
	}
	return p
}

// until reads events until one satisfies ok, returning all read.
func (p *pipeTurn) until(t *testing.T, ok func(event) bool) []event {
	t.Helper()
	var evs []event
	for e := range p.events {
		evs = append(evs, e)
		if ok(e) {
			return evs
		}
	}
	t.Fatalf("stdout ended before the awaited event; got %+v", evs)
	return nil
}

// rest reads the remaining events and Run's result.
func (p *pipeTurn) rest() ([]event, error) {
	var evs []event
	for e := range p.events {
		evs = append(evs, e)
	}
	return evs, <-p.done
}

func TestPermission(t *testing.T) {
	tests := []struct {
		name    string
		answer  string // lines written after the request; "" closes stdin
		want    string // in the answer after the request
		content string // expected note in the answer, if allowed
	}{
		{
			name:    "allow",
			answer:  `{"type":"permission_response","request_id":"w1","behavior":"allow"}`,
			want:    "✅ wrote notes.txt (pretend — nothing touched your disk)",
			content: "Note from turn 1: please write a file",
		},
		{
			name:    "allow with updated input",
			answer:  `{"type":"permission_response","request_id":"w1","behavior":"allow","updated_input":{"path":"notes.txt","content":"edited"}}`,
			want:    "✅ wrote notes.txt",
			content: "edited",
		},
		{
			name:   "deny with message",
			answer: `{"type":"permission_response","request_id":"w1","behavior":"deny","message":"not today"}`,
			want:   "❌ OK, I will not write notes.txt. The bridge said: “not today”",
		},
		{
			name: "other lines ignored",
			answer: "garbage\n" + `{"type":"permission_response","request_id":"other","behavior":"allow"}` + "\n" +
				`{"type":"permission_response","request_id":"w1","behavior":"deny"}`,
			want: "❌ OK, I will not write notes.txt.\n",
		},
		{
			name: "stdin closed",
			want: "❌ OK, I will not write notes.txt. The bridge said: “stdin closed before an answer”",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startTurn(t, t.TempDir(), turnJSON("please write a file", "", true), 0)
			before := p.until(t, func(e event) bool { return e.Type == "permission_request" })
			req := before[len(before)-1]
			wantReq := event{
				Type: "permission_request", RequestID: "w1", ToolName: "write_file",
				Description: "Write a note to notes.txt", SessionID: before[0].SessionID,
				Input: map[string]any{"path": "notes.txt", "content": "Note from turn 1: please write a file"},
			}
			if diff := cmp.Diff(wantReq, req); diff != "" {
				t.Errorf("permission_request mismatch (-want +got):\n%s", diff)
			}
			if tt.answer == "" {
				p.stdin.Close()
			} else if _, err := io.WriteString(p.stdin, tt.answer+"\n"); err != nil {
				t.Fatal(err)
			}
			after, err := p.rest()
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			sessionOf(t, append(before, after...))
			got := output(after)
			if !strings.Contains(got, tt.want) {
				t.Errorf("answer %q lacks %q", got, tt.want)
			}
			if tt.content != "" && !strings.Contains(got, "```text\n"+tt.content+"\n```") {
				t.Errorf("answer %q does not show the note %q", got, tt.content)
			}
			if last := after[len(after)-1]; last.Type != "result" {
				t.Errorf("last event %+v, want result", last)
			}
		})
	}
}

func TestPermissionOff(t *testing.T) {
	evs, err := runTurn(t, t.TempDir(), "use your tool", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Type == "permission_request" {
			t.Errorf("permission_request with permission off: %+v", e)
		}
	}
	if got := output(evs); !strings.Contains(got, "approvals off") {
		t.Errorf("answer %q does not say approvals are off", got)
	}
}

// cancelled is how long a stopped agent may take to return; generous for
// -race on a loaded machine, far below the 10 s slow answer.
const cancelled = 5 * time.Second

func TestCancelStopsPromptly(t *testing.T) {
	t.Run("streaming", func(t *testing.T) {
		dir := t.TempDir()
		p := startTurn(t, dir, turnJSON("slow", "", false), 0)
		p.stdin.Close() // P-STDIN-1
		before := p.until(t, func(e event) bool { return e.Type == "partial" && e.Role == "output" })
		start := time.Now()
		p.cancel()
		after, err := p.rest()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run error %v, want context.Canceled", err)
		}
		if d := time.Since(start); d > cancelled {
			t.Errorf("Run took %v to stop", d)
		}
		for _, e := range after {
			if e.Type == "result" {
				t.Errorf("result after stop: %+v", e)
			}
		}
		// What was said before the stop is remembered.
		s, err := load(dir, before[0].SessionID)
		if err != nil {
			t.Fatalf("memory after stop: %v", err)
		}
		if s.Turns != 1 || !strings.HasPrefix(slowAnswer(), s.History[0].Agent) || s.History[0].Agent == "" {
			t.Errorf("memory after stop: %+v", s)
		}
	})
	t.Run("awaiting permission", func(t *testing.T) {
		p := startTurn(t, t.TempDir(), turnJSON("write a file", "", true), 0)
		p.until(t, func(e event) bool { return e.Type == "permission_request" })
		p.cancel()
		if _, err := p.rest(); !errors.Is(err, context.Canceled) {
			t.Errorf("Run error %v, want context.Canceled", err)
		}
	})
	t.Run("before the turn line", func(t *testing.T) {
		p := startTurn(t, t.TempDir(), "", 0)
		p.cancel()
		if _, err := p.rest(); !errors.Is(err, context.Canceled) {
			t.Errorf("Run error %v, want context.Canceled", err)
		}
	})
}

func TestDelayStreams(t *testing.T) {
	// With a delay the answer still arrives whole; the test bounds nothing
	// about time beyond not hanging.
	var out bytes.Buffer
	if err := Run(t.Context(), strings.NewReader(turnJSON("hi there", "", false)), &out, t.TempDir(), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if got := output(parseEvents(t, out.Bytes())); !strings.Contains(got, "**hi there**") {
		t.Errorf("answer %q", got)
	}
}

func TestChunks(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"one", []string{"one"}},
		{"a b  c\n", []string{"a ", "b  ", "c\n"}},
		{"  lead", []string{"  lead"}},
		{"x\n\n- y", []string{"x\n\n", "- ", "y"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, chunks(tt.in)); diff != "" {
			t.Errorf("chunks(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestClassify(t *testing.T) {
	tests := map[string]intent{
		"help":                        intentHelp,
		"Help!":                       intentHelp,
		"fail":                        intentFail,
		"slow":                        intentSlow,
		"remember my name is Ada":     intentSetName,
		"call me Ishmael":             intentSetName,
		"What's my name?":             intentAskName,
		"who am I":                    intentAskName,
		"write a note":                intentTool,
		"use a TOOL":                  intentTool,
		"draw a chart":                intentChart,
		"send me the chart as a file": intentChart,
		"send the notes":              intentNotes,
		"Give me your notes!":         intentNotes,
		"my profile is fine":          intentEcho,
		"hello":                       intentEcho,
	}
	for msg, want := range tests {
		if got := classify(msg); got != want {
			t.Errorf("classify(%q) = %d, want %d", msg, got, want)
		}
	}
}

func TestCodeBlockFence(t *testing.T) {
	got := codeBlock("a ```b``` c")
	if !strings.HasPrefix(got, "````text\n") || !strings.HasSuffix(got, "\n````\n") {
		t.Errorf("codeBlock does not outrun inner fence: %q", got)
	}
}

func FuzzChunks(f *testing.F) {
	for _, s := range []string{"", "a b", " \n x\ty ", "é ü\u00a0z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got := strings.Join(chunks(s), ""); got != s {
			t.Errorf("chunks do not rejoin: %q != %q", got, s)
		}
	})
}

// FuzzRun feeds arbitrary stdin to the agent: it must never panic, must write
// only valid events, and must never write outside its state directory.
func FuzzRun(f *testing.F) {
	f.Add(turnJSON("hello", "", false))
	f.Add(turnJSON("my name is Zoë", "../../x", false))
	f.Add(turnJSON("write it", "s1", true) + `{"type":"permission_response","request_id":"w1","behavior":"allow","updated_input":7}` + "\n")
	f.Add(`{"type":"turn","message":"fail","session_id":"a","attachments":[{"kind":"image","url":"file:///x.png","size":3}]}` + "\n")
	f.Add("{\"type\":\"turn\"}\n")
	f.Add("[1,2]\n")
	f.Fuzz(func(t *testing.T, stdin string) {
		root := t.TempDir()
		dir := filepath.Join(root, "state")
		var out bytes.Buffer
		_ = Run(context.Background(), strings.NewReader(stdin), &out, dir, 0)
		parseEvents(t, out.Bytes())
		entries, err := os.ReadDir(root)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Name() != "state" {
				t.Errorf("wrote %q outside the state dir", e.Name())
			}
		}
	})
}

func TestAttachmentsOnly(t *testing.T) {
	line := `{"type":"turn","message":"","session_id":"","protocol_version":"0.4",` +
		`"attachments":[{"kind":"image","url":"file:///tmp/cat.png","name":"cat.png","mime":"image/png","size":1234}]}` + "\n"
	var out bytes.Buffer
	if err := Run(t.Context(), strings.NewReader(line), &out, t.TempDir(), 0); err != nil {
		t.Fatalf("F-EMPTY-1: a turn with only attachments carries content, got %v", err)
	}
	got := output(parseEvents(t, out.Bytes()))
	if want := "- You attached `cat.png` (image, image/png, 1234 bytes).\n"; !strings.Contains(got, want) {
		t.Errorf("answer %q lacks %q", got, want)
	}
}

// BenchmarkTurn measures one whole turn with memory on disk: load, answer,
// atomic save.
func BenchmarkTurn(b *testing.B) {
	dir := b.TempDir()
	var out bytes.Buffer
	if err := Run(b.Context(), strings.NewReader(turnJSON("my name is Ada", "bench", false)), &out, dir, 0); err != nil {
		b.Fatal(err)
	}
	line := turnJSON("hello there, how are you today?", "bench", false)
	for b.Loop() {
		out.Reset()
		if err := Run(b.Context(), strings.NewReader(line), &out, dir, 0); err != nil {
			b.Fatal(err)
		}
	}
}
