package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testAgent is the AgentProc agent the run tests start (the test binary,
// re-executed; see TestMain). It returns the exit status.
func testAgent(mode string) int {
	in := bufio.NewReader(os.Stdin)
	line, err := in.ReadString('\n')
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent: no turn:", err)
		return 3
	}
	var turn struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal([]byte(line), &turn)
	emit := func(v any) {
		b, _ := json.Marshal(v)
		os.Stdout.Write(append(b, '\n'))
	}
	type obj = map[string]any
	switch mode {
	case "echo":
		emit(obj{"type": "result", "text": "you said: " + turn.Message, "session_id": "s-1",
			"usage": obj{"input_tokens": 3, "output_tokens": 4, "cost_usd": 0.01}})
	case "turn":
		emit(obj{"type": "result", "text": strings.TrimSuffix(line, "\n")})
	case "stream":
		emit(obj{"type": "partial", "text": "hmm", "role": "thinking", "session_id": "s-2"})
		emit(obj{"type": "partial", "text": "Hello "})
		emit(obj{"type": "partial", "text": "world"})
		emit(obj{"type": "result", "text": "Hello world"})
	case "error":
		emit(obj{"type": "partial", "text": "partly "})
		emit(obj{"type": "error", "message": "quota exceeded", "session_id": "s-3"})
	case "exit":
		fmt.Fprintln(os.Stderr, "bash: line 1: ./missing.sh: No such file or directory")
		return 5
	case "perm":
		emit(obj{"type": "permission_request", "request_id": "r1", "tool_name": "Bash", "input": obj{"command": "ls"}})
		answer, err := in.ReadString('\n')
		if err != nil {
			answer = "ERR " + err.Error()
		}
		emit(obj{"type": "result", "text": strings.TrimSuffix(answer, "\n")})
	case "malformed":
		os.Stdout.WriteString("not json\n")
		emit(obj{"type": "result", "text": "ok"})
	case "continuity":
		return continuityAgent(line)
	case "watch":
		return watchAgent(turn.Message)
	case "flood": // the message is how many KiB of log lines to print, in 8 KiB partials
		kib, _ := strconv.Atoi(turn.Message)
		chunk := strings.Repeat(strings.Repeat("x", 63)+"\n", 128)
		for range kib / 8 {
			emit(obj{"type": "partial", "text": chunk})
		}
		emit(obj{"type": "result", "text": ""})
	case "escapes":
		return escapesAgent(in, emit)
	case "files": // a PNG between two words, then a refused path
		emit(obj{"type": "partial", "text": "chart:", "attachments": []obj{
			{"kind": "image", "url": "data:image/png;base64,iVBORw0KGgo=", "filename": "chart.png"}}})
		emit(obj{"type": "partial", "text": " done", "attachments": []obj{{"kind": "file", "url": "file:///etc/passwd"}}})
		emit(obj{"type": "result", "text": ""})
	case "hang":
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		emit(obj{"type": "partial", "text": "working"})
		<-term
		return 0
	default:
		fmt.Fprintln(os.Stderr, "agent: unknown mode", mode)
		return 3
	}
	return 0
}

// writeProfile writes a profile running the test agent in mode.
func writeProfile(t *testing.T, mode string, extra string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "agent.yaml")
	body := fmt.Sprintf("command: %q\nenv:\n  AGENTBRIDGE_TEST_AGENT: %s\n  GORACE: atexit_sleep_ms=0\nstreaming: true\ntimeout_secs: 30\n%s", self, mode, extra)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runCLI runs `agentbridge run ARGS...` as main would and returns the exit
// status and both outputs.
func runCLI(t *testing.T, ctx context.Context, stdin string, stdout *bytes.Buffer, args ...string) (int, string, string) {
	t.Helper()
	if stdout == nil {
		stdout = &bytes.Buffer{}
	}
	var stderr bytes.Buffer
	err := run(ctx, append([]string{"run"}, args...), strings.NewReader(stdin), stdout, &stderr)
	code := exitStatus(err, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestRunJSON(t *testing.T) {
	tests := []struct {
		name, mode, extra string
		args              []string
		want              string
		code              int
	}{
		{"result with usage", "echo", "", []string{"hi"},
			`{"reply":"you said: hi","session_id":"s-1","error":"","exit_code":0,"partials":[],"usage":{"input_tokens":3,"output_tokens":4,"total_tokens":0,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"reasoning_tokens":0,"duration_ms":0,"cost_usd":0.01}}` + "\n", 0},
		{"streamed", "stream", "", []string{"hi"},
			`{"reply":"","session_id":"s-2","error":"","exit_code":0,"partials":["hmm","Hello ","world"],"usage":null}` + "\n", 0},
		{"error event", "error", "", []string{"hi"},
			`{"reply":"","session_id":"s-3","error":"quota exceeded","exit_code":1,"partials":["partly "],"usage":null}` + "\n", 1},
		{"agent exit code", "exit", "", []string{"hi"},
			`{"reply":"","session_id":"","error":"","exit_code":5,"partials":[],"usage":null}` + "\n", 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"--profile", writeProfile(t, tt.mode, tt.extra), "--json"}, tt.args...)
			code, stdout, stderr := runCLI(t, context.Background(), "", nil, args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.code, stderr)
			}
			if diff := cmp.Diff(tt.want, stdout); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if strings.Contains(stderr, "session:") {
				t.Errorf("--json printed the session line: %q", stderr)
			}
		})
	}
}

func TestRunText(t *testing.T) {
	tests := []struct {
		name, mode, stdin string
		args              []string
		code              int
		stdout            string
		stderr            []string
	}{
		{"reply", "echo", "", []string{"hi"}, 0, "you said: hi\n", []string{"session: s-1\n"}},
		{"message from stdin", "echo", "from stdin\n", []string{"-"}, 0, "you said: from stdin\n", nil},
		{"streaming", "stream", "", []string{"hi"}, 0, "Hello world\n", []string{"[thinking] hmm\n", "session: s-2\n"}},
		{"error event", "error", "", []string{"hi"}, 1, "partly \n", []string{"turn failed: quota exceeded\n", "session: s-3\n"}},
		{"exit with diagnosis", "exit", "", []string{"hi"}, 5, "",
			[]string{"turn failed: the agent exited with status 5: agent script not found: ./missing.sh. Check the profile's command path.\n"}},
		{"attachment only", "turn", "", []string{"--attach", "image=file:///tmp/a.png", "--session-id", "s-9", "--session-name", "work", ""}, 0,
			`{"type":"turn","message":"","session_id":"s-9","session_name":"work","attachments":[{"kind":"image","url":"file:///tmp/a.png"}],"protocol_version":"0.4"}` + "\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"--profile", writeProfile(t, tt.mode, "")}, tt.args...)
			code, stdout, stderr := runCLI(t, context.Background(), tt.stdin, nil, args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.code, stderr)
			}
			if diff := cmp.Diff(tt.stdout, stdout); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			for _, s := range tt.stderr {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr %q does not contain %q", stderr, s)
				}
			}
		})
	}
}

// TestRunPermission: --permission allow|deny|ask answer the agent's request
// (P-PERM-3, F-PERM-2).
func TestRunPermission(t *testing.T) {
	tests := []struct {
		mode, stdin, want string
	}{
		{"allow", "", `{"type":"permission_response","request_id":"r1","behavior":"allow"}`},
		{"deny", "", `{"type":"permission_response","request_id":"r1","behavior":"deny","message":"denied by agentbridge run --permission deny"}`},
		{"ask", "y\n", `{"type":"permission_response","request_id":"r1","behavior":"allow"}`},
		{"ask", "n\n", `{"type":"permission_response","request_id":"r1","behavior":"deny","message":"denied by the user"}`},
		// The same answers as the terminal chat; anything else asks again.
		{"ask", "maybe\nallow\n", `{"type":"permission_response","request_id":"r1","behavior":"allow"}`},
		{"ask", "s\n", `{"type":"permission_response","request_id":"r1","behavior":"allow"}`},
		{"ask", "\nDeny\n", `{"type":"permission_response","request_id":"r1","behavior":"deny","message":"denied by the user"}`},
		{"ask", "", `{"type":"permission_response","request_id":"r1","behavior":"deny","message":"denied: no answer (end of input)"}`},
		// Without --permission and without a terminal nobody is asked, and
		// the agent is not told the user passed --permission deny.
		{"", "", `{"type":"permission_response","request_id":"r1","behavior":"deny","message":"denied: agentbridge run asks only on a terminal (--permission allow or ask changes that)"}`},
	}
	for _, tt := range tests {
		t.Run(tt.mode+strings.TrimSpace(tt.stdin), func(t *testing.T) {
			t.Parallel()
			args := []string{"--profile", writeProfile(t, "perm", "permission: true\n"), "--json"}
			if tt.mode != "" {
				args = append(args, "--permission", tt.mode)
			}
			code, stdout, stderr := runCLI(t, context.Background(), tt.stdin, nil, append(args, "do it")...)
			var got runJSON
			if err := json.Unmarshal([]byte(stdout), &got); err != nil || code != 0 {
				t.Fatalf("exit %d stdout %q stderr %q: %v", code, stdout, stderr, err)
			}
			if got.Reply != tt.want {
				t.Errorf("agent read %s, want %s", got.Reply, tt.want)
			}
			if tt.mode == "ask" && !strings.Contains(stderr, "permission: Bash") {
				t.Errorf("no prompt on stderr: %q", stderr)
			}
			if asked := strings.Count(stderr, "Please answer"); asked != strings.Count(tt.stdin, "maybe")+strings.Count("\n"+tt.stdin, "\n\n") {
				t.Errorf("asked again %d times; stderr %q", asked, stderr)
			}
		})
	}
}

// cancelOn cancels a context when the output contains a marker.
type cancelOn struct {
	bytes.Buffer
	mu     sync.Mutex
	marker string
	cancel context.CancelFunc
}

func (w *cancelOn) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.Buffer.Write(p)
	if strings.Contains(w.Buffer.String(), w.marker) {
		w.cancel()
	}
	return n, err
}

// TestRunInterrupt: Ctrl-C (main's ctx ending) stops the agent and exits
// 130 (D-STOP-1).
func TestRunInterrupt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &cancelOn{marker: "working", cancel: cancel}
	var stderr bytes.Buffer
	err := run(ctx, []string{"run", "--profile", writeProfile(t, "hang", ""), "hi"}, strings.NewReader(""), out, &stderr)
	if code := exitStatus(err, &stderr); code != 130 {
		t.Errorf("exit %d, want 130 (stderr %q)", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "turn failed: stopped") {
		t.Errorf("stderr %q", stderr.String())
	}
}

// TestRunRefusals: usage mistakes, an empty turn (F-EMPTY-1; the profile's
// command does not even exist, so a started agent would be 127) and a bad
// profile all exit 2 with a clear message.
func TestRunRefusals(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("command: x\ntimeout_secs: -1\nfoo: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	nostart := filepath.Join(dir, "nostart.yaml")
	if err := os.WriteFile(nostart, []byte("command: /nonexistent/agent\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		stdin string
		args  []string
		want  []string
	}{
		{"no profile", "", []string{"hi"}, []string{"--profile is required"}},
		{"no message", "", []string{"--profile", nostart}, []string{"exactly one MESSAGE"}},
		{"empty message", "", []string{"--profile", nostart, ""}, []string{"empty turn"}},
		{"empty stdin", "\n", []string{"--profile", nostart, "-"}, []string{"empty turn"}},
		{"bad permission", "", []string{"--profile", nostart, "--permission", "maybe", "hi"}, []string{"--permission must be ask, allow or deny"}},
		{"bad attach", "", []string{"--profile", nostart, "--attach", "nourl", "hi"}, []string{"want KIND=URL"}},
		{"missing profile", "", []string{"--profile", missing, "hi"}, []string{"missing.yaml", "no such file"}},
		{"bad profile", "", []string{"--profile", bad, "hi"}, []string{bad + ":2: timeout_secs: must not be negative", bad + ":3: foo: unknown field"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, context.Background(), tt.stdin, nil, tt.args...)
			if code != 2 || stdout != "" {
				t.Errorf("exit %d stdout %q, want 2 and nothing", code, stdout)
			}
			for _, s := range tt.want {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr %q does not contain %q", stderr, s)
				}
			}
		})
	}
}

// TestRunShimCLIMissing: a profile whose shim cannot find its CLI makes
// `run` exit 127 (the agent could not start, as the README says), with the
// shim's one clear error; the turn's own status stays 1 underneath
// (P-EXIT-1), and an agent's plain error still exits 1.
func TestRunShimCLIMissing(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir()) // no claude anywhere
	path := filepath.Join(t.TempDir(), "claude.yaml")
	body := fmt.Sprintf("command: %q\nargs: [shim, claude]\nenv:\n  %s: \"1\"\n  GORACE: atexit_sleep_ms=0\nstreaming: true\ntimeout_secs: 30\n", self, mainEnv)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, asJSON := range []bool{false, true} {
		args := []string{"--profile", path, "hi"}
		if asJSON {
			args = append([]string{"--json"}, args...)
		}
		code, stdout, stderr := runCLI(t, context.Background(), "", nil, args...)
		if code != 127 {
			t.Errorf("json=%v: exit %d, want 127; stderr %q", asJSON, code, stderr)
		}
		const msg = "claude not found on PATH — install with npm i -g @anthropic-ai/claude-code"
		if !strings.Contains(stderr, "turn failed: "+msg) {
			t.Errorf("json=%v: stderr %q, want the shim's error", asJSON, stderr)
		}
		if asJSON {
			var j runJSON
			if err := json.Unmarshal([]byte(stdout), &j); err != nil || j.ExitCode != 127 || j.Error != msg {
				t.Errorf("json: %s (%v), want exit_code 127 and the error", stdout, err)
			}
		}
	}
	if code, _, _ := runCLI(t, context.Background(), "", nil, "--profile", writeProfile(t, "error", ""), "hi"); code != 1 {
		t.Errorf("an agent's own error event: exit %d, want 1", code)
	}
}

// TestRunDemoProfileAnywhere: the README's first run command works without
// agentbridge on PATH (the profile runs this binary), builtin:demo is
// accepted too, and the demo keeps its memory under HOME, never in the
// checkout.
func TestRunDemoProfileAnywhere(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("PATH", t.TempDir())
	t.Setenv("AGENTBRIDGE_DEMO_DELAY", "0s")
	_, file, _, _ := runtime.Caller(0)
	demoDir := filepath.Join(filepath.Dir(file), "..", "..", "profiles", "demo")
	before, err := os.ReadDir(demoDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{filepath.Join(demoDir, "profile.yaml"), "builtin:demo"} {
		code, stdout, stderr := runCLI(t, context.Background(), "", nil, "--profile", ref, "--json", "hello")
		var got runJSON
		if err := json.Unmarshal([]byte(stdout), &got); err != nil || code != 0 {
			t.Fatalf("%s: exit %d stdout %q stderr %q: %v", ref, code, stdout, stderr, err)
		}
		if !strings.Contains(strings.Join(got.Partials, "")+got.Reply, "said: **hello**") || !strings.HasPrefix(got.SessionID, "demo-") {
			t.Errorf("%s: the demo did not answer: %+v", ref, got)
		}
	}
	after, _ := os.ReadDir(demoDir)
	if len(after) != len(before) {
		t.Errorf("the demo wrote into the checkout: %v, was %v", after, before)
	}
	if mem, _ := filepath.Glob(filepath.Join(home, ".local", "state", "agentbridge", "demo", "demo-*.json")); len(mem) == 0 {
		t.Errorf("no demo memory under HOME/.local/state/agentbridge/demo")
	}
}

// TestRunWarningsCarryNoRuleIDs: run shows the runner's protocol warnings
// in words; the spec's rule ids stay in the bridge's logs.
func TestRunWarningsCarryNoRuleIDs(t *testing.T) {
	code, stdout, stderr := runCLI(t, context.Background(), "", nil, "--profile", writeProfile(t, "malformed", ""), "hi")
	if code != 0 || stdout != "ok\n" {
		t.Fatalf("exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "ignored a malformed stdout line") || regexp.MustCompile(`[A-Z]-[A-Z]+-[0-9]`).MatchString(stderr) {
		t.Errorf("stderr %q: want the warning in words, without a rule id", stderr)
	}
	code, _, stderr = runCLI(t, context.Background(), "", nil, "--profile", writeProfile(t, "echo", ""), "")
	if code != 2 || regexp.MustCompile(`[A-Z]-[A-Z]+-[0-9]`).MatchString(stderr) {
		t.Errorf("empty turn: exit %d, stderr %q; want 2 without a rule id", code, stderr)
	}
}

// TestRunReplyLimit: run bounds a reply as serve and chat do (issue 27): an
// agent printing a big log as partials shows 64 KiB and then the truncated
// line, and one that goes on printing (100 MiB) is stopped.
func TestRunReplyLimit(t *testing.T) {
	prof := writeProfile(t, "flood", "")
	const line = "… output truncated (the agent printed more than 64 KiB)\n"
	code, stdout, stderr := runCLI(t, context.Background(), "", nil, "--profile", prof, "100")
	if code != 0 || len(stdout) != 64<<10+len(line) || !strings.HasSuffix(stdout, "\n"+line) {
		t.Errorf("exit %d, %d bytes ending %q (stderr %q); want 0 and 64 KiB, then the truncated line", code, len(stdout), stdout[max(len(stdout)-80, 0):], stderr)
	}
	code, stdout, stderr = runCLI(t, context.Background(), "", nil, "--profile", prof, "102400")
	if code != 143 || !strings.HasSuffix(stdout, line) || !strings.Contains(stderr, "turn failed: stopped: the agent went on printing past 256 KiB") {
		t.Errorf("flood: exit %d, stdout ending %q, stderr %q; want 143, the truncated line and why it stopped", code, stdout[max(len(stdout)-80, 0):], stderr)
	}
	code, stdout, _ = runCLI(t, context.Background(), "", nil, "--profile", prof, "--json", "100")
	var j struct {
		Partials  []string
		Truncated bool
	}
	if err := json.Unmarshal([]byte(stdout), &j); err != nil || code != 0 || !j.Truncated || len(strings.Join(j.Partials, "")) != 64<<10 {
		t.Errorf("--json: exit %d, truncated %v, %d bytes of partials (err %v)", code, j.Truncated, len(strings.Join(j.Partials, "")), err)
	}
}

// TestRunSavesFiles: the files a run's agent sends are saved in
// --save-dir, never over a file already there, named on stdout where
// they came and listed in --json; one it may not send is a line saying
// why (X-FILE-1, X-FILE-3).
func TestRunSavesFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "chart.png"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	profile := writeProfile(t, "files", "")
	code, stdout, stderr := runCLI(t, context.Background(), "", nil, "--profile", profile, "--save-dir", dir, "hi")
	saved := filepath.Join(dir, "chart-1.png")
	want := "chart:\n📎 chart.png saved: " + saved + "\n done\n📎 passwd refused: a file:// URL must name a file in the agent's working directory or the turn's attachment directory\n"
	if code != 0 || stdout != want {
		t.Errorf("exit %d, stdout %q, want %q (stderr %q)", code, stdout, want, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "chart.png")); string(b) != "mine" {
		t.Errorf("the file already there was overwritten: %q", b)
	}
	if b, _ := os.ReadFile(saved); !strings.HasPrefix(string(b), "\x89PNG") {
		t.Errorf("saved %q", b)
	}

	code, stdout, _ = runCLI(t, context.Background(), "", nil, "--profile", profile, "--save-dir", dir, "--json", "hi")
	var j struct {
		Files []map[string]any `json:"files"`
	}
	if err := json.Unmarshal([]byte(stdout), &j); err != nil || code != 0 {
		t.Fatalf("exit %d, --json %q: %v", code, stdout, err)
	}
	if len(j.Files) != 2 || j.Files[0]["path"] != filepath.Join(dir, "chart-2.png") || j.Files[0]["mime_type"] != "image/png" ||
		j.Files[0]["size"] != 8.0 || !strings.Contains(fmt.Sprint(j.Files[1]["note"]), "passwd refused") {
		t.Errorf("--json files: %v", j.Files)
	}
}
