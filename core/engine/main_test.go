package engine_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// agentEnv switches the test binary into a test agent: the engine tests run
// real agent processes by re-executing themselves.
const agentEnv = "ENGINE_TEST_AGENT"

func TestMain(m *testing.M) {
	if os.Getenv(agentEnv) != "" {
		os.Exit(testAgent())
	}
	goleak.VerifyTestMain(m)
}

// testAgent speaks AgentProc 0.4; what it does depends on the message:
//
//	hang         stream one partial, then wait for SIGTERM
//	ignore-term  like hang, but ignore SIGTERM (needs SIGKILL)
//	perm         ask permission for Bash, report the answer
//	fail         emit an error event
//	sleep:MS     sleep MS milliseconds, then answer "done"
//	anything     stream it back word by word
//
// A new session gets id "sess-<pid>"; a resumed one keeps its id and says so.
func testAgent() int {
	in := bufio.NewReader(os.Stdin)
	line, err := in.ReadBytes('\n')
	if err != nil {
		fmt.Fprintln(os.Stderr, "no turn:", err)
		return 3
	}
	var turn struct {
		Message     string `json:"message"`
		SessionID   string `json:"session_id"`
		Attachments []struct {
			URL  string `json:"url"`
			Name string `json:"name"`
		} `json:"attachments"`
	}
	if err := json.Unmarshal(line, &turn); err != nil {
		fmt.Fprintln(os.Stderr, "bad turn:", err)
		return 3
	}
	sid := turn.SessionID
	if sid == "" {
		sid = fmt.Sprintf("sess-%d", os.Getpid())
	}
	out := json.NewEncoder(os.Stdout)
	emit := func(ev map[string]any) {
		ev["session_id"] = sid
		out.Encode(ev)
	}
	partial := func(text string) { emit(map[string]any{"type": "partial", "text": text}) }
	msg := turn.Message
	switch {
	case msg == "hang" || msg == "ignore-term":
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM)
		partial("working")
		for {
			<-sigs
			if msg == "hang" {
				return 143
			}
		}
	case msg == "perm":
		emit(map[string]any{"type": "permission_request", "request_id": "r1", "tool_name": "Bash",
			"description": "Run a command", "input": map[string]any{"command": "echo ok > f.txt"}})
		resp, err := in.ReadBytes('\n')
		if err != nil {
			partial("stdin closed")
			return 0
		}
		var r struct {
			Behavior string `json:"behavior"`
			Message  string `json:"message"`
		}
		json.Unmarshal(resp, &r)
		partial(r.Behavior + ":" + r.Message)
	case msg == "fail":
		partial("partial before failing")
		emit(map[string]any{"type": "error", "message": "upstream exploded"})
		return 1
	case strings.HasPrefix(msg, "sleep:"):
		var ms int
		fmt.Sscanf(msg, "sleep:%d", &ms)
		time.Sleep(time.Duration(ms) * time.Millisecond)
		emit(map[string]any{"type": "result", "text": "done"})
		return 0
	default:
		if turn.SessionID != "" {
			partial("(resumed " + turn.SessionID + ") ")
		}
		for _, a := range turn.Attachments {
			data, err := os.ReadFile(strings.TrimPrefix(a.URL, "file://"))
			partial(fmt.Sprintf("[%s: %q %v] ", a.Name, data, err))
		}
		for i, w := range strings.Fields(msg) {
			if i > 0 {
				w = " " + w
			}
			partial(w)
		}
	}
	emit(map[string]any{"type": "result", "text": "", "usage": map[string]any{"input_tokens": 3, "output_tokens": 5}})
	return 0
}
