package agentproc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// agentProfile is a profile running this test binary as the agent in mode.
func agentProfile(t testing.TB, mode string, env map[string]string) *Profile {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A race-built agent otherwise sleeps 1s at exit (GORACE atexit_sleep_ms).
	e := map[string]string{agentModeVar: mode, "GORACE": "atexit_sleep_ms=0"}
	for k, v := range env {
		e[k] = v
	}
	return &Profile{
		Name: "test-" + mode, Command: self, Env: e,
		Timeout: 30 * time.Second, KillGrace: 5 * time.Second, Streaming: true,
	}
}

// syncLog is a slog text handler target safe for concurrent writes.
type syncLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func newLog() (*slog.Logger, *syncLog) {
	sl := &syncLog{}
	return slog.New(slog.NewTextHandler(sl, &slog.HandlerOptions{Level: slog.LevelDebug})), sl
}

func run(t *testing.T, ctx context.Context, p *Profile, turn Turn, opts Options) Outcome {
	t.Helper()
	if opts.Log == nil {
		opts.Log, _ = newLog()
	}
	o, err := Run(ctx, p, turn, opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return o
}

// echoReport is what the "echo" agent reports about its launch.
type echoReport struct {
	Turn string   `json:"turn"`
	Env  []string `json:"env"`
	Cwd  string   `json:"cwd"`
	Args []string `json:"args"`
}

func echo(t *testing.T, p *Profile, turn Turn, opts Options) echoReport {
	t.Helper()
	o := run(t, context.Background(), p, turn, opts)
	if o.Failed() {
		t.Fatalf("echo agent failed: %s (stderr %q)", o.Failure(), o.Stderr)
	}
	var r echoReport
	if err := json.Unmarshal([]byte(o.Reply), &r); err != nil {
		t.Fatalf("echo reply %q: %v", o.Reply, err)
	}
	return r
}

// TestTurnLine checks the exact stdin turn object (P-TURN-1, P-TURN-2,
// D-ATT-1): attachments [] when none, permission only when on.
func TestTurnLine(t *testing.T) {
	tests := []struct {
		name       string
		turn       Turn
		permission bool
		want       string
	}{
		{"new session", Turn{Message: "hello"}, false,
			`{"type":"turn","message":"hello","session_id":"","session_name":"default","attachments":[],"protocol_version":"0.4"}`},
		{"resume with attachment", Turn{Message: "", SessionID: "s-1", SessionName: "work",
			Attachments: []Attachment{{Kind: "image", URL: "file:///tmp/a.png", Name: "a.png", MIME: "image/png", Size: 12}}}, false,
			`{"type":"turn","message":"","session_id":"s-1","session_name":"work","attachments":[{"kind":"image","url":"file:///tmp/a.png","filename":"a.png","mime_type":"image/png","size":12,"name":"a.png","mime":"image/png"}],"protocol_version":"0.4"}`},
		{"permission on", Turn{Message: "<b>&"}, true,
			`{"type":"turn","message":"<b>&","session_id":"","session_name":"default","attachments":[],"permission":true,"protocol_version":"0.4"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := agentProfile(t, "echo", nil)
			p.Permission = tt.permission
			if got := echo(t, p, tt.turn, Options{}).Turn; got != tt.want {
				t.Errorf("turn line\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestEmptyTurnRefused: F-EMPTY-1, nothing is started.
func TestEmptyTurnRefused(t *testing.T) {
	p := &Profile{Command: "/nonexistent/agent"}
	if _, err := Run(context.Background(), p, Turn{}, Options{}); !errors.Is(err, ErrEmptyTurn) {
		t.Fatalf("Run(empty turn) error = %v, want ErrEmptyTurn", err)
	}
	if _, err := Run(context.Background(), nil, Turn{Message: "x"}, Options{}); err == nil {
		t.Fatal("Run(nil profile) succeeded")
	}
}

// TestEnvComposition: the child sees exactly the infra set plus the profile
// env after ${VAR} expansion; a bridge secret does not reach it; the
// allowlist blocks with a warning (F-ENV-1, F-ENV-2, P-PROF-5, F-PH-1).
func TestEnvComposition(t *testing.T) {
	p := agentProfile(t, "echo", map[string]string{
		"A":       "${ALLOWED}",
		"B":       "x${BLOCKED}y",
		"C":       "${UNKNOWN}z",
		"D":       "{{SESSION_ID}}/{{SESSION_NAME}}",
		"E":       "$ALLOWED ${not-a-name} {{MESSAGE}}",
		"UNKNOWN": "set-by-profile",
	})
	p.EnvAllowlist = []string{"ALLOWED", "UNKNOWN"}
	log, logs := newLog()
	bridge := []string{"PATH=/usr/bin:/bin", "HOME=/home/bridge", "LANG=C.UTF-8", "SECRET_TOKEN=s3cr3t",
		"ALLOWED=yes", "BLOCKED=no", "SLACK_BOT_TOKEN=xoxb-1"}
	r := echo(t, p, Turn{Message: "m", SessionID: "${SECRET_TOKEN}"}, Options{Environ: bridge, Log: log})
	slices.Sort(r.Env)
	want := []string{
		"A=yes", agentModeVar + "=echo", "B=xy", "C=z", "D=${SECRET_TOKEN}/default",
		"E=$ALLOWED ${not-a-name} {{MESSAGE}}", "GORACE=atexit_sleep_ms=0", "HOME=/home/bridge", "LANG=C.UTF-8", "PATH=/usr/bin:/bin", "UNKNOWN=set-by-profile",
	}
	if diff := cmp.Diff(want, r.Env); diff != "" {
		t.Errorf("child env (-want +got):\n%s", diff)
	}
	if !strings.Contains(logs.String(), "env_allowlist blocked ${BLOCKED}") {
		t.Errorf("no allowlist warning in log:\n%s", logs)
	}
}

// TestPlaceholdersAndCwd: placeholders in command args and cwd without a
// shell; relative cwd against the profile dir; missing cwd = bridge cwd
// (F-PH-1, P-PROF-1..4).
func TestPlaceholdersAndCwd(t *testing.T) {
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	if err := os.Mkdir(filepath.Join(dir, "work space"), 0o755); err != nil {
		t.Fatal(err)
	}
	bridgeCwd, _ := os.Getwd()
	tests := []struct {
		name, cwd, wantCwd string
	}{
		{"relative", "work space", filepath.Join(dir, "work space")},
		{"dot", ".", dir},
		{"placeholder", "{{PROFILE_DIR}}/work space", filepath.Join(dir, "work space")},
		{"absolute", dir, dir},
		{"omitted", "", bridgeCwd},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := agentProfile(t, "echo", nil)
			p.Path = filepath.Join(dir, "agent.yaml")
			p.Cwd = tt.cwd
			p.Args = []string{"{{PROFILE_DIR}}", "--session={{SESSION_ID}}", "{{SESSION_NAME}}", "a b; echo $HOME", ""}
			r := echo(t, p, Turn{Message: "m", SessionID: "s 1", SessionName: "n"}, Options{})
			if r.Cwd != tt.wantCwd {
				t.Errorf("cwd = %q, want %q", r.Cwd, tt.wantCwd)
			}
			wantArgs := []string{dir, "--session=s 1", "n", "a b; echo $HOME", ""}
			if diff := cmp.Diff(wantArgs, r.Args); diff != "" {
				t.Errorf("argv[1:] (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConversationPlaceholder: the bridge extension
// {{AGENTBRIDGE_CONVERSATION_ID}} expands in args, cwd and env to the
// turn's ConversationID, "" without one; a placeholder no spec defines
// stays literal, so standard profiles mean the same as elsewhere.
func TestConversationPlaceholder(t *testing.T) {
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	if err := os.Mkdir(filepath.Join(dir, "slack-0123456789abcdef"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := agentProfile(t, "echo", map[string]string{"WS": "ws-{{AGENTBRIDGE_CONVERSATION_ID}}"})
	p.Path = filepath.Join(dir, "agent.yaml")
	p.Cwd = "{{AGENTBRIDGE_CONVERSATION_ID}}"
	p.Args = []string{"--workspace={{AGENTBRIDGE_CONVERSATION_ID}}", "{{AGENTBRIDGE_TURN}}"}
	r := echo(t, p, Turn{Message: "m", ConversationID: "slack-0123456789abcdef"}, Options{})
	if diff := cmp.Diff([]string{"--workspace=slack-0123456789abcdef", "{{AGENTBRIDGE_TURN}}"}, r.Args); diff != "" {
		t.Errorf("argv[1:] (-want +got):\n%s", diff)
	}
	if want := filepath.Join(dir, "slack-0123456789abcdef"); r.Cwd != want {
		t.Errorf("cwd = %q, want %q", r.Cwd, want)
	}
	if !slices.Contains(r.Env, "WS=ws-slack-0123456789abcdef") {
		t.Errorf("env %q lacks WS=ws-slack-0123456789abcdef", r.Env)
	}

	p.Cwd = ""
	r = echo(t, p, Turn{Message: "m"}, Options{})
	if r.Args[0] != "--workspace=" || !slices.Contains(r.Env, "WS=ws-") {
		t.Errorf("without a conversation: args %q env %q; want it expanded to empty", r.Args, r.Env)
	}
}

// TestStdinClosedWithoutPermission: P-STDIN-1, the agent reads to EOF.
func TestStdinClosedWithoutPermission(t *testing.T) {
	p := agentProfile(t, "stdin-eof", nil)
	p.Timeout = 10 * time.Second
	o := run(t, context.Background(), p, Turn{Message: "m"}, Options{})
	if o.Failed() || o.Reply != "eof after 0 more bytes (err=<nil>)" {
		t.Fatalf("outcome %+v", o)
	}
}

// TestPermission covers P-PERM-2/3, F-PERM-1/2, D-PERM-1, P-STDIN-2: every
// request reaches the caller once, is answered once, and stdin stays open so
// the agent reads the answers.
func TestPermission(t *testing.T) {
	req := func(id, tool, input string) string {
		return `{"type":"permission_request","request_id":"` + id + `","tool_name":"` + tool + `","input":` + input + `,"description":"d","tool_use_id":"tu"}`
	}
	tests := []struct {
		name     string
		requests []string
		answer   func(*PermissionRequest) // nil: never answer
		permTO   time.Duration
		want     []string // response lines the agent read
		source   AnswerSource
	}{
		{"allow", []string{req("1", "Bash", `{"command":"echo ok > f.txt"}`)},
			func(r *PermissionRequest) { r.Respond(Decision{Allow: true}) }, 0,
			[]string{`{"type":"permission_response","request_id":"1","behavior":"allow"}`}, AnsweredByCaller},
		{"allow with updated input", []string{req("u", "Write", `{}`)},
			func(r *PermissionRequest) {
				r.Respond(Decision{Allow: true, UpdatedInput: json.RawMessage(`{"path":"x"}`)})
			}, 0,
			[]string{`{"type":"permission_response","request_id":"u","behavior":"allow","updated_input":{"path":"x"}}`}, AnsweredByCaller},
		{"deny twice", []string{req("1", "Bash", `{}`), req("2", "Bash", `{}`)},
			func(r *PermissionRequest) {
				r.Respond(Decision{Message: "no"})
				if err := r.Respond(Decision{Allow: true}); !errors.Is(err, ErrAlreadyAnswered) {
					panic(fmt.Sprintf("second Respond: %v", err))
				}
			}, 0,
			[]string{`{"type":"permission_response","request_id":"1","behavior":"deny","message":"no"}`,
				`{"type":"permission_response","request_id":"2","behavior":"deny","message":"no"}`}, AnsweredByCaller},
		{"permission timeout", []string{req("t", "Bash", `{}`)}, nil, 50 * time.Millisecond,
			[]string{`{"type":"permission_response","request_id":"t","behavior":"deny","message":"permission request timed out after 50ms"}`},
			AnsweredByPermissionTimeout},
		{"malformed with id is denied", []string{`{"type":"permission_request","request_id":"m1","input":{}}`}, nil, 0,
			[]string{`{"type":"permission_response","request_id":"m1","behavior":"deny","message":"malformed permission request: tool_name missing or not a string"}`}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := agentProfile(t, "permission", map[string]string{"AGENT_REQUESTS": mustJSON(tt.requests)})
			p.Permission = true
			p.PermissionTimeout = tt.permTO
			var got []*PermissionRequest
			o := run(t, context.Background(), p, Turn{Message: "m"}, Options{OnEvent: func(e Event) {
				if e.Kind != EventPermission {
					return
				}
				got = append(got, e.Request)
				if tt.answer != nil {
					tt.answer(e.Request)
				}
			}})
			var answers []string
			if err := json.Unmarshal([]byte(o.Reply), &answers); err != nil {
				t.Fatalf("reply %q: %v (stderr %q)", o.Reply, err, o.Stderr)
			}
			if diff := cmp.Diff(tt.want, answers); diff != "" {
				t.Errorf("responses the agent read (-want +got):\n%s", diff)
			}
			if tt.source == 0 {
				if len(got) != 0 {
					t.Errorf("malformed request reached the caller: %+v", got[0])
				}
				return
			}
			if len(got) != len(tt.requests) {
				t.Fatalf("caller saw %d requests, want %d", len(got), len(tt.requests))
			}
			r := got[0]
			if r.Tool == "" || r.Description != "d" || r.ToolUseID != "tu" || !json.Valid(r.Input) {
				t.Errorf("request fields %+v", r)
			}
			<-r.Done()
			if _, src := r.Answer(); src != tt.source {
				t.Errorf("answered by %v, want %v", src, tt.source)
			}
		})
	}
}

// TestPermissionIgnoredWhenOff: without permission: true requests are
// logged and ignored, and stdin is closed (P-PERM-1, P-STDIN-1).
func TestPermissionIgnoredWhenOff(t *testing.T) {
	p := agentProfile(t, "permission", map[string]string{"AGENT_REQUESTS": mustJSON([]string{
		`{"type":"permission_request","request_id":"1","tool_name":"Bash","input":{}}`})})
	log, logs := newLog()
	o := run(t, context.Background(), p, Turn{Message: "m"}, Options{Log: log, OnEvent: func(e Event) {
		if e.Kind == EventPermission {
			t.Error("permission event without permission: true")
		}
	}})
	if o.Reply != `["ERR: EOF"]` {
		t.Errorf("reply %q, want the agent to see EOF", o.Reply)
	}
	if !strings.Contains(logs.String(), "permission: true") {
		t.Errorf("no warning logged:\n%s", logs)
	}
}

// TestPermissionMootAfterError: an error event makes pending requests moot
// (AnsweredByTurnEnd) and keeps the session id (P-SID-5).
func TestPermissionMootAfterError(t *testing.T) {
	p := agentProfile(t, "permission-then-error", nil)
	p.Permission = true
	var req *PermissionRequest
	o := run(t, context.Background(), p, Turn{Message: "m"}, Options{OnEvent: func(e Event) {
		if e.Kind == EventPermission {
			req = e.Request
		}
	}})
	if o.ExitCode != 1 || o.Error != "gave up" || o.SessionID != "s-err" {
		t.Errorf("outcome exit %d error %q session %q", o.ExitCode, o.Error, o.SessionID)
	}
	if req == nil {
		t.Fatal("request not seen")
	}
	<-req.Done()
	if d, src := req.Answer(); src != AnsweredByTurnEnd || d.Allow {
		t.Errorf("answer %+v by %v, want deny by turn end", d, src)
	}
	if err := req.Respond(Decision{Allow: true}); !errors.Is(err, ErrAlreadyAnswered) {
		t.Errorf("Respond after the turn: %v", err)
	}
}

// TestTimeoutDeniesPendingPermission: F-PERM-3, deny with a timeout message
// first, then SIGTERM; outcome 124 with partials kept (P-TIME-1/2).
func TestTimeoutDeniesPendingPermission(t *testing.T) {
	t.Parallel()
	p := agentProfile(t, "permission-hang", nil)
	p.Permission = true
	// Long enough for the agent to start and ask.
	p.Timeout = 2 * time.Second
	var req *PermissionRequest
	o := run(t, context.Background(), p, Turn{Message: "m"}, Options{CollectPartials: true, OnEvent: func(e Event) {
		if e.Kind == EventPermission {
			req = e.Request
		}
	}})
	if !o.TimedOut || o.ExitCode != 124 || o.Failure() != "timed out after 2s" {
		t.Errorf("outcome timedOut=%v exit=%d failure=%q", o.TimedOut, o.ExitCode, o.Failure())
	}
	want := []string{`answer="{\"type\":\"permission_response\",\"request_id\":\"p1\",\"behavior\":\"deny\",\"message\":\"the turn timed out after 2s\"}" err=<nil>`}
	if diff := cmp.Diff(want, o.Partials); diff != "" {
		t.Errorf("partials (-want +got):\n%s", diff)
	}
	if _, src := req.Answer(); src != AnsweredByTurnEnd {
		t.Errorf("answered by %v", src)
	}
}

// TestTimeout: 124, partials already received kept, the agent's SIGTERM
// flush still arrives, session id kept (P-TIME-1/2, P-EXIT-1).
func TestTimeout(t *testing.T) {
	t.Parallel()
	p := agentProfile(t, "hang", nil)
	// Long enough for the agent to start and install its SIGTERM handler.
	p.Timeout = 2 * time.Second
	o := run(t, context.Background(), p, Turn{Message: "m"}, Options{CollectPartials: true})
	if !o.TimedOut || o.ExitCode != 124 || o.SessionID != "hang-sess" {
		t.Errorf("outcome timedOut=%v exit=%d session=%q", o.TimedOut, o.ExitCode, o.SessionID)
	}
	if diff := cmp.Diff([]string{"working", "bye"}, o.Partials); diff != "" {
		t.Errorf("partials (-want +got):\n%s", diff)
	}
}

// TestSIGKILLAfterGrace: an agent ignoring SIGTERM is killed after
// kill_grace_secs (P-TIME-1, D-STOP-1). The stop comes from the caller once
// the agent has announced it handles SIGTERM, so no timing is involved.
func TestSIGKILLAfterGrace(t *testing.T) {
	t.Parallel()
	p := agentProfile(t, "ignore-term", nil)
	p.KillGrace = 200 * time.Millisecond
	log, logs := newLog()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	errUser := errors.New("stop")
	o := run(t, ctx, p, Turn{Message: "m"}, Options{CollectPartials: true, Log: log, OnEvent: func(e Event) {
		if e.Text == "ready" {
			cancel(errUser)
		}
	}})
	if o.ExitCode != 143 || !errors.Is(o.Stopped, errUser) {
		t.Errorf("exit %d stopped %v, want 143", o.ExitCode, o.Stopped)
	}
	if diff := cmp.Diff([]string{"ready", "term-ignored"}, o.Partials); diff != "" {
		t.Errorf("partials (-want +got):\n%s", diff)
	}
	if !strings.Contains(logs.String(), "ignored SIGTERM") {
		t.Errorf("no SIGKILL in the log:\n%s", logs)
	}
}

// TestStop: the caller's cancel stops the turn: 143, or 130 for
// ErrInterrupted, Stopped = the cause (D-STOP-1).
func TestStop(t *testing.T) {
	errUser := errors.New("stopped by user")
	for _, tt := range []struct {
		cause error
		code  int
	}{{errUser, 143}, {ErrInterrupted, 130}} {
		t.Run(strconv.Itoa(tt.code), func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			p := agentProfile(t, "hang", nil)
			o := run(t, ctx, p, Turn{Message: "m"}, Options{CollectPartials: true, OnEvent: func(e Event) {
				cancel(tt.cause) // stop once the agent is streaming
			}})
			if o.ExitCode != tt.code || !errors.Is(o.Stopped, tt.cause) || o.Failure() != "stopped" {
				t.Errorf("exit %d stopped %v failure %q", o.ExitCode, o.Stopped, o.Failure())
			}
			if len(o.Partials) == 0 || o.Partials[0] != "working" {
				t.Errorf("partials %q", o.Partials)
			}
		})
	}
}

// TestGrandchildHoldingStdout: the agent exits while a process it started
// keeps stdout open; the turn still ends promptly and nothing it started is
// left running (D-GROUP-1).
func TestGrandchildHoldingStdout(t *testing.T) {
	p := agentProfile(t, "grandchild", nil)
	p.Timeout = 20 * time.Second
	o := run(t, context.Background(), p, Turn{Message: "m"}, Options{})
	if o.Failed() {
		t.Fatalf("turn failed: %s", o.Failure())
	}
	if o.Duration > 10*time.Second {
		t.Errorf("turn took %v, want it to end soon after the agent exited", o.Duration)
	}
	pid, err := strconv.Atoi(o.Reply)
	if err != nil {
		t.Fatalf("reply %q", o.Reply)
	}
	// Run has SIGKILLed the group and seen the grandchild close its end of
	// the pipes, which it does on its way out; its exit may still be
	// completing, so wait for it (on a pidfd), boundedly.
	if !exitsWithin(t, pid, 5*time.Second) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("grandchild %d still running after the turn", pid)
	}
}

// exitsWithin reports whether pid has exited (or is a zombie) within d.
func exitsWithin(t *testing.T, pid int, d time.Duration) bool {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err == unix.ESRCH {
		return true // gone and reaped
	}
	if err != nil {
		t.Fatalf("pidfd_open(%d): %v", pid, err)
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(d.Milliseconds()))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			t.Fatalf("poll pidfd: %v", err)
		}
		return n > 0 // readable once the process has exited
	}
}

// TestLongLines: a line of exactly 8 MiB is accepted; 8 MiB + 1 is skipped
// and the turn goes on (D-LINE-1).
func TestLongLines(t *testing.T) {
	for _, tt := range []struct {
		size    int
		partial bool
	}{{MaxLineBytes, true}, {MaxLineBytes + 1, false}} {
		t.Run(strconv.Itoa(tt.size), func(t *testing.T) {
			p := agentProfile(t, "bigline", map[string]string{"AGENT_SIZE": strconv.Itoa(tt.size)})
			var partialLen int
			o := run(t, context.Background(), p, Turn{Message: "m"}, Options{OnEvent: func(e Event) {
				partialLen += len(e.Text)
			}})
			if o.Failed() || (!tt.partial && o.Reply != "after big line") {
				t.Errorf("outcome failed=%v reply=%q", o.Failed(), o.Reply)
			}
			wantLen := 0
			if tt.partial {
				wantLen = tt.size - len(`{"type":"partial","text":""}`)
			}
			if partialLen != wantLen {
				t.Errorf("partial text %d bytes, want %d", partialLen, wantLen)
			}
		})
	}
}

// TestGarbageOutput: invalid UTF-8 and binary noise are ignored or decoded
// with replacement characters, never a crash (P-OUT-2, F-SID-1).
func TestGarbageOutput(t *testing.T) {
	p := agentProfile(t, "garbage", nil)
	o := run(t, context.Background(), p, Turn{Message: "m\xff"}, Options{CollectPartials: true})
	if o.Failed() {
		t.Fatalf("failed: %s", o.Failure())
	}
	if diff := cmp.Diff([]string{"bad \uFFFD\uFFFD utf8", "ok"}, o.Partials); diff != "" {
		t.Errorf("partials (-want +got):\n%s", diff)
	}
	if o.SessionID != "s-\uFFFD" || !strings.Contains(o.Stderr, "stderr noise") {
		t.Errorf("session %q stderr %q", o.SessionID, o.Stderr)
	}
}

// TestExitPrecedence: 124 > error event (1) > process code; a non-zero exit
// without an error event gets the generic message plus a diagnosis
// (P-EXIT-1, P-EXIT-2, P-ERR-1, F-HINT-1).
func TestExitPrecedence(t *testing.T) {
	errLine := `{"type":"error","message":"quota exceeded"}`
	tests := []struct {
		name     string
		lines    []string
		exit     string
		stderr   string
		code     int
		failure  string
		diagnose string
	}{
		{"error then exit 0", []string{errLine}, "0", "", 1, "quota exceeded", ""},
		{"error then exit 7", []string{errLine}, "7", "", 1, "quota exceeded", ""},
		{"exit 7 no error", nil, "7", "boom\n", 7, "the agent exited with status 7", ""},
		{"exit 2 with hint", nil, "2", "python3: can't open file '/x/a.py': [Errno 2] No such file or directory\n", 2,
			"the agent exited with status 2: agent script not found: /x/a.py. Check the profile's command path (likely a {{PROFILE_DIR}} issue or a typo).",
			"agent script not found: /x/a.py. Check the profile's command path (likely a {{PROFILE_DIR}} issue or a typo)."},
		{"empty error message", []string{`{"type":"error"}`}, "0", "", 1, "the agent reported an error", ""},
		{"success", []string{`{"type":"result","text":"ok","usage":{"input_tokens":12,"output_tokens":34,"cost_usd":0.5,"extra":1}}`}, "0", "", 0, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := agentProfile(t, "lines", map[string]string{"AGENT_LINES": mustJSON(tt.lines), "AGENT_EXIT": tt.exit, "AGENT_STDERR": tt.stderr})
			o := run(t, context.Background(), p, Turn{Message: "m"}, Options{})
			if o.ExitCode != tt.code || o.Failure() != tt.failure || o.Diagnosis != tt.diagnose {
				t.Errorf("exit %d failure %q diagnosis %q; want %d %q %q", o.ExitCode, o.Failure(), o.Diagnosis, tt.code, tt.failure, tt.diagnose)
			}
			if tt.code == 0 {
				want := &Usage{InputTokens: 12, OutputTokens: 34, CostUSD: 0.5}
				if diff := cmp.Diff(want, o.Usage); diff != "" {
					t.Errorf("usage (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestTimeoutBeatsError: P-EXIT-1, 124 even after an error event.
func TestTimeoutBeatsError(t *testing.T) {
	t.Parallel()
	p := agentProfile(t, "lines", map[string]string{"AGENT_LINES": mustJSON([]string{`{"type":"error","message":"x"}`})})
	p.Command = "/bin/sh"
	p.Args = []string{"-c", `echo '{"type":"error","message":"x"}'; exec sleep 60`}
	p.Timeout = 300 * time.Millisecond
	o := run(t, context.Background(), p, Turn{Message: "m"}, Options{})
	if o.ExitCode != 124 || !o.Errored || o.Failure() != "x" {
		t.Errorf("exit %d errored %v failure %q, want 124 after the error event", o.ExitCode, o.Errored, o.Failure())
	}
}

// TestStartFailures: a command that cannot start is exit 127 with a
// diagnosis, never a Run error.
func TestStartFailures(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, command, cwd, want string
	}{
		{"not on PATH", "no-such-agent-xyz", "", `agent command "no-such-agent-xyz" not found on PATH`},
		{"missing path", filepath.Join(dir, "missing"), "", `agent command "` + filepath.Join(dir, "missing") + `" not found`},
		{"not executable", notExec, "", `agent command "` + notExec + `" is not executable (permission denied)`},
		{"bad cwd", "/bin/true", filepath.Join(dir, "nope"), `agent working directory "` + filepath.Join(dir, "nope") + `" cannot be used: no such file or directory`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Profile{Command: tt.command, Cwd: tt.cwd}
			o := run(t, context.Background(), p, Turn{Message: "m"}, Options{Environ: []string{"PATH=/usr/bin:/bin"}})
			if o.ExitCode != 127 || o.Diagnosis != tt.want || o.StartError == nil {
				t.Errorf("exit %d diagnosis %q, want 127 %q", o.ExitCode, o.Diagnosis, tt.want)
			}
			if !strings.HasPrefix(o.Failure(), "the agent could not start: ") {
				t.Errorf("failure %q", o.Failure())
			}
		})
	}
}

// TestStoppedBeforeStart: a ctx already done starts nothing.
func TestStoppedBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(ErrInterrupted)
	o := run(t, ctx, &Profile{Command: "/nonexistent"}, Turn{Message: "m"}, Options{})
	if o.ExitCode != 130 || !errors.Is(o.Stopped, ErrInterrupted) {
		t.Errorf("exit %d stopped %v", o.ExitCode, o.Stopped)
	}
}

// TestStreamingRoles: role defaults to output; thinking partials are
// forwarded but do not replace a result body (P-PART-2, F-RES-1).
func TestStreamingRoles(t *testing.T) {
	p := agentProfile(t, "lines", map[string]string{"AGENT_LINES": mustJSON([]string{
		`{"type":"partial","text":"hmm","role":"thinking"}`,
		`{"type":"result","text":"the body"}`,
	})})
	var roles []string
	o := run(t, context.Background(), p, Turn{Message: "m"}, Options{OnEvent: func(e Event) { roles = append(roles, e.Role) }})
	if o.Reply != "the body" || o.PartialsSeen || o.Partials != nil {
		t.Errorf("reply %q partialsSeen %v partials %q", o.Reply, o.PartialsSeen, o.Partials)
	}
	if diff := cmp.Diff([]string{"thinking"}, roles); diff != "" {
		t.Errorf("roles (-want +got):\n%s", diff)
	}
}

// TestDotSessionIDsRejected: "." and ".." are refused like any other invalid
// session id — dropped with a warning, an earlier valid one kept (F-SID-1,
// P-SID-1, P-SID-4) — since a profile with {{SESSION_ID}} in a path would
// otherwise let the agent name the directory above.
func TestDotSessionIDsRejected(t *testing.T) {
	for _, id := range []string{".", ".."} {
		for _, first := range []string{"", "s-1"} {
			t.Run(id+"/after "+first, func(t *testing.T) {
				t.Parallel()
				var lines []string
				if first != "" {
					lines = append(lines, mustJSON(map[string]string{"type": "partial", "text": "a", "session_id": first}))
				}
				lines = append(lines, mustJSON(map[string]string{"type": "result", "text": "ok", "session_id": id}))
				var logs strings.Builder
				p := agentProfile(t, "lines", map[string]string{"AGENT_LINES": mustJSON(lines)})
				o := run(t, context.Background(), p, Turn{Message: "m"}, Options{Log: slog.New(slog.NewTextHandler(&logs, nil))})
				if o.SessionID != first {
					t.Errorf("session id %q, want %q", o.SessionID, first)
				}
				if !strings.Contains(logs.String(), "F-SID-1") {
					t.Errorf("no F-SID-1 warning in the log:\n%s", logs.String())
				}
			})
		}
	}
}
