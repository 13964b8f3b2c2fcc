package agentproc

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The test binary doubles as the agent: Run re-executes it with
// AGENTPROC_TEST_AGENT=<mode> in the profile's env (the only way anything
// reaches the child, F-ENV-1), and TestMain then behaves as that agent
// instead of running tests.
const agentModeVar = "AGENTPROC_TEST_AGENT"

func TestMain(m *testing.M) {
	if mode, ok := os.LookupEnv(agentModeVar); ok {
		os.Exit(testAgent(mode))
	}
	goleak.VerifyTestMain(m)
}

// emit writes one NDJSON event to stdout.
func emit(w *bufio.Writer, v any) {
	b, _ := json.Marshal(v)
	w.Write(b)
	w.WriteByte('\n')
	w.Flush()
}

type obj = map[string]any

// testAgent implements the agent modes the tests use. It returns the exit
// status.
func testAgent(mode string) int {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	defer out.Flush()
	turnRaw, err := in.ReadString('\n')
	if err != nil && mode != "sleeper" {
		fmt.Fprintln(os.Stderr, "agent: reading the turn:", err)
		return 3
	}
	var turn map[string]any
	_ = json.Unmarshal([]byte(turnRaw), &turn)
	exitCode, _ := strconv.Atoi(os.Getenv("AGENT_EXIT"))

	switch mode {
	case "lines": // print AGENT_LINES (a JSON array of raw lines) verbatim
		var lines []string
		if err := json.Unmarshal([]byte(os.Getenv("AGENT_LINES")), &lines); err != nil {
			fmt.Fprintln(os.Stderr, "agent: AGENT_LINES:", err)
			return 3
		}
		for _, l := range lines {
			out.WriteString(l)
			out.WriteByte('\n')
		}
		out.Flush()
		fmt.Fprint(os.Stderr, os.Getenv("AGENT_STDERR"))
		return exitCode

	case "echo": // report what the agent was given
		wd, _ := os.Getwd()
		emit(out, obj{"type": "result", "text": mustJSON(obj{
			"turn": strings.TrimSuffix(turnRaw, "\n"), "env": os.Environ(), "cwd": wd, "args": os.Args[1:],
		})})
		return 0

	case "stdin-eof": // P-STDIN-1: stdin must reach EOF right after the turn line
		rest, err := readAll(in)
		emit(out, obj{"type": "result", "text": fmt.Sprintf("eof after %d more bytes (err=%v)", len(rest), err)})
		return 0

	case "partials": // AGENT_COUNT small partials, then an empty result
		n, _ := strconv.Atoi(os.Getenv("AGENT_COUNT"))
		var line []byte
		for i := range n {
			line = append(line[:0], `{"type":"partial","text":"chunk `...)
			line = strconv.AppendInt(line, int64(i), 10)
			line = append(line, " \"}\n"...)
			out.Write(line)
		}
		out.WriteString(`{"type":"result","text":""}` + "\n")
		return 0

	case "bigpartials": // AGENT_COUNT partials of AGENT_SIZE bytes of text, then an empty result
		n, _ := strconv.Atoi(os.Getenv("AGENT_COUNT"))
		size, _ := strconv.Atoi(os.Getenv("AGENT_SIZE"))
		role := "" // AGENT_ROLE, if set, names the partials' role
		if r := os.Getenv("AGENT_ROLE"); r != "" {
			role = `"role":"` + r + `",`
		}
		line := []byte(`{"type":"partial",` + role + `"text":"` + strings.Repeat("x", size) + `"}` + "\n")
		for range n {
			out.Write(line)
		}
		out.WriteString(`{"type":"result","text":""}` + "\n")
		return 0

	case "hang": // stream, then hang; flush a goodbye on SIGTERM (P-TIME-2)
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		emit(out, obj{"type": "partial", "text": "working", "session_id": "hang-sess"})
		<-term
		emit(out, obj{"type": "partial", "text": "bye"})
		return 0

	case "ignore-term": // needs SIGKILL after the grace
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		emit(out, obj{"type": "partial", "text": "ready"})
		<-term
		emit(out, obj{"type": "partial", "text": "term-ignored"})
		select {}

	case "grandchild": // leave a descendant holding stdout, then exit
		self, _ := os.Executable()
		c := exec.Command(self)
		c.Env = append(os.Environ(), agentModeVar+"=sleeper")
		c.Stdout = os.Stdout
		c.Stderr = os.Stderr
		if err := c.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "agent: grandchild:", err)
			return 3
		}
		emit(out, obj{"type": "result", "text": strconv.Itoa(c.Process.Pid)})
		return 0

	case "sleeper":
		time.Sleep(time.Hour)
		return 0

	case "bigline": // one line of exactly AGENT_SIZE bytes, then a result
		size, _ := strconv.Atoi(os.Getenv("AGENT_SIZE"))
		prefix, suffix := `{"type":"partial","text":"`, `"}`
		out.WriteString(prefix)
		out.WriteString(strings.Repeat("x", size-len(prefix)-len(suffix)))
		out.WriteString(suffix + "\n")
		emit(out, obj{"type": "result", "text": "after big line"})
		return 0

	case "garbage": // invalid UTF-8 and binary noise around real events
		out.WriteString("\xff\xfe\x00garbage\x80\n")
		out.WriteString("{\"type\":\"partial\",\"text\":\"bad \xff\xfe utf8\"}\n")
		out.WriteString("{\"type\":\"partial\",\"text\":\"ok\",\"session_id\":\"s-\xff\"}\n")
		out.WriteString("{\"type\":\"result\",\"text\":\"done \xc3\"}\n")
		os.Stderr.WriteString("\xff\xfe stderr noise\n")
		return 0

	case "permission": // ask AGENT_REQUESTS (JSON array of raw lines); report the answers
		var reqs []string
		_ = json.Unmarshal([]byte(os.Getenv("AGENT_REQUESTS")), &reqs)
		var answers []string
		for _, r := range reqs {
			out.WriteString(r + "\n")
			out.Flush()
			line, err := in.ReadString('\n')
			if err != nil {
				answers = append(answers, "ERR: "+err.Error())
				break
			}
			answers = append(answers, strings.TrimSuffix(line, "\n"))
		}
		emit(out, obj{"type": "result", "text": mustJSON(answers)})
		return 0

	case "permission-hang": // ask once, report the answer on stderr, never finish
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		out.WriteString(`{"type":"permission_request","request_id":"p1","tool_name":"Bash","input":{"command":"ls"}}` + "\n")
		out.Flush()
		line, err := in.ReadString('\n')
		emit(out, obj{"type": "partial", "text": fmt.Sprintf("answer=%q err=%v", strings.TrimSuffix(line, "\n"), err)})
		<-term
		return 0

	case "permission-then-error": // a request, then an error before any answer
		out.WriteString(`{"type":"permission_request","request_id":"p1","tool_name":"Bash","input":{}}` + "\n")
		out.WriteString(`{"type":"error","message":"gave up","session_id":"s-err"}` + "\n")
		return 0
	}
	fmt.Fprintln(os.Stderr, "agent: unknown mode", mode)
	return 3
}

func readAll(r *bufio.Reader) ([]byte, error) {
	var b []byte
	for {
		c, err := r.ReadByte()
		if err != nil {
			if err.Error() == "EOF" {
				return b, nil
			}
			return b, err
		}
		b = append(b, c)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
