package agentproc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// ProtocolVersion is the wire version written in every turn line (P-TURN-1).
const ProtocolVersion = "0.4"

// Limits on what the runner keeps from the agent.
const (
	// MaxLineBytes is the longest stdout line accepted, without its newline
	// (D-LINE-1). A longer line is skipped with a warning.
	MaxLineBytes = 8 << 20
	// StderrTailBytes is how much of the end of stderr Outcome.Stderr keeps.
	StderrTailBytes = 64 << 10
)

// Grace periods the protocol leaves to the bridge. They are variables so
// tests can see their effect; they are not meant to be tuned per call.
var (
	// drainTimeout bounds how long stdout is read after the agent exited,
	// for when a descendant still holds it open.
	drainTimeout = 500 * time.Millisecond
	// pipeGrace bounds the last reads and writes on the agent's pipes once
	// its process group is gone or the turn is ending.
	pipeGrace = 250 * time.Millisecond
)

// ErrEmptyTurn is returned by Run for a turn with no message and no
// attachment (F-EMPTY-1); nothing is started.
var ErrEmptyTurn = errors.New("empty turn: no message and no attachment")

// ErrInterrupted as a context cause means an interactive Ctrl-C: outcome 130
// instead of 143.
var ErrInterrupted = errors.New("interrupted")

// errNotOnPath marks a bare command name that is on no PATH directory.
var errNotOnPath = errors.New("not found on PATH")

// Attachment is one file handed to the agent in the turn line (D-ATT-1).
type Attachment struct {
	Kind string `json:"kind"`
	URL  string `json:"url"`
	Name string `json:"name,omitempty"`
	MIME string `json:"mime,omitempty"`
	Size int64  `json:"size,omitempty"`
}

// Turn is the input of one turn.
type Turn struct {
	Message     string
	SessionID   string // previous turn's agent session id; "" = new session
	SessionName string // "" → "default"
	Attachments []Attachment
}

// EventKind says what an Event carries.
type EventKind int

// Event kinds.
const (
	EventPartial    EventKind = iota + 1 // a forwarded partial (only when Streaming, and not after an error)
	EventPermission                      // a permission request to answer (only when Permission)
)

// Event is something the caller sees while the turn runs.
type Event struct {
	Kind    EventKind
	Text    string             // EventPartial: the chunk
	Role    string             // EventPartial: "output" (default when absent) or the agent's role string, e.g. "thinking"
	Request *PermissionRequest // EventPermission
}

// Options are the caller's side of a turn.
type Options struct {
	Log             *slog.Logger // nil → discard
	Environ         []string     // bridge environment for the infra set and ${VAR}; nil → os.Environ()
	OnEvent         func(Event)  // called in stdout order from one goroutine; must return quickly
	CollectPartials bool         // fill Outcome.Partials (conformance tests, run --json); off by default for bounded memory
}

// Outcome is what a turn produced.
type Outcome struct {
	Reply     string   // body per the result/streaming rules; exactly as scenarios.json "reply"
	SessionID string   // first valid non-empty session id (kept even on failure, P-SID-5)
	Error     string   // the agent's error event message ("" if none)
	ExitCode  int      // 0, 1, 124, 130, 143, the agent's own code, or 127 when it could not start
	Partials  []string // forwarded partial texts, only with CollectPartials
	Usage     *Usage   // from the accepted result/error, nil if none
	Duration  time.Duration
	TimedOut  bool   // timeout_secs hit (124)
	Stopped   error  // non-nil when the caller's ctx ended the turn: context.Cause(ctx)
	Stderr    string // last 64 KiB of stderr
	Diagnosis string // diagnostics.json hint, or e.g. `agent command "claude" not found on PATH`
	// PartialsSeen reports whether any partial was forwarded (so the caller knows the reply body was streamed).
	// Only output partials count: thinking (or other non-output roles) is not the body, so a turn that
	// streamed only its reasoning still has its result text in Reply. Reply != "" implies !PartialsSeen.
	PartialsSeen bool

	// Errored reports whether the agent sent an error event (its message may be "").
	Errored bool
	// TimeLimit is the turn's timeout, for the "timed out after" message.
	TimeLimit time.Duration
	// StartError is why the agent could not be started (ExitCode 127), nil otherwise.
	StartError error
}

// Failed reports whether the turn failed (ExitCode != 0).
func (o Outcome) Failed() bool { return o.ExitCode != 0 }

// Failure is the one plain-words message for a chat user when the turn
// failed, "" otherwise: the error event's message; "timed out after 30m0s";
// "stopped"; or for a non-zero exit with no error event a generic "the agent
// exited with status N" plus the diagnosis when there is one (P-EXIT-2).
func (o Outcome) Failure() string {
	if o.ExitCode == 0 {
		return ""
	}
	switch {
	case o.Errored && o.Error != "":
		return o.Error
	case o.Errored:
		return "the agent reported an error"
	case o.TimedOut:
		return "timed out after " + o.TimeLimit.String()
	case o.Stopped != nil:
		return "stopped"
	case o.StartError != nil:
		return "the agent could not start: " + o.Diagnosis
	}
	msg := "the agent exited with status " + strconv.Itoa(o.ExitCode)
	if o.Diagnosis != "" {
		msg += ": " + o.Diagnosis
	}
	return msg
}

// turnLine is the stdin turn object (P-TURN-1).
type turnLine struct {
	Type            string       `json:"type"`
	Message         string       `json:"message"`
	SessionID       string       `json:"session_id"`
	SessionName     string       `json:"session_name"`
	Attachments     []Attachment `json:"attachments"`
	Permission      bool         `json:"permission,omitempty"`
	ProtocolVersion string       `json:"protocol_version"`
}

func encodeTurn(t Turn, sessionName string, permission bool) []byte {
	atts := t.Attachments
	if atts == nil {
		atts = []Attachment{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// Encoding strings and ints cannot fail.
	_ = enc.Encode(turnLine{
		Type: "turn", Message: t.Message, SessionID: t.SessionID, SessionName: sessionName,
		Attachments: atts, Permission: permission, ProtocolVersion: ProtocolVersion,
	})
	return buf.Bytes()
}

// Run executes one turn. It returns an error only for caller mistakes (nil
// profile, ErrEmptyTurn); everything the agent does wrong, including failing
// to start, is reported in the Outcome. It returns only after the whole
// process group is gone and every goroutine it started has ended.
func Run(ctx context.Context, p *Profile, t Turn, opts Options) (Outcome, error) {
	if p == nil {
		return Outcome{}, errors.New("run turn: nil profile")
	}
	if p.Command == "" {
		return Outcome{}, errors.New("run turn: profile has no command")
	}
	if t.Message == "" && len(t.Attachments) == 0 {
		return Outcome{}, ErrEmptyTurn
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if p.Name != "" {
		log = log.With(slog.String("profile", p.Name))
	}
	environ := opts.Environ
	if environ == nil {
		environ = os.Environ()
	}
	bridge := environMap(environ)
	sessionName := t.SessionName
	if sessionName == "" {
		sessionName = "default"
	}
	ph := placeholders{profileDir: p.Dir(), sessionID: t.SessionID, sessionName: sessionName}
	argv, cwd := p.expand(ph)
	command := argv[0]
	env := childEnv(p, bridge, ph, cwd, log)

	out := Outcome{TimeLimit: p.timeout()}
	start := time.Now()
	if ctx.Err() != nil {
		out.Stopped = context.Cause(ctx)
		out.ExitCode = stopCode(out.Stopped)
		return out, nil
	}
	path, err := locate(command, cwd, env)
	if err != nil {
		return startFailed(out, command, err, start, log), nil
	}
	pr, err := startAgent(path, argv, env, cwd)
	if err != nil {
		return startFailed(out, command, err, start, log), nil
	}
	log.LogAttrs(ctx, slog.LevelDebug, "agent started", slog.Int("pid", pr.pid), slog.String("command", command))
	r := runner{p: p, opts: opts, log: log, pr: pr, out: out, start: start}
	r.run(ctx, encodeTurn(t, sessionName, p.Permission))
	return r.out, nil
}

// expand substitutes the placeholders in the command, its arguments and
// the working directory; a relative cwd is resolved against the profile's
// directory (P-PROF-4).
func (p *Profile) expand(ph placeholders) (argv []string, cwd string) {
	px := expander{ph: ph}
	argv = make([]string, 0, 1+len(p.Args))
	argv = append(argv, px.expand(p.Command))
	for _, a := range p.Args {
		argv = append(argv, px.expand(a))
	}
	cwd = px.expand(p.Cwd)
	if cwd != "" && !filepath.IsAbs(cwd) && p.Dir() != "" {
		cwd = filepath.Join(p.Dir(), cwd)
	}
	return argv, cwd
}

// locate checks the working directory and finds the command the way the
// child will (a bare name on the agent's PATH), so a failure can be told
// apart: the child's chdir failure would surface as a bare ENOENT, as if
// the command were missing.
func locate(command, cwd string, env []string) (string, error) {
	if cwd != "" {
		if _, err := os.Stat(cwd); err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = &fs.PathError{Op: "chdir", Path: cwd, Err: pe.Err}
			}
			return "", err
		}
	}
	return lookPath(command, environMap(env)["PATH"])
}

// Check reports whether the profile's agent could start here, without
// starting it: its working directory exists and its command is found (a
// bare name on the agent's PATH, which the profile's env may set) and is
// an executable file. The error is the diagnosis a turn would show. environ
// is the bridge's environment; nil means os.Environ().
func (p *Profile) Check(environ []string) error {
	if environ == nil {
		environ = os.Environ()
	}
	ph := placeholders{profileDir: p.Dir(), sessionName: "default"}
	argv, cwd := p.expand(ph)
	command := argv[0]
	env := childEnv(p, environMap(environ), ph, cwd, slog.New(slog.DiscardHandler))
	path, err := locate(command, cwd, env)
	if err == nil {
		var fi fs.FileInfo
		if fi, err = os.Stat(path); err == nil && (fi.IsDir() || fi.Mode()&0o111 == 0) {
			err = &fs.PathError{Op: "exec", Path: path, Err: fs.ErrPermission}
		}
	}
	if err != nil {
		return errors.New(diagnose(command, err))
	}
	return nil
}

// stopCode is the exit code of a turn the caller stopped (D-STOP-1).
func stopCode(cause error) int {
	if errors.Is(cause, ErrInterrupted) {
		return 130
	}
	return 143
}

// startFailed fills the outcome of an agent that could not be started.
func startFailed(out Outcome, command string, err error, start time.Time, log *slog.Logger) Outcome {
	out.ExitCode = 127
	out.StartError = err
	out.Duration = time.Since(start)
	out.Diagnosis = diagnose(command, err)
	log.LogAttrs(context.Background(), slog.LevelWarn, "agent did not start",
		slog.String("command", command), slog.String("diagnosis", out.Diagnosis))
	return out
}

// diagnose says in plain words why command could not start.
func diagnose(command string, err error) string {
	var pe *fs.PathError
	switch {
	case errors.Is(err, errNotOnPath):
		return fmt.Sprintf("agent command %q not found on PATH", command)
	case errors.As(err, &pe) && pe.Op == "chdir":
		return fmt.Sprintf("agent working directory %q cannot be used: %v", pe.Path, pe.Err)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("agent command %q not found", command)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Sprintf("agent command %q is not executable (permission denied)", command)
	case errors.Is(err, syscall.ENOEXEC):
		return fmt.Sprintf("agent command %q is not an executable this system can run (a script without a #! line?)", command)
	}
	return fmt.Sprintf("agent command %q could not start: %v", command, err)
}

// proc is a started agent and the bridge's ends of its pipes.
type proc struct {
	cmd                   *exec.Cmd
	pid                   int
	stdin, stdout, stderr *os.File
}

// startAgent spawns argv in its own process group (D-GROUP-1) with the
// bridge's pipe ends kept as pollable *os.File, so reads and writes can be
// bounded with deadlines when something holds them open.
func startAgent(path string, argv, env []string, cwd string) (*proc, error) {
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, fmt.Errorf("agent stdin: %w", err)
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("agent stdout: %w", err)
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("agent stderr: %w", err)
	}
	cmd := &exec.Cmd{
		Path: path, Args: argv, Env: env, Dir: cwd,
		Stdin: inR, Stdout: outW, Stderr: errW,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, err
	}
	// The child has its own copies; the bridge keeps only its ends, so EOF on
	// stdout means every writer is gone.
	inR.Close()
	outW.Close()
	errW.Close()
	return &proc{cmd: cmd, pid: cmd.Process.Pid, stdin: inW, stdout: outR, stderr: errR}, nil
}

// runner is one started turn.
type runner struct {
	p     *Profile
	opts  Options
	log   *slog.Logger
	pr    *proc
	out   Outcome
	start time.Time
}

func (r *runner) run(ctx context.Context, turn []byte) {
	p, pr, log := r.p, r.pr, r.log
	ts := &turnState{log: log, stdin: pr.stdin, permTimeout: p.permissionTimeout(), pending: map[string]*PermissionRequest{}, seen: map[string]bool{}}
	a := &assembler{p: p, opts: r.opts, log: log, ts: ts}
	var wg sync.WaitGroup

	// The turn line goes first: hold the stdin lock until it is written, so
	// no permission answer can overtake it.
	ts.stdinMu.Lock()
	wg.Go(func() {
		defer ts.stdinMu.Unlock()
		if _, err := ts.stdin.Write(turn); err != nil {
			log.LogAttrs(ctx, slog.LevelWarn, "writing the turn line failed", slog.Any("err", err))
		}
		if !p.Permission { // P-STDIN-1: EOF right after the turn line
			ts.stdin.Close()
			ts.stdin = nil
		}
	})
	exited := make(chan struct{})
	wg.Go(func() {
		defer close(exited)
		waitExited(pr.pid)
	})
	stderr := &tailBuffer{max: StderrTailBytes}
	stderrDone := make(chan struct{})
	wg.Go(func() {
		defer close(stderrDone)
		stderr.readFrom(pr.stderr)
	})
	readerDone := make(chan struct{})
	wg.Go(func() {
		defer close(readerDone)
		a.read(pr.stdout)
	})

	timeout := time.NewTimer(p.timeout())
	defer timeout.Stop()
	select {
	case <-exited:
	case <-timeout.C:
		r.out.TimedOut = true
	case <-ctx.Done():
		r.out.Stopped = context.Cause(ctx)
	}
	if r.out.TimedOut || r.out.Stopped != nil {
		msg := "the turn was stopped"
		if r.out.TimedOut {
			msg = "the turn timed out after " + p.timeout().String()
			log.LogAttrs(ctx, slog.LevelWarn, "turn timed out", slog.Duration("timeout", p.timeout()))
		} else {
			log.LogAttrs(ctx, slog.LevelInfo, "turn stopped", slog.Any("cause", r.out.Stopped))
		}
		// F-PERM-3: deny what is pending first, bounded in case the agent
		// no longer reads stdin; then SIGTERM → grace → SIGKILL (P-TIME-1).
		pr.stdin.SetWriteDeadline(time.Now().Add(pipeGrace))
		ts.end(msg, true)
		signalGroup(pr.pid, syscall.SIGTERM)
		grace := time.NewTimer(p.killGrace())
		select {
		case <-exited:
		case <-grace.C:
			log.LogAttrs(ctx, slog.LevelWarn, "agent ignored SIGTERM; killing its process group", slog.Duration("grace", p.killGrace()))
			signalGroup(pr.pid, syscall.SIGKILL)
			<-exited
		}
		grace.Stop()
	}

	// The agent has exited but is not reaped yet, so its process group id
	// cannot be reused: read what it left on stdout, bounded in case a
	// descendant holds the pipe, then kill whatever is left of the group.
	drain := time.NewTimer(drainTimeout)
	select {
	case <-readerDone:
	case <-drain.C:
		log.LogAttrs(ctx, slog.LevelWarn, "agent exited but its stdout is still open (a process it started?); ending the turn")
	}
	drain.Stop()
	signalGroup(pr.pid, syscall.SIGKILL) // D-GROUP-1
	// A descendant that left the group could still hold the pipes.
	pr.stdout.SetReadDeadline(time.Now().Add(pipeGrace))
	pr.stderr.SetReadDeadline(time.Now().Add(pipeGrace))
	<-readerDone
	<-stderrDone

	// Requests still pending are moot now: the agent is gone (nothing written).
	ts.end("", false)
	pr.stdin.SetWriteDeadline(time.Now()) // unblock a turn line nobody reads
	ts.closeStdin()
	waitErr := pr.cmd.Wait()
	ts.timers.Wait()
	wg.Wait()
	pr.stdout.Close()
	pr.stderr.Close()

	r.finish(a, stderr.String(), waitErr)
}

// finish assembles the outcome, applying exit precedence (P-EXIT-1):
// timeout 124 > (stop 143/130) > error event 1 > the process's own code.
func (r *runner) finish(a *assembler, stderr string, waitErr error) {
	o := &r.out
	o.Duration = time.Since(r.start)
	o.Stderr = stderr
	o.SessionID = a.sessionID
	o.Partials = a.partials
	o.PartialsSeen = a.outputSeen
	o.Usage = a.usage
	o.Errored = a.errored
	o.Error = a.errMsg
	if !a.errored && a.resultSeen && !a.outputSeen {
		o.Reply = a.resultText
	}
	code := 0
	if st := r.pr.cmd.ProcessState; st != nil {
		code = st.ExitCode()
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	} else if waitErr != nil {
		code = 1
	}
	switch {
	case o.TimedOut:
		o.ExitCode = 124
	case o.Stopped != nil:
		o.ExitCode = stopCode(o.Stopped)
	case a.errored:
		o.ExitCode = 1
	default:
		o.ExitCode = code
		if code != 0 {
			o.Diagnosis = Diagnose(stderr)
		}
	}
	r.log.LogAttrs(context.Background(), slog.LevelDebug, "turn ended",
		slog.Int("exit_code", o.ExitCode), slog.Int("agent_exit", code), slog.Duration("duration", o.Duration))
}

// waitExited blocks until the process has exited without reaping it
// (WNOWAIT), so the caller can still signal its process group safely.
//
// It waits on a pidfd through the runtime's poller, so a running turn does
// not pin an OS thread in a blocking waitid (with 1,000 turns that would be
// 1,000 threads and their stacks); without pidfds it falls back to that
// blocking waitid.
func waitExited(pid int) {
	if fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK); err == nil {
		// The child is not reaped before this returns, so pid still names it.
		f := os.NewFile(uintptr(fd), "pidfd")
		defer f.Close()
		if rc, err := f.SyscallConn(); err == nil {
			var waitErr error
			// The state is checked on every call, so an exit signalled
			// before the poller waits is not missed.
			err = rc.Read(func(fd uintptr) bool {
				for {
					var info unix.Siginfo // zeroed: Signo stays 0 while it runs
					waitErr = unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, nil)
					if waitErr != unix.EINTR {
						return waitErr != nil || info.Signo != 0
					}
				}
			})
			if err == nil && waitErr == nil {
				return
			}
		}
	}
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return
		}
	}
}

// signalGroup signals the agent's whole process group.
func signalGroup(pid int, sig syscall.Signal) {
	_ = syscall.Kill(-pid, sig) // ESRCH: the group is already gone
}

// turnState is the part of a turn shared between the stdout reader, the
// caller answering permission requests, permission timers and Run.
type turnState struct {
	log         *slog.Logger
	permTimeout time.Duration

	stdinMu sync.Mutex
	stdin   *os.File // nil once closed

	mu       sync.Mutex
	pending  map[string]*PermissionRequest
	seen     map[string]bool // request ids of this turn (F-PERM-1: unique)
	ended    bool
	endMsg   string
	endWrite bool
	timers   sync.WaitGroup // running or armed permission timers
}

func (ts *turnState) writeResponse(id string, d Decision) error {
	line, err := responseLine(id, d)
	if err != nil {
		return err
	}
	ts.stdinMu.Lock()
	defer ts.stdinMu.Unlock()
	if ts.stdin == nil {
		return errors.New("agent stdin is closed")
	}
	_, err = ts.stdin.Write(line)
	return err
}

func (ts *turnState) closeStdin() {
	ts.stdinMu.Lock()
	defer ts.stdinMu.Unlock()
	if ts.stdin != nil {
		ts.stdin.Close()
		ts.stdin = nil
	}
}

// settle forgets an answered request and disarms its timer.
func (ts *turnState) settle(r *PermissionRequest) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.pending[r.ID] == r {
		delete(ts.pending, r.ID)
	}
	if r.timer != nil && r.timer.Stop() {
		ts.timers.Done() // the callback will not run
	}
	r.timer = nil
}

// end answers every pending request, and every later one, as the turn's end:
// denied with msg when write is set (timeout, stop), otherwise moot.
func (ts *turnState) end(msg string, write bool) {
	ts.mu.Lock()
	if !ts.ended || write {
		ts.ended, ts.endMsg, ts.endWrite = true, msg, write
	}
	list := make([]*PermissionRequest, 0, len(ts.pending))
	for _, r := range ts.pending {
		list = append(list, r)
	}
	ts.mu.Unlock()
	for _, r := range list {
		if err := r.answer(Decision{Message: msg}, AnsweredByTurnEnd, write); err != nil && !errors.Is(err, ErrAlreadyAnswered) {
			ts.log.LogAttrs(context.Background(), slog.LevelWarn, "could not deny a pending permission request", slog.String("request_id", r.ID), slog.Any("err", err))
		}
	}
}

// add registers a new request and arms its permission timeout (D-PERM-1).
// It reports false when the turn is already ending; the request is then
// answered at once.
func (ts *turnState) add(r *PermissionRequest) bool {
	ts.mu.Lock()
	if ts.ended {
		msg, write := ts.endMsg, ts.endWrite
		ts.mu.Unlock()
		_ = r.answer(Decision{Message: msg}, AnsweredByTurnEnd, write)
		return false
	}
	ts.pending[r.ID] = r
	ts.timers.Add(1)
	d := ts.permTimeout
	r.timer = time.AfterFunc(d, func() {
		defer ts.timers.Done()
		err := r.answer(Decision{Message: "permission request timed out after " + d.String()}, AnsweredByPermissionTimeout, true)
		if err == nil {
			ts.log.LogAttrs(context.Background(), slog.LevelInfo, "permission request timed out; denied", slog.String("request_id", r.ID))
		} else if !errors.Is(err, ErrAlreadyAnswered) {
			ts.log.LogAttrs(context.Background(), slog.LevelWarn, "could not deny a timed-out permission request", slog.String("request_id", r.ID), slog.Any("err", err))
		}
	})
	ts.mu.Unlock()
	return true
}

// assembler turns classified stdout lines into events and the outcome's
// body, session id and error. Only the stdout reader goroutine touches it
// until Run reads the result.
type assembler struct {
	p    *Profile
	opts Options
	log  *slog.Logger
	ts   *turnState

	sessionID  string
	partials   []string
	outputSeen bool // an output partial was forwarded: the body was streamed
	resultSeen bool
	resultText string
	errored    bool
	errMsg     string
	usage      *Usage
}

// Buffer sizes of a running turn. An idle turn holds only the small ones;
// the stdout buffer grows for a long line (up to MaxLineBytes plus its
// newline) and shrinks back once that line is handled.
const (
	lineBufBytes   = 4 << 10
	stderrBufBytes = 512
)

// read reads stdout line by line with bounded memory: a line longer than
// MaxLineBytes is skipped, not buffered (D-LINE-1).
func (a *assembler) read(rd io.Reader) {
	tooLong := func(n int) {
		a.log.LogAttrs(context.Background(), slog.LevelWarn, "stdout line too long; skipped (D-LINE-1)",
			slog.Int("bytes", n), slog.Int("max", MaxLineBytes))
	}
	// readLines always ends with an error; io.EOF is the normal one.
	err := readLines(rd, MaxLineBytes, a.handle, tooLong)
	if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, os.ErrClosed) {
		a.log.LogAttrs(context.Background(), slog.LevelWarn, "reading agent stdout failed", slog.Any("err", err))
	}
}

// readLines calls handle with every line of rd (without its newline and a
// trailing carriage return), and tooLong with the size of every line
// longer than maxLine, which is skipped without being buffered. The line
// passed to handle is only valid during the call: lines are handled in
// place in the read buffer. It returns the error that ended the reading
// (io.EOF at the end).
func readLines(rd io.Reader, maxLine int, handle func([]byte), tooLong func(int)) error {
	buf := make([]byte, lineBufBytes)
	var (
		start, end int  // unhandled bytes are buf[start:end]
		scanned    int  // buf[start:start+scanned] has no newline
		skipping   bool // discarding the rest of an over-long line
		skipped    int  // bytes of that line discarded so far
	)
	for {
		n, err := rd.Read(buf[end:])
		end += n
		for {
			i := bytes.IndexByte(buf[start+scanned:end], '\n')
			if i < 0 {
				scanned = end - start
				break
			}
			nl := start + scanned + i
			switch {
			case skipping:
				tooLong(skipped + nl - start + 1)
				skipping = false
			case nl-start > maxLine:
				tooLong(nl - start + 1)
			default:
				handle(bytes.TrimSuffix(buf[start:nl], []byte{'\r'}))
			}
			start, scanned = nl+1, 0
		}
		switch {
		case skipping:
			skipped += end - start
			start, end, scanned = 0, 0, 0
		case end-start > maxLine: // no newline can make this line acceptable
			skipping, skipped = true, end-start
			start, end, scanned = 0, 0, 0
		}
		if len(buf) > lineBufBytes && end-start <= lineBufBytes/2 {
			// Done with the long line: do not hold its buffer.
			small := make([]byte, lineBufBytes)
			end = copy(small, buf[start:end])
			buf, start = small, 0
		} else if end == len(buf) {
			if start > 0 {
				end = copy(buf, buf[start:end])
				start = 0
			} else {
				bigger := make([]byte, min(2*len(buf), maxLine+1))
				copy(bigger, buf[:end])
				buf = bigger
			}
		}
		if err != nil {
			// At EOF, bytes after the last newline are a line too.
			switch {
			case skipping:
				tooLong(skipped)
			case end > start && end-start > maxLine:
				tooLong(end - start)
			case end > start:
				handle(bytes.TrimSuffix(buf[start:end], []byte{'\r'}))
			}
			return err
		}
	}
}

// handle applies one stdout line to the turn. Common lines take the
// allocation-light scanLine path; everything else goes through Classify.
func (a *assembler) handle(line []byte) {
	if s, ok := scanLine(line, a.sessionID); ok {
		a.apply(s, nil)
		return
	}
	l := Classify(line)
	if l.Kind == KindMalformed {
		a.log.LogAttrs(context.Background(), slog.LevelWarn, "ignored a malformed stdout line (P-OUT-2)", slog.String("line", clip(line, 200)))
		return
	}
	s := scanned{kind: l.Kind, role: l.Role, sessionID: l.SessionID}
	s.text, _ = l.Value.(string)
	a.apply(s, &l)
}

// apply applies one classified line; l is the full classification when
// there is one (it carries usage and a permission request's fields).
func (a *assembler) apply(l scanned, full *Line) {
	ctx := context.Background()
	if l.sessionID != "" {
		switch {
		case l.sessionID == a.sessionID:
		case !ValidSessionID(l.sessionID):
			a.log.LogAttrs(ctx, slog.LevelWarn, "dropped an invalid session_id (F-SID-1)", slog.String("session_id", clip([]byte(l.sessionID), 200)))
		case a.sessionID == "":
			a.sessionID = l.sessionID
		default:
			a.log.LogAttrs(ctx, slog.LevelWarn, "agent changed its session_id mid-turn; keeping the first (P-SID-4)",
				slog.String("first", a.sessionID), slog.String("later", clip([]byte(l.sessionID), 200)))
		}
	}
	var usage *Usage
	if full != nil {
		usage = full.Usage
	}
	switch l.kind {
	case KindPartial:
		if !a.p.Streaming || a.errored { // P-PART-1, P-ERR-1
			return
		}
		text := l.text
		role := l.role
		if role == "" {
			role = "output"
		}
		if role == "output" {
			a.outputSeen = true
		}
		if a.opts.CollectPartials {
			a.partials = append(a.partials, text)
		}
		if a.opts.OnEvent != nil {
			a.opts.OnEvent(Event{Kind: EventPartial, Text: text, Role: role})
		}
	case KindResult:
		switch {
		case a.errored:
			a.log.LogAttrs(ctx, slog.LevelWarn, "discarded a result after an error (P-ERR-2)")
		case a.resultSeen:
			a.log.LogAttrs(ctx, slog.LevelWarn, "ignored a second result (P-RES-1)")
		default:
			a.resultSeen = true
			a.resultText = l.text
			if usage != nil {
				a.usage = usage
			}
		}
	case KindError:
		if a.errored {
			a.log.LogAttrs(ctx, slog.LevelWarn, "ignored a second error event")
			return
		}
		a.errored = true
		a.errMsg = l.text
		if usage != nil {
			a.usage = usage
		}
		// Pending permission requests are moot once the turn has failed.
		a.ts.end("", false)
	case KindPermissionRequest:
		if full != nil {
			a.permission(*full)
		}
	}
}

// permission handles a permission_request line (F-PERM-1).
func (a *assembler) permission(l Line) {
	ctx := context.Background()
	if !a.p.Permission {
		a.log.LogAttrs(ctx, slog.LevelWarn, "ignored a permission_request: the profile does not set permission: true")
		return
	}
	id, idOK := jsonString(l.Fields["request_id"])
	idOK = idOK && ValidRequestID(id)
	tool, toolOK := jsonString(l.Fields["tool_name"])
	input := bytes.TrimSpace(l.Fields["input"])
	var problem string
	switch {
	case !idOK:
		problem = "request_id missing or invalid"
	case !toolOK || tool == "":
		problem = "tool_name missing or not a string"
	case len(input) == 0 || input[0] != '{':
		problem = "input missing or not an object"
	}
	if problem != "" {
		a.log.LogAttrs(ctx, slog.LevelWarn, "malformed permission_request", slog.String("problem", problem), slog.String("request_id", id))
		if idOK && !a.errored {
			a.ts.mu.Lock()
			dup := a.ts.seen[id]
			a.ts.seen[id] = true
			a.ts.mu.Unlock()
			if !dup {
				if err := a.ts.writeResponse(id, Decision{Message: "malformed permission request: " + problem}); err != nil {
					a.log.LogAttrs(ctx, slog.LevelWarn, "could not deny a malformed permission request", slog.Any("err", err))
				}
			}
		}
		return
	}
	a.ts.mu.Lock()
	dup := a.ts.seen[id]
	a.ts.seen[id] = true
	a.ts.mu.Unlock()
	if dup {
		a.log.LogAttrs(ctx, slog.LevelWarn, "ignored a permission_request reusing a request_id", slog.String("request_id", id))
		return
	}
	r := &PermissionRequest{ID: id, Tool: tool, Input: json.RawMessage(input), SessionID: l.SessionID, turn: a.ts, done: make(chan struct{})}
	r.Description, _ = jsonString(l.Fields["description"])
	r.ToolUseID, _ = jsonString(l.Fields["tool_use_id"])
	if !a.ts.add(r) {
		return // the turn is ending (error, timeout, stop): already answered
	}
	if a.opts.OnEvent != nil {
		a.opts.OnEvent(Event{Kind: EventPermission, Request: r})
	}
}

// clip shortens b for a log line, keeping it valid UTF-8.
func clip(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
	}
	return string(bytes.ToValidUTF8(b, []byte("\uFFFD")))
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
	cut bool // the start of the stream was dropped
}

func (t *tailBuffer) readFrom(r io.Reader) {
	// Read straight into the tail's spare room: an idle turn holds only
	// stderrBufBytes here.
	t.buf = make([]byte, 0, stderrBufBytes)
	for {
		if cap(t.buf)-len(t.buf) < stderrBufBytes/2 {
			t.buf = slices.Grow(t.buf, max(stderrBufBytes, min(len(t.buf), 32<<10)))
		}
		n, err := r.Read(t.buf[len(t.buf):cap(t.buf)])
		t.buf = t.buf[:len(t.buf)+n]
		if len(t.buf) > 2*t.max {
			t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
			t.cut = true
		}
		if err != nil {
			return
		}
	}
}

// String returns the tail, starting at a rune boundary.
func (t *tailBuffer) String() string {
	b := t.buf
	if len(b) > t.max || t.cut {
		b = b[max(0, len(b)-t.max):]
		for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
			b = b[1:]
		}
	}
	return string(b)
}
