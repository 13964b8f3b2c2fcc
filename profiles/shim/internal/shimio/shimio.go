// Package shimio holds what every agent CLI shim shares: reading the
// AgentProc turn line, writing AgentProc events with the session id stamped
// on each, starting the wrapped CLI with a clear error when it is missing,
// and reading its NDJSON output line by line.
package shimio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"

	"github.com/agentbridge/agentbridge/internal/execpath"
	"github.com/agentbridge/agentbridge/internal/lines"
	"github.com/agentbridge/agentbridge/internal/tail"
)

// MaxLineBytes is the longest CLI stdout line a shim reads; a longer line
// (a huge tool result, say) is skipped. Claude's init line alone is 2–3 KB.
const MaxLineBytes = 64 << 20

// Turn is the AgentProc 0.4 turn line (P-TURN-1) as a shim reads it.
type Turn struct {
	Type            string       `json:"type"`
	Message         string       `json:"message"`
	SessionID       string       `json:"session_id"`
	SessionName     string       `json:"session_name"`
	Attachments     []Attachment `json:"attachments"`
	Permission      bool         `json:"permission"`
	ProtocolVersion string       `json:"protocol_version"`
}

// Attachment is one attachment of a turn (D-ATT-1).
type Attachment struct {
	Kind string `json:"kind"`
	URL  string `json:"url"`
	Name string `json:"name"`
	MIME string `json:"mime"`
	Size int64  `json:"size"`
}

// ReadTurn reads the first line of r as the turn object. r keeps buffering
// whatever follows (permission responses).
func ReadTurn(r *bufio.Reader) (Turn, error) {
	line, err := r.ReadBytes('\n')
	if err != nil && (err != io.EOF || len(bytes.TrimSpace(line)) == 0) {
		return Turn{}, fmt.Errorf("read turn: %w", err)
	}
	var t Turn
	if err := json.Unmarshal(line, &t); err != nil {
		return Turn{}, fmt.Errorf("read turn: %w", err)
	}
	if t.Type != "turn" {
		return Turn{}, fmt.Errorf("read turn: first line has type %q, want \"turn\"", t.Type)
	}
	return t, nil
}

// Prompt is the text handed to the CLI: the message, then one line per
// attachment naming the local file, since these CLIs take files by path.
func (t Turn) Prompt() string {
	if len(t.Attachments) == 0 {
		return t.Message
	}
	var b strings.Builder
	b.WriteString(t.Message)
	if t.Message != "" {
		b.WriteString("\n\n")
	}
	b.WriteString("Attached files:")
	for _, a := range t.Attachments {
		loc := a.URL
		if u, err := url.Parse(a.URL); err == nil && u.Scheme == "file" {
			loc = u.Path
		}
		b.WriteString("\n- ")
		b.WriteString(loc)
		var meta []string
		for _, m := range []string{a.Kind, a.Name, a.MIME} {
			if m != "" {
				meta = append(meta, m)
			}
		}
		if len(meta) > 0 {
			b.WriteString(" (" + strings.Join(meta, ", ") + ")")
		}
	}
	return b.String()
}

// ValidResumeID reports whether a turn's session id may be handed to a CLI
// as a resume argument: non-empty, not flag-like, and without whitespace,
// path separators or control characters.
func ValidResumeID(id string) bool {
	if id == "" || strings.HasPrefix(id, "-") || strings.ContainsAny(id, `/\`) {
		return false
	}
	for _, r := range id {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// Usage is the usage object of a result or error (F-USAGE-1); zero fields
// are left out.
type Usage struct {
	InputTokens              int64   `json:"input_tokens,omitempty"`
	OutputTokens             int64   `json:"output_tokens,omitempty"`
	TotalTokens              int64   `json:"total_tokens,omitempty"`
	CacheReadInputTokens     int64   `json:"cache_read_input_tokens,omitempty"`
	CacheCreationInputTokens int64   `json:"cache_creation_input_tokens,omitempty"`
	ReasoningTokens          int64   `json:"reasoning_tokens,omitempty"`
	DurationMS               float64 `json:"duration_ms,omitempty"`
	CostUSD                  float64 `json:"cost_usd,omitempty"`
}

// Emitter writes AgentProc events to the shim's stdout, one line per write,
// each stamped with the session id once it is known (P-SID-2). It is safe
// for concurrent use. After the first error or result it writes no further
// terminal event (P-RES-1, P-ERR-2).
type Emitter struct {
	mu      sync.Mutex
	w       io.Writer
	sid     string
	ended   bool
	errored bool
}

// NewEmitter returns an Emitter writing to w.
func NewEmitter(w io.Writer) *Emitter { return &Emitter{w: w} }

// SetSession records the CLI's session id; the first valid one sticks
// (P-SID-4). Valid means the shim could resume it next turn
// (ValidResumeID), which is stricter than the bridge's own rule (F-SID-1):
// an id reported but never resumable would silently start a fresh session
// on every turn.
func (e *Emitter) SetSession(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.sid == "" && ValidResumeID(id) {
		e.sid = id
	}
}

// Ended reports whether a result or an error was written.
func (e *Emitter) Ended() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ended
}

// Errored reports whether an error was written.
func (e *Emitter) Errored() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.errored
}

type event struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitempty"`
	Role      string          `json:"role,omitempty"`
	Message   *string         `json:"message,omitempty"`
	RequestID string          `json:"request_id,omitempty"`
	ToolName  string          `json:"tool_name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	Desc      string          `json:"description,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Usage     *Usage          `json:"usage,omitempty"`
	SessionID string          `json:"session_id,omitempty"`
}

func (e *Emitter) write(ev event) error {
	ev.SessionID = e.sid
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ev); err != nil {
		return fmt.Errorf("encode %s event: %w", ev.Type, err)
	}
	if _, err := e.w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write %s event: %w", ev.Type, err)
	}
	return nil
}

// Partial writes a partial (P-PART-1); role "" means output. Empty text and
// anything after the turn ended are dropped.
func (e *Emitter) Partial(text, role string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if text == "" || e.ended {
		return nil
	}
	if role == "output" {
		role = ""
	}
	return e.write(event{Type: "partial", Text: &text, Role: role})
}

// Result writes the turn's result unless it already ended.
func (e *Emitter) Result(text string, u *Usage) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended {
		return nil
	}
	e.ended = true
	return e.write(event{Type: "result", Text: &text, Usage: u})
}

// Error writes the turn's error unless it already ended (P-ERR-1).
func (e *Emitter) Error(msg string, u *Usage) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended {
		return nil
	}
	e.ended, e.errored = true, true
	return e.write(event{Type: "error", Message: &msg, Usage: u})
}

// PermissionRequest writes a permission_request (P-PERM-2, F-PERM-1).
func (e *Emitter) PermissionRequest(id, tool string, input json.RawMessage, desc, toolUseID string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended {
		return nil
	}
	if len(bytes.TrimSpace(input)) == 0 || bytes.TrimSpace(input)[0] != '{' {
		input = json.RawMessage(`{}`)
	}
	return e.write(event{Type: "permission_request", RequestID: id, ToolName: tool, Input: input, Desc: desc, ToolUseID: toolUseID})
}

// PermissionResponse is one permission_response line from the bridge
// (F-PERM-2).
type PermissionResponse struct {
	Type         string          `json:"type"`
	RequestID    string          `json:"request_id"`
	Behavior     string          `json:"behavior"`
	UpdatedInput json.RawMessage `json:"updated_input"`
	Message      string          `json:"message"`
}

// ReadResponses calls fn with each permission_response line read from r
// until r ends. Other lines are ignored.
func ReadResponses(r *bufio.Reader, fn func(PermissionResponse)) {
	_ = ReadLines(r, 1<<20, func(line []byte) error {
		var pr PermissionResponse
		if json.Unmarshal(line, &pr) == nil && pr.Type == "permission_response" && pr.RequestID != "" {
			fn(pr)
		}
		return nil
	})
}

// ReadLines calls fn with each line of r (without the newline and a
// trailing carriage return) that is not blank, skipping lines longer than
// max (package lines). It returns fn's first error, or nil at the end of r
// (or when reading it fails).
func ReadLines(r io.Reader, max int, fn func([]byte) error) error {
	var fnErr error
	_ = lines.Read(r, max, func(line []byte) error {
		if len(bytes.TrimSpace(line)) == 0 {
			return nil
		}
		fnErr = fn(line)
		return fnErr
	}, nil)
	return fnErr
}

// CLI names the wrapped command and how to install it, for the error a
// user sees when it is missing.
type CLI struct {
	Bin     string // command name or path
	Install string // e.g. "npm i -g @anthropic-ai/claude-code"
}

// NotFoundMessage is the one clear error for a CLI missing from PATH.
func (c CLI) NotFoundMessage() string {
	return fmt.Sprintf("%s not found on PATH — install with %s", c.Bin, c.Install)
}

// Proc is a started CLI process.
type Proc struct {
	cmd    *exec.Cmd
	Stdin  io.WriteCloser
	Stdout io.ReadCloser
	tail   *tail.Buffer
}

// ErrNotFound marks a CLI that is not on PATH.
var ErrNotFound = errors.New("not found on PATH")

// Start starts the CLI with args and the environment environ (PATH is
// looked up there; empty variables are left out). Its stderr goes to stderr and into a tail kept for
// error messages. When ctx ends the CLI gets SIGTERM, then SIGKILL after a
// grace period.
func Start(ctx context.Context, c CLI, args, environ []string, stderr io.Writer) (*Proc, error) {
	path, err := lookPath(c.Bin, environ)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Args[0] = c.Bin
	cmd.Env = dropEmpty(environ)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 3 * time.Second
	stderrTail := &tail.Buffer{Max: 8 << 10}
	if stderr == nil {
		stderr = io.Discard
	}
	cmd.Stderr = io.MultiWriter(stderr, stderrTail)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Bin, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Bin, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Bin, err)
	}
	return &Proc{cmd: cmd, Stdin: stdin, Stdout: stdout, tail: stderrTail}, nil
}

// Setup is what a shim knows once its turn has begun.
type Setup struct {
	CLI  CLI           // with --bin applied
	Turn Turn          // the turn line
	In   *bufio.Reader // stdin after the turn line: permission responses
	Args []string      // arguments after the shim's flags, passed to the CLI
}

// Begin starts a shim's turn: it parses args (--bin, and any flags define
// adds), reads the turn line and checks that its session id, if any, can
// be resumed. A failure becomes the turn's error event and is returned.
func Begin(em *Emitter, name string, c CLI, stdin io.Reader, stderr io.Writer, args []string, define func(*flag.FlagSet)) (Setup, error) {
	fs := flag.NewFlagSet("shim "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	bin := fs.String("bin", c.Bin, "the `command` to run (name on PATH or a path)")
	if define != nil {
		define(fs)
	}
	if err := fs.Parse(args); err != nil {
		return Setup{}, em.Fail(fmt.Sprintf("shim %s: %v", name, err))
	}
	c.Bin = *bin
	in := bufio.NewReaderSize(stdin, 64<<10)
	turn, err := ReadTurn(in)
	if err != nil {
		return Setup{}, em.Fail(fmt.Sprintf("shim %s: %v", name, err))
	}
	if turn.SessionID != "" && !ValidResumeID(turn.SessionID) {
		return Setup{}, em.Fail(fmt.Sprintf("shim %s: session id %q cannot be resumed", name, turn.SessionID))
	}
	return Setup{CLI: c, Turn: turn, In: in, Args: fs.Args()}, nil
}

// Launch starts the CLI like Start; when it cannot, it reports why as the
// turn's error event (the one clear "not found on PATH — install with …"
// for a missing CLI) and returns that error.
func Launch(ctx context.Context, em *Emitter, c CLI, args, environ []string, stderr io.Writer) (*Proc, error) {
	p, err := Start(ctx, c, args, environ, stderr)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, em.Fail(c.NotFoundMessage())
	case err != nil:
		return nil, em.Fail(fmt.Sprintf("%s could not start: %v", c.Bin, err))
	}
	return p, nil
}

// Finish ends the turn once the CLI's stdout was read (readErr is what
// reading it returned): it waits for the CLI to exit and returns nil after
// a result, ErrTurnFailed (wrapped) after an error event, or ctx's error
// when the bridge stopped the turn (the bridge reports that itself). A CLI
// that ended without a terminal event gets an error event: explain's
// message for its exit code when it has one (nil or "" otherwise), else
// its exit status and the end of its stderr.
func (p *Proc) Finish(ctx context.Context, em *Emitter, c CLI, readErr error, explain func(code int) string) error {
	code, waitErr := p.Wait()
	switch {
	case ctx.Err() != nil && !em.Ended():
		return ctx.Err()
	case readErr != nil:
		return em.Fail(fmt.Sprintf("%s: %v", c.Bin, readErr))
	case em.Ended() && em.Errored():
		return ErrTurnFailed
	case em.Ended():
		return nil
	}
	if explain != nil {
		if msg := explain(code); msg != "" {
			return em.Fail(msg)
		}
	}
	if waitErr != nil {
		return em.Fail(fmt.Sprintf("%s: %v", c.Bin, waitErr))
	}
	return em.Fail(p.ExitMessage(c.Bin, code))
}

// Wait waits for the CLI to exit (after its stdout was read to the end) and
// returns its exit code, -1 when it died from a signal.
func (p *Proc) Wait() (int, error) {
	err := p.cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee):
		return ee.ExitCode(), nil
	}
	return -1, err
}

// StderrTail returns the last lines the CLI wrote to stderr, trimmed.
func (p *Proc) StderrTail() string { return strings.ToValidUTF8(p.tail.String(), "") }

// ExitMessage is the error for a CLI that ended without a terminal event:
// its exit status and the end of its stderr.
func (p *Proc) ExitMessage(name string, code int) string {
	msg := fmt.Sprintf("%s exited with status %d", name, code)
	if code < 0 {
		msg = name + " was killed"
	}
	if t := lastLines(p.StderrTail(), 5, 600); t != "" {
		msg += ": " + t
	}
	return msg
}

func lastLines(s string, n, max int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	out := strings.TrimSpace(strings.Join(lines, "\n"))
	if len(out) > max {
		out = "…" + out[len(out)-max:]
	}
	return out
}

// dropEmpty removes variables set to "": a profile's ${VAR} expands an
// unset credential to "", and a CLI would take ANTHROPIC_API_KEY="" as a
// (wrong) key instead of falling back to its stored login.
func dropEmpty(environ []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" && v != "" {
			out = append(out, kv)
		}
	}
	return out
}

// lookPath finds bin on the PATH of environ (not the shim's own), by the
// agent runner's rule (package execpath); a path must name an existing
// file. Every failure is ErrNotFound, for the one "install with" message.
func lookPath(bin string, environ []string) (string, error) {
	if strings.Contains(bin, "/") {
		if fi, err := os.Stat(bin); err != nil || fi.IsDir() {
			return "", fmt.Errorf("%s: %w", bin, ErrNotFound)
		}
		return bin, nil
	}
	path, err := execpath.Look(bin, execpath.PathOf(environ))
	if err != nil {
		return "", fmt.Errorf("%s: %w", bin, ErrNotFound)
	}
	return path, nil
}

// ErrTurnFailed is returned by a shim's Run when the turn ended with an
// error event: the message was already written to stdout, so the caller
// only sets the exit status.
var ErrTurnFailed = errors.New("turn failed")

// Fail writes msg as the turn's error event and returns ErrTurnFailed
// wrapped with msg.
func (e *Emitter) Fail(msg string) error {
	if err := e.Error(msg, nil); err != nil {
		return err
	}
	return fmt.Errorf("%w: %s", ErrTurnFailed, msg)
}
