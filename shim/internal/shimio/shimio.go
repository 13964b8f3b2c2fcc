// Package shimio holds what every agent CLI shim shares: reading the
// AgentProc turn line, writing AgentProc events with the session id stamped
// on each, starting the wrapped CLI with a clear error when it is missing,
// and reading its NDJSON output line by line.
package shimio

import (
	"bufio"
	"bytes"
	"cmp"
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

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/internal/execpath"
	"github.com/agentbridge/agentbridge/internal/lines"
	"github.com/agentbridge/agentbridge/internal/tail"
	"github.com/agentbridge/agentbridge/shim"
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

// Attachment is one attachment of a turn (D-ATT-1). filename and
// mime_type are the upstream names; the bridge still sends name and mime
// beside them for a release.
type Attachment struct {
	Kind     string `json:"kind"`
	URL      string `json:"url"`
	Filename string `json:"filename"`
	MIMEType string `json:"mime_type"`
	Name     string `json:"name"`
	MIME     string `json:"mime"`
	Size     int64  `json:"size"`
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
		for _, m := range []string{a.Kind, cmp.Or(a.Filename, a.Name), cmp.Or(a.MIMEType, a.MIME)} {
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

// Resumable reports whether a session id may be handed to a CLI as a
// resume argument. Claude Code, Codex, Gemini CLI and Qwen Code all name
// sessions by UUID, and all of them read anything else as something other
// than an id: claude and qwen as a session title, gemini as "latest" or an
// index into its list, codex exec as a thread name (it then silently starts
// a new thread). So only the canonical 8-4-4-4-12 hex form is passed on; it
// also can never read as a flag or a path.
func Resumable(id string) bool {
	if len(id) != 36 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
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

	hint         func(string) string // CLI.WithHint, set by Begin
	wrote        bool                // any event was written
	restarted    bool                // the resume notice was written
	outputAfter  bool                // an output partial followed the notice
	thinkingOpen bool                // the last thinking partial did not end a line
	outputOpen   bool                // the last output partial did not end a line

	files  *SendFile // send_file's spool, emptied before every event; nil when off
	stderr io.Writer // where a broken spool entry is reported
}

// NewEmitter returns an Emitter writing to w.
func NewEmitter(w io.Writer) *Emitter { return &Emitter{w: w} }

// SetSession records the CLI's session id; the first valid one sticks
// (P-SID-4). Valid means the shim could resume it next turn (Resumable),
// which is stricter than the bridge's own rule (F-SID-1): an id reported
// but never resumable would start a fresh session on every turn.
// Callers report an id only once the CLI has saved that session (P-SID-3),
// never the id of a session the CLI just failed to resume.
func (e *Emitter) SetSession(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.sid == "" && Resumable(id) {
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
	if err := e.flushFiles(); err != nil {
		return err
	}
	ev.SessionID = e.sid
	return e.encode(ev, ev.Type)
}

// encode writes v as one line.
func (e *Emitter) encode(v any, typ string) error {
	e.wrote = true
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode %s event: %w", typ, err)
	}
	if _, err := e.w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write %s event: %w", typ, err)
	}
	return nil
}

// Partial writes a partial (P-PART-1); role "" means output. Empty text and
// anything after the turn ended are dropped.
func (e *Emitter) Partial(text, role string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.partial(text, role)
}

func (e *Emitter) partial(text, role string) error {
	if text == "" || e.ended {
		return nil
	}
	// Files first: a caption reads after the text so far, not this one.
	if err := e.flushFiles(); err != nil {
		return err
	}
	switch role {
	case core.RoleOutput:
		role = ""
		fallthrough
	case "":
		e.outputAfter = e.restarted
		e.outputOpen = !strings.HasSuffix(text, "\n")
	case core.RoleThinking:
		e.thinkingOpen = !strings.HasSuffix(text, "\n")
	}
	return e.write(event{Type: "partial", Text: &text, Role: role})
}

// Result writes the turn's result unless it already ended. After the
// resume notice the text starts with the notice too, so a profile that does
// not stream shows it; and when no output partial followed the notice the
// text is streamed first, because a streamed reply never adds result.text
// (P-RES-2) and the notice alone would be the whole reply.
func (e *Emitter) Result(text string, u *Usage) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended {
		return nil
	}
	if e.restarted {
		if !e.outputAfter {
			if err := e.partial(text, ""); err != nil {
				return err
			}
		}
		text = ResumeNotice + "\n\n" + text
	}
	// Files sent go before the result, which ends the turn.
	if err := e.flushFiles(); err != nil {
		return err
	}
	e.ended = true
	return e.write(event{Type: "result", Text: &text, Usage: u})
}

// ResumeNotice is the one line a user sees when the turn's stored session
// could not be resumed and the CLI starts a new one instead.
const ResumeNotice = "↻ The previous agent session could not be resumed; starting a new one."

// Restarted tells the user, once, that the turn's session could not be
// resumed and a new one starts: ResumeNotice as an output partial (the
// result text repeats it, see Result).
func (e *Emitter) Restarted() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.restarted || e.ended {
		return nil
	}
	err := e.partial(ResumeNotice+"\n\n", "")
	e.restarted, e.outputAfter = true, false
	return err
}

// Wrote reports whether any event was written: a failed resume is retried
// only when the user has seen nothing of it.
func (e *Emitter) Wrote() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.wrote
}

// Tool shows a tool call as a thinking partial on a line of its own (see
// ToolLine), so `presenter.thinking: hide` hides it with the reasoning.
func (e *Emitter) Tool(name, detail string) error {
	line := ToolLine(name, detail)
	if line == "" {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.thinkingOpen {
		line = "\n" + line
	}
	return e.partial(line, core.RoleThinking)
}

// Error writes the turn's error unless it already ended (P-ERR-1).
func (e *Emitter) Error(msg string, u *Usage) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended {
		return nil
	}
	// Files sent before the failure still reach the chat: nothing after
	// an error does (P-ERR-1).
	if err := e.flushFiles(); err != nil {
		return err
	}
	e.ended, e.errored = true, true
	if e.hint != nil {
		msg = e.hint(msg)
	}
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
	// LostSession lists what the CLI prints (on stderr or in its error
	// event) when it cannot resume a session: it forgot it, or never had
	// it. Such a turn starts a new session instead (see Attempts).
	LostSession []string
	// NoLogin lists what the CLI prints when it has no (valid)
	// credentials; Login says what to do about it on the bridge's host.
	// An error matching NoLogin gets Login appended, since the chat user
	// reading it cannot fix it and the CLI's own advice ("Please run
	// /login") names a screen nobody on the chat side has.
	NoLogin []string
	Login   string
	// Retrying lists what the CLI writes on stderr when it retries a
	// model API it cannot reach (see Proc.Retrying).
	Retrying []string
	// Defaults are variables the CLI gets unless its environment sets
	// them (to a non-empty value): its own retry and timeout knobs, so an
	// unreachable API ends the turn in about a minute rather than many.
	Defaults []string
}

// WithHint returns msg with the CLI's Login hint appended when msg is
// the CLI saying it is not logged in.
func (c CLI) WithHint(msg string) string {
	if c.Login == "" || strings.Contains(msg, c.Login) {
		return msg
	}
	for _, s := range c.NoLogin {
		if strings.Contains(msg, s) {
			return msg + " — " + c.Login
		}
	}
	return msg
}

// Lost reports whether text is the CLI saying a session cannot be resumed.
func (c CLI) Lost(text string) bool {
	for _, s := range c.LostSession {
		if strings.Contains(text, s) {
			return true
		}
	}
	return false
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
	// Resuming says the CLI was asked to resume a session: Finish then
	// reads a failure that showed nothing and matches CLI.LostSession as
	// ErrSessionLost.
	Resuming bool
	stop     context.CancelFunc // ends the CLI (SIGTERM, then SIGKILL)
	retry    retryWatch
}

// ErrNotFound marks a CLI that is not on PATH.
var ErrNotFound = errors.New("not found on PATH")

// start starts the CLI with args and the environment environ (PATH is
// looked up there; empty variables are left out). Its stderr goes to
// stderr, into a tail kept for error messages, and past the CLI's
// Retrying patterns. When ctx ends (or the retry bound is hit) the CLI
// gets SIGTERM, then SIGKILL after a grace period.
func start(ctx context.Context, em *Emitter, c CLI, args, environ []string, stderr io.Writer) (*Proc, error) {
	path, err := lookPath(c.Bin, environ)
	if err != nil {
		return nil, err
	}
	em.mu.Lock()
	if em.files != nil {
		// Where the send_file MCP server the CLI starts puts files.
		environ = append(append([]string(nil), environ...), em.files.env()...)
	}
	em.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Args[0] = c.Bin
	cmd.Env = dropEmpty(withDefaults(environ, c.Defaults))
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 3 * time.Second
	p := &Proc{cmd: cmd, tail: &tail.Buffer{Max: 8 << 10}, stop: cancel,
		retry: retryWatch{em: em, bin: c.Bin, limit: RetryLimit(environ), stop: cancel, since: time.Now()}}
	if stderr == nil {
		stderr = io.Discard
	}
	ws := []io.Writer{stderr, p.tail}
	if len(c.Retrying) > 0 {
		ws = append(ws, &lineWriter{fn: func(line string) {
			for _, pat := range c.Retrying {
				if strings.Contains(line, pat) {
					p.Retrying(line)
				}
			}
		}})
	}
	cmd.Stderr = io.MultiWriter(ws...)
	if p.Stdin, err = cmd.StdinPipe(); err != nil {
		cancel()
		return nil, fmt.Errorf("start %s: %w", c.Bin, err)
	}
	if p.Stdout, err = cmd.StdoutPipe(); err != nil {
		cancel()
		return nil, fmt.Errorf("start %s: %w", c.Bin, err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, fmt.Errorf("start %s: %w", c.Bin, err)
	}
	return p, nil
}

// Setup is what a shim knows once its turn has begun.
type Setup struct {
	CLI    CLI           // with --bin applied
	Turn   Turn          // the turn line
	In     *bufio.Reader // stdin after the turn line: permission responses
	Args   []string      // arguments after the shim's flags, passed to the CLI
	Resume string        // the session to resume: the turn's, or "" for a new one
	// SendFile is the send_file tool to register with the CLI; nil when
	// off (--send-file=false). The shim closes it when the turn is over.
	SendFile *SendFile
}

// Begin starts a shim's turn: it parses args (--bin, and any flags define
// adds) and reads the turn line. A failure becomes the turn's error event
// and is returned. -h or --help prints the shim's usage on stderr and
// returns flag.ErrHelp, with no event: it asks for help, not a turn. A
// session id the CLI could not be handed (not Resumable: another agent's
// id, say) is not resumed: the turn starts a new session and says so
// (Emitter.Restarted).
func Begin(em *Emitter, name string, c CLI, stdin io.Reader, stderr io.Writer, args []string, define func(*flag.FlagSet)) (Setup, error) {
	fs := flag.NewFlagSet("shim "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: agentbridge shim %s [flags] [-- %s ARGS...]\n\n"+
			"Runs one AgentProc 0.4 turn (the turn line on stdin) with the %s CLI; profiles start it.\n\nflags:\n", name, c.Bin, c.Bin)
		fs.PrintDefaults()
	}
	bin := fs.String("bin", c.Bin, "the `command` to run (name on PATH or a path)")
	sendFile := fs.Bool("send-file", true, "offer the CLI the send_file tool, so the agent can send files to the chat")
	mcpCommand := fs.String("mcp-command", "", "the `command` the CLI starts as the send_file MCP server, with the argument mcp (default: this agentbridge binary)")
	if define != nil {
		define(fs)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return Setup{}, err
		}
		return Setup{}, em.Fail(fmt.Sprintf("shim %s: %v", name, err))
	}
	c.Bin = *bin
	em.mu.Lock()
	em.hint = c.WithHint
	em.mu.Unlock()
	in := bufio.NewReaderSize(stdin, 64<<10)
	turn, err := ReadTurn(in)
	if err != nil {
		return Setup{}, em.Fail(fmt.Sprintf("shim %s: %v", name, err))
	}
	if turn.Message == "" && len(turn.Attachments) == 0 {
		// F-EMPTY-1: the bridge never sends one, but a CLI given an empty
		// prompt may wait for one on its own stdin (qwen does).
		return Setup{}, em.Fail(fmt.Sprintf("shim %s: empty turn: no message and no attachment", name))
	}
	st := Setup{CLI: c, Turn: turn, In: in, Args: fs.Args(), Resume: turn.SessionID}
	if *sendFile {
		st.SendFile = newSendFile(*mcpCommand, stderr)
		em.mu.Lock()
		em.files, em.stderr = st.SendFile, stderr
		em.mu.Unlock()
	}
	if st.Resume != "" && !Resumable(st.Resume) {
		fmt.Fprintf(stderr, "shim %s: session id %q is not one %s can resume; starting a new session\n", name, st.Resume, c.Bin)
		st.Resume = ""
		if err := em.Restarted(); err != nil {
			st.SendFile.Close()
			return Setup{}, err
		}
	}
	return st, nil
}

// ErrSessionLost is an attempt's error when the CLI could not resume the
// session it was given and the user has seen nothing of it yet.
var ErrSessionLost = errors.New("the session could not be resumed")

// Attempts runs attempt with the session to resume and, when that fails
// with ErrSessionLost, once more with a new session ("") after telling the
// user (Emitter.Restarted): a forgotten session is not a dead end.
func Attempts(em *Emitter, stderr io.Writer, name, resume string, attempt func(resume string) error) error {
	err := attempt(resume)
	if resume == "" || !errors.Is(err, ErrSessionLost) {
		return err
	}
	fmt.Fprintf(stderr, "shim %s: session %s could not be resumed; starting a new session\n", name, resume)
	if err := em.Restarted(); err != nil {
		return err
	}
	return attempt("")
}

// Launch starts the CLI; when it cannot, it reports why as the turn's
// error event (the one clear "not found on PATH — install with …" for a
// missing CLI) and returns that error.
// The error also matches shim.ErrCannotStart.
func Launch(ctx context.Context, em *Emitter, c CLI, args, environ []string, stderr io.Writer) (*Proc, error) {
	p, err := start(ctx, em, c, args, environ, stderr)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, errors.Join(em.Fail(c.NotFoundMessage()), shim.ErrCannotStart)
	case err != nil:
		return nil, errors.Join(em.Fail(fmt.Sprintf("%s could not start: %v", c.Bin, err)), shim.ErrCannotStart)
	}
	return p, nil
}

// Finish ends the turn once the CLI's stdout was read (readErr is what
// reading it returned): it waits for the CLI to exit and returns nil after
// a result, shim.ErrTurnFailed (wrapped) after an error event, or ctx's error
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
		return shim.ErrTurnFailed
	case em.Ended():
		return nil
	case p.Resuming && code != 0 && !em.Wrote() && c.Lost(p.StderrTail()):
		return ErrSessionLost
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
	p.retry.done()
	p.stop()
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

// Fail writes msg as the turn's error event and returns shim.ErrTurnFailed
// wrapped with msg.
func (e *Emitter) Fail(msg string) error {
	if err := e.Error(msg, nil); err != nil {
		return err
	}
	return fmt.Errorf("%w: %s", shim.ErrTurnFailed, msg)
}
