package telegram_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// agentEnv switches the test binary into a test agent: the end-to-end tests
// run real agent processes by re-executing themselves.
const agentEnv = "TELEGRAM_TEST_AGENT"

// runLogEnv names a file the test agent appends each message it runs to.
const runLogEnv = "TELEGRAM_TEST_AGENT_LOG"

func TestMain(m *testing.M) {
	if os.Getenv(agentEnv) != "" {
		os.Exit(testAgent())
	}
	goleak.VerifyTestMain(m)
}

// testAgent speaks AgentProc 0.4. Every reply starts with "new SID" or
// "resumed SID". Then, by message:
//
//	stream N   N words 60 ms apart, then END
//	code N     a fenced code block of N numbered lines, then END
//	perm       ask permission for Bash, then say the decision and END
//	anything   show each attachment's name, type and content, echo the
//	           message, then END
func testAgent() int {
	in := bufio.NewReader(os.Stdin)
	line, err := in.ReadBytes('\n')
	if err != nil {
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
		return 3
	}
	if p := os.Getenv(runLogEnv); p != "" {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			fmt.Fprintln(f, turn.Message)
			f.Close()
		}
	}
	sid, state := turn.SessionID, "resumed"
	if sid == "" {
		sid, state = fmt.Sprintf("sess-%d", os.Getpid()), "new"
	}
	out := json.NewEncoder(os.Stdout)
	emit := func(ev map[string]any) {
		ev["session_id"] = sid
		out.Encode(ev)
	}
	partial := func(text string) { emit(map[string]any{"type": "partial", "text": text}) }
	partial(state + " " + sid + "\n\n")
	var verb string
	var n int
	fmt.Sscanf(turn.Message, "%s %d", &verb, &n)
	switch verb {
	case "stream":
		for i := 1; i <= n; i++ {
			partial(fmt.Sprintf("w%d ", i))
			time.Sleep(60 * time.Millisecond)
		}
	case "code":
		var b strings.Builder
		b.WriteString("```go\n")
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, "line %04d: fmt.Println(\"a < b && c > d\")\n", i)
		}
		b.WriteString("```\n\n")
		partial(b.String())
	case "perm":
		emit(map[string]any{"type": "permission_request", "request_id": "r1", "tool_name": "Bash",
			"description": "Run a command", "input": map[string]any{"command": "echo ok > f.txt"}})
		resp, err := in.ReadBytes('\n')
		if err != nil {
			return 0
		}
		var r struct {
			Behavior string `json:"behavior"`
		}
		json.Unmarshal(resp, &r)
		partial("decision: " + r.Behavior + " ")
	default:
		for _, a := range turn.Attachments {
			data, err := os.ReadFile(strings.TrimPrefix(a.URL, "file://"))
			partial(fmt.Sprintf("[%s %s: %s %v] ", a.Name, a.MIME, data, err))
		}
		partial(turn.Message + " ")
	}
	partial("END")
	emit(map[string]any{"type": "result", "text": ""})
	return 0
}
