package agentcheck

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The test binary doubles as the agents under check: a profile runs it with
// agentModeVar=<mode> in its env, and TestMain then plays that agent
// instead of running tests. Each broken mode breaks one rule and is
// otherwise a good agent; goodAgent is what they all start from.
const agentModeVar = "AGENTCHECK_TEST_AGENT"

// agentTurn is the part of the turn line the test agents read.
type agentTurn struct {
	Message         string            `json:"message"`
	SessionID       string            `json:"session_id"`
	Attachments     []json.RawMessage `json:"attachments"`
	Permission      bool              `json:"permission"`
	ProtocolVersion string            `json:"protocol_version"`
}

// agent is one run of a test agent.
type agent struct {
	mode string
	in   *bufio.Reader
	turn agentTurn
	sid  string
	out  *bufio.Writer
}

func (a *agent) emit(v map[string]any) {
	if a.sid != "" && v["session_id"] == nil {
		v["session_id"] = a.sid
	}
	b, _ := json.Marshal(v)
	a.out.Write(b)
	a.out.WriteByte('\n')
	a.out.Flush()
}

func (a *agent) raw(s string) {
	a.out.WriteString(s)
	a.out.Flush()
}

// runAgent plays mode and returns the exit status.
func runAgent(mode string) int {
	a := &agent{mode: mode, in: bufio.NewReader(os.Stdin), out: bufio.NewWriter(os.Stdout)}
	if mode == "reads-to-eof" {
		all, _ := io.ReadAll(a.in) // waits for EOF: P-STDIN-1
		a.in = bufio.NewReader(strings.NewReader(string(all)))
	}
	line, err := a.in.ReadBytes('\n')
	if err != nil {
		fmt.Fprintln(os.Stderr, "no turn:", err)
		return 3
	}
	if err := json.Unmarshal(line, &a.turn); err != nil {
		fmt.Fprintln(os.Stderr, "bad turn:", err)
		return 3
	}
	if mode == "polls-stdin" {
		// It says so first: the SIGTERM probe then lands at once, at
		// that line, rather than at the turn bound.
		a.emit(map[string]any{"type": "partial", "text": "waiting for more input"})
		for { // ignores EOF and waits for a line that never comes
			if l, err := a.in.ReadBytes('\n'); err == nil && len(l) > 0 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return a.play()
}

// play answers the turn as a good agent does, with mode's one flaw.
func (a *agent) play() int {
	t := a.turn
	switch a.mode {
	case "version-strict":
		if t.ProtocolVersion != "0.4" {
			a.emit(map[string]any{"type": "error", "message": "unsupported protocol version " + t.ProtocolVersion})
			return 1
		}
	case "version-ordered":
		if v, err := strconv.ParseFloat(t.ProtocolVersion, 64); err != nil || v < 0.4 {
			a.emit(map[string]any{"type": "error", "message": "protocol version too old: " + t.ProtocolVersion})
			return 1
		}
	}
	if t.Message == "" && (len(t.Attachments) == 0 || a.mode == "attachment-as-empty") {
		if a.mode == "error-no-message" {
			a.emit(map[string]any{"type": "error", "text": "nothing to do"})
			return 1
		}
		a.emit(map[string]any{"type": "error", "message": "send me some text"})
		if a.mode == "exit0-after-error" {
			return 0
		}
		return 1
	}
	if len(t.Attachments) > 0 && a.mode == "attachment-crash" {
		for _, raw := range t.Attachments {
			var name string
			if err := json.Unmarshal(raw, &name); err != nil { // expects strings: crashes
				fmt.Fprintln(os.Stderr, "panic: attachments:", err)
				return 2
			}
		}
	}
	if a.mode == "crash" {
		fmt.Fprintln(os.Stderr, "fatal: out of cheese")
		return 3
	}

	// Sessions: a resumable agent keeps the id it is given; a new session
	// gets one derived from the pid (the "tool" can resume any id).
	switch a.mode {
	case "stateless", "reads-to-eof", "polls-stdin":
	case "mints-session":
		a.sid = fmt.Sprintf("new-%d", os.Getpid()) // whatever it was given
	case "cannot-resume":
		if t.SessionID != "" {
			a.emit(map[string]any{"type": "error", "message": "no conversation found with id " + t.SessionID})
			return 1
		}
		a.sid = fmt.Sprintf("sess-%d", os.Getpid())
	default:
		a.sid = t.SessionID
		if a.sid == "" {
			a.sid = fmt.Sprintf("sess-%d", os.Getpid())
		}
	}
	switch a.mode {
	case "bad-session-id":
		a.sid = "org/proj/" + strconv.Itoa(os.Getpid())
	case "empty-session-id":
		a.emit(map[string]any{"type": "partial", "text": "hi ", "session_id": ""})
	case "non-json":
		a.raw("starting up...\n")
	case "unknown-type":
		a.emit(map[string]any{"type": "debug", "text": "thinking about it"})
	case "long-line":
		a.raw(`{"type":"partial","text":"` + strings.Repeat("x", 9<<20) + "\"}\n")
	case "no-newline":
		a.raw(`{"type":"result","text":"no newline"}`)
		return 0
	case "sends-files", "bad-attachment", "bad-data", "file-outside", "too-many-files":
		atts := map[string][]any{
			"sends-files": {map[string]any{"kind": "image", "url": "data:image/png;base64,iVBORw0KGgo=", "filename": "a.png"},
				map[string]any{"kind": "file", "url": "https://example.com/r.pdf"}},
			"bad-attachment": {map[string]any{"kind": "file", "filename": "no-url.txt"}},
			"bad-data":       {map[string]any{"kind": "file", "url": "data:;base64,@@@"}},
			"file-outside":   {map[string]any{"kind": "file", "url": "file:///etc/hostname"}},
		}[a.mode]
		if a.mode == "too-many-files" {
			for range 11 {
				atts = append(atts, map[string]any{"kind": "file", "url": "data:,x"})
			}
		}
		a.emit(map[string]any{"type": "partial", "text": "files: ", "attachments": atts})
	}

	if a.mode == "slow-exit" || a.mode == "ignores-sigterm" {
		return a.slow()
	}
	if a.mode == "silent-until-sigterm" {
		// Prints nothing until SIGTERM, then flushes a result and exits.
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		<-term
		a.emit(map[string]any{"type": "result", "text": "stopped"})
		return 143
	}
	answer := "You said: " + t.Message
	if a.mode == "asks-without-permission" {
		a.emit(map[string]any{"type": "permission_request", "request_id": "1", "tool_name": "Bash", "input": map[string]any{"command": "true"}})
		_, _ = a.in.ReadBytes('\n') // and waits for an answer
	}
	if strings.Contains(t.Message, "tool") {
		if !t.Permission {
			answer = "ran the tool (auto-approved)"
		} else if a.mode == "no-wait" {
			a.emit(map[string]any{"type": "permission_request", "request_id": "1", "tool_name": "Bash", "input": map[string]any{"command": "true"}})
			answer = "ran the tool"
		} else {
			answer = a.askTool()
		}
	}
	words := strings.Fields(answer)
	for i, w := range words {
		if i > 0 {
			w = " " + w
		}
		a.emit(map[string]any{"type": "partial", "text": w})
		if a.mode == "changing-session-id" {
			a.sid = fmt.Sprintf("%s-%d", a.sid, i)
		}
	}
	a.emit(map[string]any{"type": "result", "text": "", "usage": map[string]any{"input_tokens": 3, "output_tokens": len(words)}})
	if a.mode == "two-results" {
		a.emit(map[string]any{"type": "result", "text": "and another thing"})
	}
	return 0
}

// askTool asks permission for the pretend tool and reads the answer.
func (a *agent) askTool() string {
	ids := []string{"req-1"}
	switch a.mode {
	case "bad-request-id":
		ids = []string{"req 1"}
	case "dup-request-id":
		ids = []string{"req-1", "req-1"}
	}
	for _, id := range ids {
		req := map[string]any{"type": "permission_request", "request_id": id, "tool_name": "Bash", "input": map[string]any{"command": "echo ok > f.txt"}}
		if a.mode == "missing-tool-name" {
			delete(req, "tool_name")
		}
		a.emit(req)
	}
	for range ids {
		line, err := a.in.ReadBytes('\n')
		if err != nil {
			return "no answer: stdin closed"
		}
		var r struct {
			Behavior, Message string
		}
		_ = json.Unmarshal(line, &r)
		if r.Behavior == "deny" && a.mode != "ignores-deny" {
			return "not running the tool: " + r.Message
		}
	}
	return "ran the tool"
}

// slow streams for a while; on SIGTERM slow-exit takes its time to flush
// and exit within the grace, ignores-sigterm carries on long after it.
func (a *agent) slow() int {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	ignored := false
	for i := range 10 {
		select {
		case <-term:
			if a.mode == "ignores-sigterm" {
				ignored = true
				continue
			}
			time.Sleep(400 * time.Millisecond) // saving its work
			a.emit(map[string]any{"type": "partial", "text": " (stopped)"})
			a.emit(map[string]any{"type": "result", "text": ""})
			return 143
		case <-time.After(60 * time.Millisecond):
		}
		a.emit(map[string]any{"type": "partial", "text": fmt.Sprintf("w%d ", i)})
	}
	if ignored {
		time.Sleep(time.Minute) // only SIGKILL ends it
	}
	a.emit(map[string]any{"type": "result", "text": ""})
	return 0
}
