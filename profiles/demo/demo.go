// Package demo is agentbridge's built-in demo agent: a small AgentProc 0.4
// agent that needs no tokens and no other tools, and shows every bridge
// feature — a thinking line, a streamed Markdown answer, memory across turns
// of a session, a permission prompt for a pretend tool, an error, and a slow
// answer to try stopping.
//
// The agentbridge binary runs it as a real agent process through its
// demo-agent subcommand; this package is the agent's logic as a library.
package demo

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/shim/sendfile"
)

// StateDirEnv is the environment variable the profile (or the chat command)
// sets to the directory holding the demo agent's per-session memory.
const StateDirEnv = "AGENTBRIDGE_DEMO_STATE"

// DelayEnv is an optional environment variable holding a Go duration
// ("40ms", "0s") that overrides the pause between streamed words.
const DelayEnv = "AGENTBRIDGE_DEMO_DELAY"

// DefaultDelay is the pause between streamed words the real agent uses when
// DelayEnv is not set: slow enough to see the answer stream.
const DefaultDelay = 40 * time.Millisecond

// slowTotal is how long the "slow" answer takes in all, long enough to try
// /stop on it.
const slowTotal = 10 * time.Second

// maxLine bounds one stdin line; a turn line with many attachments is still
// far below it (D-LINE-1 uses the same figure for stdout).
const maxLine = 8 << 20

// errFailed is returned after the "fail" demo so the process exits 1, as an
// agent that reported an error does (P-EXIT-1).
var errFailed = errors.New("demo: failed on request")

// turnLine is the turn object read from stdin (P-TURN-1).
type turnLine struct {
	Type            string       `json:"type"`
	Message         string       `json:"message"`
	SessionID       string       `json:"session_id"`
	SessionName     string       `json:"session_name"`
	Attachments     []attachment `json:"attachments"`
	Permission      bool         `json:"permission"`
	ProtocolVersion string       `json:"protocol_version"`
}

// attachment is one entry of turn.attachments; only what the demo shows.
type attachment struct {
	Kind     string `json:"kind"`
	URL      string `json:"url"`
	Filename string `json:"filename"`  // upstream's name for it
	MIMEType string `json:"mime_type"` // upstream's name for it
	Name     string `json:"name"`      // agentbridge's older name, still sent
	MIME     string `json:"mime"`      // agentbridge's older name, still sent
	Size     int64  `json:"size"`
}

// permissionResponse is a bridge → agent line (F-PERM-2).
type permissionResponse struct {
	Type         string          `json:"type"`
	RequestID    string          `json:"request_id"`
	Behavior     string          `json:"behavior"`
	UpdatedInput json.RawMessage `json:"updated_input"`
	Message      string          `json:"message"`
}

// Run is the demo agent: it reads one AgentProc 0.4 turn line from stdin and
// writes NDJSON events to stdout. stateDir holds one JSON file per session id
// (conversation memory). delay is the pause between streamed words (the real
// agent uses ~40ms; tests use 0).
//
// With stateDir empty the agent is stateless: it remembers nothing and, as
// P-SID-3 requires, reports no session id.
//
// Run reads stdin on one goroutine it starts. An io.Reader cannot be
// interrupted, so when ctx ends while that read is blocked Run returns without
// waiting for it; the goroutine ends when stdin reaches EOF or fails (a
// process exiting, or a test closing its pipe). When ctx ends Run stops
// streaming, saves what was said so far and returns an error wrapping
// ctx.Err(). It returns a non-nil error also after it has reported an error
// event, so the process exits non-zero.
func Run(ctx context.Context, stdin io.Reader, stdout io.Writer, stateDir string, delay time.Duration) error {
	started := time.Now()
	in := newLineReader(stdin)
	defer in.stop()
	out := &emitter{w: stdout}

	line, err := in.next(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("demo: read turn: %w", ctx.Err())
		}
		out.fail("The demo agent got no turn line on stdin.")
		return fmt.Errorf("demo: read turn: %w", err)
	}
	var turn turnLine
	if err := json.Unmarshal(line, &turn); err != nil || turn.Type != "turn" {
		out.fail("The demo agent could not read its turn line (expected an AgentProc 0.4 turn object).")
		if err == nil {
			err = fmt.Errorf("type %q, want \"turn\"", turn.Type)
		}
		return fmt.Errorf("demo: parse turn: %w", err)
	}

	sess, notes := openSession(stateDir, turn.SessionID)
	out.sessionID = sess.ID
	a := &agent{in: in, out: out, turn: turn, sess: sess, delay: delay}
	reply, runErr := a.respond(ctx, notes)

	if stateDir != "" {
		sess.record(turn.Message, reply, started)
		if err := sess.save(stateDir); err != nil {
			// Memory is a nicety; the user already has the answer.
			if runErr == nil {
				runErr = err
			}
		}
	}
	return runErr
}

// agent is one turn in progress.
type agent struct {
	in    *lineReader
	out   *emitter
	turn  turnLine
	sess  *session
	delay time.Duration
	said  strings.Builder // output streamed so far, recorded in history
}

// respond picks what to do with the turn's message and does it, returning
// the answer text for the session history.
func (a *agent) respond(ctx context.Context, notes []string) (string, error) {
	msg := strings.TrimSpace(a.turn.Message)
	if msg == "" && len(a.turn.Attachments) == 0 {
		// F-EMPTY-1: an empty turn is an error, not a reply.
		a.out.fail("The demo agent got an empty message. Say something, or try `help`.")
		return "", fmt.Errorf("demo: %w", errEmpty)
	}
	if err := a.out.partial(core.RoleThinking, a.thinkingLine(notes)); err != nil {
		return "", err
	}

	switch intent := classify(msg); intent {
	case intentFail:
		if err := a.stream(ctx, "Let me try that… ", a.delay); err != nil {
			return a.said.String(), err
		}
		a.out.fail("Demo failure: you asked me to fail, so this turn ends with an error event. " +
			"Your session is kept; the next message continues it.")
		return a.said.String() + "(failed on purpose)", errFailed
	case intentSlow:
		text := slowAnswer()
		per := slowTotal / time.Duration(len(chunks(text)))
		if err := a.stream(ctx, text, per); err != nil {
			return a.said.String(), err
		}
	case intentTool:
		if err := a.tool(ctx, msg); err != nil {
			return a.said.String(), err
		}
	case intentChart:
		if err := a.chart(ctx); err != nil {
			return a.said.String(), err
		}
	case intentNotes:
		if err := a.notes(ctx); err != nil {
			return a.said.String(), err
		}
	default:
		if err := a.stream(ctx, a.answer(intent, msg), a.delay); err != nil {
			return a.said.String(), err
		}
	}
	return a.said.String(), a.finish()
}

// errEmpty reports an empty turn (F-EMPTY-1).
var errEmpty = errors.New("empty turn")

// thinkingLine is the short reasoning shown before the answer.
func (a *agent) thinkingLine(notes []string) string {
	var b strings.Builder
	if a.sess.ID == "" {
		b.WriteString("Thinking… (stateless: no memory directory is set)")
	} else {
		fmt.Fprintf(&b, "Thinking… turn %d of session %s", a.sess.Turns+1, a.sess.ID)
		if n := len(a.sess.History); n > 0 {
			fmt.Fprintf(&b, "; I remember %d earlier message%s", n, plural(n))
		}
	}
	for _, n := range notes {
		b.WriteString("; ")
		b.WriteString(n)
	}
	b.WriteString(".")
	return b.String()
}

// stream sends text as output partials, one word (with the space after it)
// at a time, pausing per between words. On ctx's end it stops and returns.
func (a *agent) stream(ctx context.Context, text string, per time.Duration) error {
	var timer *time.Timer
	for i, c := range chunks(text) {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("demo: stopped: %w", err)
		}
		if i > 0 && per > 0 {
			if timer == nil {
				timer = time.NewTimer(per)
				defer timer.Stop()
			} else {
				timer.Reset(per)
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("demo: stopped: %w", ctx.Err())
			case <-timer.C:
			}
		}
		if err := a.out.partial(core.RoleOutput, c); err != nil {
			return err
		}
		a.said.WriteString(c)
	}
	return nil
}

// finish emits the trailing result with usage (P-RES-1, P-RES-2): the body
// was already streamed, so its text is empty.
func (a *agent) finish() error {
	in := wordCount(a.turn.Message) + len(a.turn.Attachments)
	outWords := wordCount(a.said.String())
	return a.out.result(map[string]int{
		"input_tokens":  in,
		"output_tokens": outWords,
		"total_tokens":  in + outWords,
	})
}

// lineReader hands stdin lines to Run. Its goroutine reads ahead; stop
// releases it from sending, and it ends at the reader's EOF or error.
type lineReader struct {
	lines chan []byte
	errc  chan error // receives the read error (io.EOF at end) once lines is drained
	done  chan struct{}
	err   error // sticky, once received from errc
}

func newLineReader(r io.Reader) *lineReader {
	lr := &lineReader{lines: make(chan []byte), errc: make(chan error, 1), done: make(chan struct{})}
	go lr.loop(r)
	return lr
}

func (lr *lineReader) loop(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	for sc.Scan() {
		line := append([]byte(nil), sc.Bytes()...)
		select {
		case lr.lines <- line:
		case <-lr.done:
			return
		}
	}
	err := sc.Err()
	if err == nil {
		err = io.EOF
	}
	lr.errc <- err
}

// next returns the next line, blocking until one arrives, stdin ends (the
// read error, io.EOF at the end) or ctx ends (ctx's error).
func (lr *lineReader) next(ctx context.Context) ([]byte, error) {
	if lr.err != nil {
		return nil, lr.err
	}
	select {
	case line := <-lr.lines:
		return line, nil
	case err := <-lr.errc:
		lr.err = err
		return nil, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// stop releases the goroutine from handing over further lines.
func (lr *lineReader) stop() { close(lr.done) }

// emitter writes events to stdout, one JSON object per line, each in one
// Write so nothing sits in a buffer when the process is stopped (P-TIME-2).
type emitter struct {
	w         io.Writer
	sessionID string // on every event once known (P-SID-2)
	err       error  // first write error; later writes are skipped
}

type partialEvent struct {
	Type      string `json:"type"`
	Role      string `json:"role,omitempty"`
	Text      string `json:"text"`
	SessionID string `json:"session_id,omitempty"`
	// Attachments are files sent to the chat, agentbridge's extension
	// (spec/protocol.md): the bytes in data: URLs.
	Attachments []sendfile.Attachment `json:"attachments,omitempty"`
}

type resultEvent struct {
	Type      string         `json:"type"`
	Text      string         `json:"text"`
	SessionID string         `json:"session_id,omitempty"`
	Usage     map[string]int `json:"usage,omitempty"`
}

type errorEvent struct {
	Type      string `json:"type"`
	Message   string `json:"message"`
	SessionID string `json:"session_id,omitempty"`
}

type permissionRequest struct {
	Type        string         `json:"type"`
	RequestID   string         `json:"request_id"`
	ToolName    string         `json:"tool_name"`
	Description string         `json:"description,omitempty"`
	Input       map[string]any `json:"input"`
	SessionID   string         `json:"session_id,omitempty"`
}

func (e *emitter) partial(role, text string) error {
	return e.emit(partialEvent{Type: "partial", Role: role, Text: text, SessionID: e.sessionID})
}

// attach sends a file: a partial with no text, carrying it.
func (e *emitter) attach(a sendfile.Attachment) error {
	return e.emit(partialEvent{Type: "partial", Text: "", SessionID: e.sessionID, Attachments: []sendfile.Attachment{a}})
}

func (e *emitter) result(usage map[string]int) error {
	return e.emit(resultEvent{Type: "result", Text: "", SessionID: e.sessionID, Usage: usage})
}

func (e *emitter) fail(msg string) error {
	return e.emit(errorEvent{Type: "error", Message: msg, SessionID: e.sessionID})
}

func (e *emitter) permission(req permissionRequest) error {
	req.Type, req.SessionID = "permission_request", e.sessionID
	return e.emit(req)
}

func (e *emitter) emit(v any) error {
	if e.err != nil {
		return e.err
	}
	b, err := json.Marshal(v)
	if err != nil {
		e.err = fmt.Errorf("demo: encode event: %w", err)
		return e.err
	}
	if _, err := e.w.Write(append(b, '\n')); err != nil {
		e.err = fmt.Errorf("demo: write event: %w", err)
	}
	return e.err
}
