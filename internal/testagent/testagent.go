// Package testagent is a scripted AgentProc 0.4 agent for tests that need a
// real agent process. A test binary becomes the agent when a profile runs it
// with Env set in its environment: the package's TestMain sees Env and exits
// with the status Run returns instead of running tests.
//
// What the agent does is chosen by the turn's message (see Run), so one
// profile serves every scenario. It behaves as a real agent: it reads its
// turn and permission answers from stdin, writes NDJSON events to stdout,
// paces its output with sleeps the way a model would, and answers signals.
package testagent

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

const (
	// Env, set to any non-empty value in an agent profile's environment,
	// makes the test binary run as the agent.
	Env = "AGENTBRIDGE_TESTAGENT"

	// FrameEnv, set to any non-empty value, frames every reply: it opens
	// with "new SID\n\n" or "resumed SID\n\n" instead of "(resumed SID) ",
	// and its text ends with " END", so a test can read the session from any
	// reply and tell a finished reply from one still streaming.
	FrameEnv = "AGENTBRIDGE_TESTAGENT_FRAME"

	// LogEnv names a file the agent appends each turn's message to, one a
	// line, so a test can count how often a message was run.
	LogEnv = "AGENTBRIDGE_TESTAGENT_LOG"
)

// Run plays one turn: it reads the turn line from in, writes events to out
// and returns the process exit status. The message picks the script:
//
//	hang         stream "working", then wait for SIGTERM and exit 143
//	ignore-term  like hang, but ignore SIGTERM (only SIGKILL ends it)
//	perm         ask permission to run Bash, then stream
//	             "answer=BEHAVIOR:MESSAGE" from the permission_response
//	say-perm     stream "first words", 100 ms later " then more", then
//	             ask and answer as perm does
//	fail         stream "partial before failing", emit an error event, exit 1
//	sleep:MS     sleep MS milliseconds, then answer "done" without usage
//	slow:MS      stream "w0 " to "w7 " MS milliseconds apart, then "SLOW-DONE"
//	stream:N     stream "w1", " w2" … " wN" 60 ms apart
//	gate:PATH    stream "gated", wait until the file PATH exists (a test
//	             holds the turn open until it has seen what it waits for),
//	             then stream " released"
//	long:N       stream N numbered lines inside one code block, then
//	             "END-OF-LONG"
//	code:N       one partial: a Go code block of N numbered lines, each with
//	             characters markup must escape
//	essay        stream Essay in 120-byte partials 40 ms apart
//	flood:KIB    stream KIB KiB of log lines in 8 KiB partials, as fast
//	             as the bridge reads (a `cat` of a big log), then
//	             "FLOOD-DONE"
//	files        send files back (spec/protocol.md X-FILE-1) between
//	             lines of text, one per case: "before", a data: PNG
//	             (chart.png), "middle", notes.txt it writes in its cwd
//	             (file://), a symlink escaping its cwd to SECRET_FILE's
//	             path (escape.txt), a ../ path to it, config.yaml in its
//	             cwd, a 3000-byte data: file (big.bin), an entry without
//	             a url, a link (https://example.com/report.pdf), a
//	             ftp:// URL, then "after"
//	files-flood:N  one partial carrying N small data: files (fN.txt),
//	             then "FLOOD-SENT"
//	note:TEXT    append TEXT and a space to $HOME/notes, then stream the
//	             file's content (a workspace that persists keeps the notes
//	             of earlier turns)
//	anything     show each attachment as "[NAME MIME: CONTENT ERR] ", then
//	             stream the message back word by word; a message starting
//	             with "costly" reports cost_usd 0.25 beside its tokens
//
// A new session gets the id "sess-<pid>"; a resumed one keeps its id, and
// the echo then starts with "(resumed SID) " (FrameEnv frames every reply
// instead). Unless noted, the result reports 12 input and 34 output tokens.
func Run(in io.Reader, out io.Writer) int {
	r := bufio.NewReader(in)
	line, err := r.ReadBytes('\n')
	if err != nil {
		fmt.Fprintln(os.Stderr, "testagent: no turn:", err)
		return 3
	}
	var turn struct {
		Message     string `json:"message"`
		SessionID   string `json:"session_id"`
		Attachments []struct {
			URL  string `json:"url"`
			Name string `json:"name"`
			MIME string `json:"mime"`
		} `json:"attachments"`
	}
	if err := json.Unmarshal(line, &turn); err != nil {
		fmt.Fprintln(os.Stderr, "testagent: bad turn:", err)
		return 3
	}
	if p := os.Getenv(LogEnv); p != "" {
		logRun(p, turn.Message)
	}
	framed := os.Getenv(FrameEnv) != ""
	sid, state := turn.SessionID, "resumed"
	if sid == "" {
		sid, state = fmt.Sprintf("sess-%d", os.Getpid()), "new"
	}
	enc := json.NewEncoder(out)
	emit := func(ev map[string]any) {
		ev["session_id"] = sid
		enc.Encode(ev)
	}
	partial := func(text string) { emit(map[string]any{"type": "partial", "text": text}) }
	words := func(s string) {
		for i, w := range strings.Fields(s) {
			if i > 0 {
				w = " " + w
			}
			partial(w)
		}
	}

	if framed {
		partial(state + " " + sid + "\n\n")
	}
	msg := turn.Message
	verb, arg, _ := strings.Cut(msg, ":")
	var n int
	fmt.Sscanf(arg, "%d", &n)
	switch verb {
	case "hang", "ignore-term":
		// Notify before the partial: once the bridge sees "working" it may
		// send SIGTERM at any moment.
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM)
		partial("working")
		for {
			<-sigs
			if verb == "hang" {
				return 143
			}
		}
	case "perm", "say-perm":
		if verb == "say-perm" {
			partial("first words")
			time.Sleep(100 * time.Millisecond)
			partial(" then more")
		}
		emit(map[string]any{"type": "permission_request", "request_id": "r1", "tool_name": "Bash",
			"description": "Run a command", "input": map[string]any{"command": "echo ok > f.txt"}})
		resp, err := r.ReadBytes('\n')
		if err != nil {
			partial("stdin closed")
			return 0
		}
		var answer struct {
			Behavior string `json:"behavior"`
			Message  string `json:"message"`
		}
		json.Unmarshal(resp, &answer)
		partial("answer=" + answer.Behavior + ":" + answer.Message)
	case "note":
		path := filepath.Join(os.Getenv("HOME"), "notes")
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			_, err = f.WriteString(arg + " ")
			f.Close()
		}
		b, rerr := os.ReadFile(path)
		if err = errors.Join(err, rerr); err != nil {
			emit(map[string]any{"type": "error", "message": "notes: " + err.Error()})
			return 1
		}
		partial("notes: " + string(b))
	case "fail":
		partial("partial before failing")
		emit(map[string]any{"type": "error", "message": "upstream exploded"})
		return 1
	case "sleep":
		time.Sleep(time.Duration(n) * time.Millisecond) // the agent's pace, not synchronization
		emit(map[string]any{"type": "result", "text": "done"})
		return 0
	case "slow":
		for i := range 8 {
			partial(fmt.Sprintf("w%d ", i))
			time.Sleep(time.Duration(n) * time.Millisecond)
		}
		partial("SLOW-DONE")
	case "stream":
		for i := 1; i <= n; i++ {
			w := fmt.Sprintf("w%d", i)
			if i > 1 {
				w = " " + w
			}
			partial(w)
			time.Sleep(60 * time.Millisecond)
		}
	case "gate":
		partial("gated")
		for {
			if _, err := os.Stat(arg); err == nil {
				break
			}
			time.Sleep(5 * time.Millisecond) // polls for the test's event
		}
		partial(" released")
	case "long":
		partial("Here:\n\n```\n")
		for i := range n {
			partial(fmt.Sprintf("line %04d of the long answer\n", i))
		}
		partial("```\n\nEND-OF-LONG")
	case "code":
		var b strings.Builder
		b.WriteString("```go\n")
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, "line %04d: fmt.Println(\"a < b && c > d\")\n", i)
		}
		b.WriteString("```\n\n")
		partial(b.String())
	case "flood":
		line := []byte("2026-12-02T15:00:00Z INFO a line of a big log the agent printed\n") // 64 bytes
		chunk := strings.Repeat(string(line), 8<<10/len(line))
		for range n / 8 {
			partial(chunk)
		}
		partial("FLOOD-DONE")
	case "files":
		sendFiles(emit)
	case "files-flood":
		var atts []any
		for i := 1; i <= n; i++ {
			atts = append(atts, map[string]any{"kind": "file", "url": "data:,file%20" + fmt.Sprint(i), "filename": fmt.Sprintf("f%d.txt", i)})
		}
		emit(map[string]any{"type": "partial", "text": "flood:", "attachments": atts})
		partial("FLOOD-SENT")
	case "essay":
		text := Essay()
		for len(text) > 0 {
			k := min(len(text), 120)
			partial(text[:k])
			text = text[k:]
			time.Sleep(40 * time.Millisecond)
		}
	default:
		if state == "resumed" && !framed {
			partial("(resumed " + sid + ") ")
		}
		for _, a := range turn.Attachments {
			data, err := os.ReadFile(strings.TrimPrefix(a.URL, "file://"))
			name := a.Name
			if a.MIME != "" {
				name += " " + a.MIME
			}
			partial(fmt.Sprintf("[%s: %s %v] ", name, data, err))
		}
		words(msg)
	}
	if framed {
		partial(" END")
	}
	usage := map[string]any{"input_tokens": 12, "output_tokens": 34}
	if strings.HasPrefix(msg, "costly") {
		usage["cost_usd"] = 0.25 // for usage figures and cost limits
	}
	emit(map[string]any{"type": "result", "text": "", "usage": usage})
	return 0
}

// SecretEnv names, in the agent's environment, a file outside its cwd
// the files script tries to send through a symlink and a ../ path.
const SecretEnv = "SECRET_FILE"

// PNG is the image the files script sends as chart.png.
var PNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89")

// sendFiles plays the files script.
func sendFiles(emit func(map[string]any)) {
	cwd, _ := os.Getwd()
	file := func(kind, url, name string) map[string]any {
		a := map[string]any{"kind": kind, "url": url}
		if name != "" {
			a["filename"] = name
		}
		return a
	}
	with := func(text string, atts ...any) {
		emit(map[string]any{"type": "partial", "text": text, "attachments": atts})
	}
	os.WriteFile(filepath.Join(cwd, "notes.txt"), []byte("the notes\n"), 0o644)
	secret := os.Getenv(SecretEnv)
	os.Remove(filepath.Join(cwd, "escape.txt"))
	os.Symlink(secret, filepath.Join(cwd, "escape.txt"))
	rel, _ := filepath.Rel(cwd, secret)
	with("before", file("image", "data:image/png;base64,"+base64.StdEncoding.EncodeToString(PNG), "chart.png"))
	with("\n\nmiddle",
		file("file", "file://"+filepath.Join(cwd, "notes.txt"), ""),
		file("file", "file://"+filepath.Join(cwd, "escape.txt"), ""),
		file("file", "file://"+cwd+"/"+rel, ""),
		file("file", "file://"+filepath.Join(cwd, "config.yaml"), ""),
		file("file", "data:;base64,"+base64.StdEncoding.EncodeToString(make([]byte, 3000)), "big.bin"),
		map[string]any{"kind": "file", "filename": "nourl.txt"},
		file("file", "https://example.com/report.pdf", "report.pdf"),
		file("file", "ftp://example.com/x.txt", "x.txt"),
	)
	emit(map[string]any{"type": "partial", "text": "\n\nafter"})
}

// Essay returns the text the "essay" script streams: a reply well over
// 2,000 characters whose Go code block straddles any split point near
// there.
func Essay() string {
	var b strings.Builder
	for i := range 12 {
		fmt.Fprintf(&b, "Paragraph %d: %s\n\n", i, strings.Repeat("word ", 30))
	}
	b.WriteString("```go\n")
	for i := range 60 {
		fmt.Fprintf(&b, "fmt.Println(%d) // a line of code in the block\n", i)
	}
	b.WriteString("```\n\nThe end.")
	return b.String()
}

// logRun appends msg to the run log at path; a failure only loses a line
// the test will then miss.
func logRun(path, msg string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testagent: run log:", err)
		return
	}
	fmt.Fprintln(f, msg)
	f.Close()
}
