package agentcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/internal/lines"
	"github.com/agentbridge/agentbridge/internal/tail"
)

// Bounds of the driver that are not the profile's.
const (
	// drainWait is how long stdout is read after the agent exited, as the
	// runner does, before a process still holding it is reported and killed.
	drainWait = 500 * time.Millisecond
	// pipeWait bounds the last reads and writes on the agent's pipes.
	pipeWait = 250 * time.Millisecond
	// termAfter is when the SIGTERM probe signals an agent that has printed
	// nothing yet. One that has printed anything by then is signalled at the
	// end of its first line instead, so the signal never cuts a line the
	// agent is still writing, however slow the machine.
	termAfter = 300 * time.Millisecond
	// stderrKeep is how much of the end of stderr a turn keeps.
	stderrKeep = 16 << 10
)

// plan is one probe turn: what the checker sends and how it behaves.
type plan struct {
	name        string
	message     string
	sessionID   string
	attachments []agentproc.Attachment
	version     string // protocol_version; "" = agentproc.ProtocolVersion
	// holdStdin keeps stdin open (no EOF) this long after the turn line
	// when the profile has permission off; 0 closes it at once, as the
	// bridge does.
	holdStdin time.Duration
	// answerDelay is how long each permission request waits for its answer.
	answerDelay time.Duration
	deny        bool // deny every permission request (allow otherwise)
	sigterm     bool // SIGTERM the group at the first stdout line, or at driver.termAfter if it printed nothing yet
	bound       time.Duration
}

// line is one stdout line as the agent wrote it.
type line struct {
	at        time.Duration
	raw       []byte // nil when the line was too long to keep
	size      int    // bytes without the newline
	noNewline bool   // the last line, cut off by EOF
}

// request is one permission request the checker answered (or did not).
type request struct {
	id       string
	line     int           // index into turn.lines
	at       time.Duration // when it was printed
	due      time.Duration // when the answer is due
	answerAt time.Duration // when the answer was written; -1 = never
	behavior string
	writeErr error // the answer could not be written (the agent closed stdin)
}

// turn is everything observed in one probe turn.
type turn struct {
	plan       plan
	permission bool // the turn line said permission: true
	turnLine   []byte
	startErr   error
	lines      []line
	requests   []*request

	stdinClosedAt time.Duration // -1 = open until the end
	holdExpired   bool          // the agent outlived holdStdin
	holdSnapshot  string        // what it was doing then
	termAt        time.Duration // -1 = no SIGTERM sent
	termKilled    bool          // SIGKILLed kill_grace after SIGTERM
	hung          bool          // still running at the bound: SIGKILLed
	hungSnapshot  string
	exitAt        time.Duration
	stdoutLate    bool // stdout still open drainWait after the exit
	exitCode      int  // the agent's own status; 128+N when killed by signal N
	signal        syscall.Signal
	stderr        string
	cancelled     bool
}

// exitedOnItsOwn reports whether the agent exited without being killed.
func (t *turn) exitedOnItsOwn() bool { return !t.hung && !t.termKilled && !t.cancelled }

// turnJSON is the turn object written to stdin (P-TURN-1).
type turnJSON struct {
	Type            string                 `json:"type"`
	Message         string                 `json:"message"`
	SessionID       string                 `json:"session_id"`
	SessionName     string                 `json:"session_name"`
	Attachments     []agentproc.Attachment `json:"attachments"`
	Permission      bool                   `json:"permission,omitempty"`
	ProtocolVersion string                 `json:"protocol_version"`
}

// answerJSON is a permission_response line (F-PERM-2).
type answerJSON struct {
	Type      string `json:"type"`
	RequestID string `json:"request_id"`
	Behavior  string `json:"behavior"`
	Message   string `json:"message,omitempty"`
}

// driver runs probe turns of one profile.
type driver struct {
	p         *agentproc.Profile
	environ   []string
	termAfter time.Duration
}

// run plays one probe turn and returns what the agent did. It returns only
// once the agent's whole process group is gone and its goroutines ended.
func (d *driver) run(ctx context.Context, pl plan) *turn {
	t := &turn{plan: pl, permission: d.p.Permission, stdinClosedAt: -1, termAt: -1}
	version := pl.version
	if version == "" {
		version = agentproc.ProtocolVersion
	}
	atts := pl.attachments
	if atts == nil {
		atts = []agentproc.Attachment{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(turnJSON{Type: "turn", Message: pl.message, SessionID: pl.sessionID, SessionName: "default",
		Attachments: atts, Permission: d.p.Permission, ProtocolVersion: version}) // strings cannot fail
	t.turnLine = buf.Bytes()

	pr, err := d.p.Start(agentproc.Turn{SessionID: pl.sessionID}, d.environ, nil)
	if err != nil {
		t.startErr = err
		return t
	}
	start := time.Now()
	since := func() time.Duration { return time.Since(start) }

	var wg sync.WaitGroup
	linesC := make(chan line, 16)
	var cut bool // written before linesC closes
	var silentC chan struct{}
	if pl.sigterm {
		silentC = make(chan struct{})
	}
	wg.Go(func() { readLines(pr.Stdout, start, d.termAfter, silentC, linesC, &cut) })
	var silent <-chan struct{} = silentC
	var lines <-chan line = linesC
	stderr := &tail.Buffer{Max: stderrKeep}
	stderrDone := make(chan struct{})
	wg.Go(func() {
		defer close(stderrDone)
		_, _ = stderr.ReadFrom(pr.Stderr)
	})
	exitedC := make(chan struct{})
	wg.Go(func() {
		defer close(exitedC)
		pr.WaitExited()
	})
	var exited <-chan struct{} = exitedC

	stdin := pr.Stdin
	closeStdin := func() {
		if stdin != nil {
			stdin.Close()
			stdin = nil
			t.stdinClosedAt = since()
		}
	}
	// The line is far smaller than a pipe buffer; the deadline only guards
	// against the impossible.
	_ = stdin.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, _ = stdin.Write(t.turnLine)
	var hold <-chan time.Time
	if !d.p.Permission {
		if pl.holdStdin > 0 {
			hold = time.After(pl.holdStdin)
		} else {
			closeStdin() // P-STDIN-1: EOF right after the turn line
		}
	}

	bound := time.NewTimer(pl.bound)
	defer bound.Stop()
	sendTerm := func() {
		if t.termAt < 0 && exited != nil {
			pr.Signal(syscall.SIGTERM)
			t.termAt = since()
		}
	}
	var grace <-chan time.Time
	killGrace := d.p.KillGrace
	if killGrace <= 0 {
		killGrace = agentproc.DefaultKillGrace
	}
	answer := time.NewTimer(time.Hour)
	answer.Stop()
	defer answer.Stop()
	seen := map[string]bool{}
	armAnswer := func() {
		next := time.Duration(-1)
		for _, r := range t.requests {
			if r.answerAt < 0 && r.writeErr == nil && r.behavior != "" && (next < 0 || r.due < next) {
				next = r.due
			}
		}
		if next >= 0 {
			answer.Reset(max(0, next-since()))
		}
	}
	writeAnswers := func() {
		now := since()
		for _, r := range t.requests {
			if r.answerAt >= 0 || r.writeErr != nil || r.behavior == "" || r.due > now || stdin == nil {
				continue
			}
			a := answerJSON{Type: "permission_response", RequestID: r.id, Behavior: r.behavior}
			if r.behavior == "deny" {
				a.Message = "denied by agentbridge check"
			}
			b, _ := json.Marshal(a)
			// The answer's time is taken before the write: whatever the
			// agent prints once it has read the answer comes after it.
			r.answerAt = since()
			_ = stdin.SetWriteDeadline(time.Now().Add(time.Second))
			if _, err := stdin.Write(append(b, '\n')); err != nil {
				r.answerAt, r.writeErr = -1, err
			}
		}
		armAnswer()
	}
	onLine := func(l line) {
		t.lines = append(t.lines, l)
		if pl.sigterm {
			sendTerm()
		}
		if !d.p.Permission || l.raw == nil {
			return
		}
		c := agentproc.Classify(l.raw)
		if c.Kind != agentproc.KindPermissionRequest {
			return
		}
		r := &request{line: len(t.lines) - 1, at: l.at, answerAt: -1}
		t.requests = append(t.requests, r)
		id, ok := stringField(c.Fields, "request_id")
		if !ok || !agentproc.ValidRequestID(id) || seen[id] {
			return // the bridge ignores it (a reused id) or cannot answer it
		}
		seen[id] = true
		r.id = id
		r.behavior = "allow"
		r.due = l.at + pl.answerDelay
		if pl.deny || !wellFormedRequest(c.Fields) {
			r.behavior = "deny" // the bridge denies a malformed request at once
			if !pl.deny {
				r.due = l.at
			}
		}
		writeAnswers()
	}

	var drain <-chan time.Time
	for lines != nil || exited != nil {
		select {
		case l, ok := <-lines:
			if !ok {
				lines = nil
				continue
			}
			onLine(l)
		case <-exited:
			exited = nil
			t.exitAt = since()
			drain = time.After(drainWait)
		case <-drain:
			t.stdoutLate = true
			pr.Signal(syscall.SIGKILL) // D-GROUP-1: what holds stdout goes too
			_ = pr.Stdout.SetReadDeadline(time.Now().Add(pipeWait))
			drain = nil
		case <-hold:
			hold = nil
			if exited == nil {
				break // it finished in time; the exit was only seen late
			}
			t.holdExpired = true
			t.holdSnapshot = snapshot(pr.PID)
			closeStdin()
		case <-silent:
			silent = nil
			sendTerm()
		case <-grace:
			grace = nil
			if exited == nil {
				break
			}
			t.termKilled = true
			pr.Signal(syscall.SIGKILL)
		case <-answer.C:
			writeAnswers()
		case <-bound.C:
			if exited == nil {
				break // only stdout is still open: the drain ends that
			}
			t.hung = true
			t.hungSnapshot = snapshot(pr.PID)
			pr.Signal(syscall.SIGKILL)
		case <-ctx.Done():
			t.cancelled = true
			pr.Signal(syscall.SIGKILL)
			ctx = context.Background() // once
		}
		if t.termAt >= 0 && grace == nil && !t.termKilled && exited != nil {
			grace = time.After(killGrace - (since() - t.termAt))
		}
	}
	if cut && len(t.lines) > 0 {
		t.lines[len(t.lines)-1].noNewline = true
	}
	pr.Signal(syscall.SIGKILL) // D-GROUP-1: nothing the agent started outlives the turn
	_ = pr.Stderr.SetReadDeadline(time.Now().Add(pipeWait))
	<-stderrDone
	closeStdin()
	if t.stdinClosedAt >= t.exitAt {
		t.stdinClosedAt = -1 // open for the whole turn
	}
	st, _ := pr.Wait()
	wg.Wait()
	pr.Stdout.Close()
	pr.Stderr.Close()
	if st != nil {
		t.exitCode = st.ExitCode()
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.signal = ws.Signal()
			t.exitCode = 128 + int(ws.Signal())
		}
	}
	t.stderr = stderr.String()
	return t
}

// readLines sends every stdout line with its arrival time — a line over
// agentproc.MaxLineBytes by size only, as the runner skips it — and closes
// out at the end of stdout, after setting *cut when the last line had no
// newline. When silent is not nil it first waits, reading nothing, until
// silentAfter past start for the agent's first byte, and closes silent if
// none came by then.
func readLines(f *os.File, start time.Time, silentAfter time.Duration, silent chan<- struct{}, out chan<- line, cut *bool) {
	defer close(out)
	if silent != nil && !awaitOutput(f, start.Add(silentAfter)) {
		close(silent)
	}
	last := &lastByte{r: f}
	_ = lines.Read(last, agentproc.MaxLineBytes, func(b []byte) error {
		out <- line{at: time.Since(start), raw: bytes.Clone(b), size: len(b)}
		return nil
	}, func(n int) {
		out <- line{at: time.Since(start), size: n}
	})
	*cut = last.n > 0 && last.b != '\n'
}

// awaitOutput waits until f has bytes to read (or no writer left) or the
// deadline passes, and reports whether it has. It reads nothing, and only
// readLines reads f, so false means the agent had printed nothing at all by
// the deadline — not merely that no reader had been scheduled to see it.
func awaitOutput(f *os.File, deadline time.Time) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return true // cannot tell: wait for the first line
	}
	ready := true
	_ = rc.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			ms := max(0, (time.Until(deadline)+time.Millisecond-1)/time.Millisecond)
			n, err := unix.Poll(fds, int(ms))
			if err == unix.EINTR {
				continue
			}
			ready = err != nil || n > 0
			return
		}
	})
	return ready
}

// lastByte remembers the last byte read through it.
type lastByte struct {
	r io.Reader
	b byte
	n int64
}

func (l *lastByte) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if n > 0 {
		l.b, l.n = p[n-1], l.n+int64(n)
	}
	return n, err
}

// wellFormedRequest reports whether a permission request has the fields
// F-PERM-1 requires (request_id is checked by the caller).
func wellFormedRequest(f map[string]json.RawMessage) bool {
	tool, ok := stringField(f, "tool_name")
	in := bytes.TrimSpace(f["input"])
	return ok && tool != "" && len(in) > 0 && in[0] == '{'
}

// stringField decodes the named field as a JSON string.
func stringField(f map[string]json.RawMessage, name string) (string, bool) {
	raw := f[name]
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}
