package slack_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"
)

// agentEnv switches the test binary into a test agent: end-to-end tests run
// real agent processes by re-executing themselves.
const agentEnv = "SLACK_TEST_AGENT"

// testAgent speaks AgentProc 0.4; what it does depends on the message:
//
//	perm       ask permission for Bash, report the answer
//	long:N     stream N numbered lines inside one code block, then a tail
//	slow:MS    stream "slow" word by word, MS milliseconds apart
//	anything   stream it back word by word
//
// A new session gets id "sess-<pid>"; a resumed one says so first. The
// result reports 12 input and 34 output tokens.
func testAgent() int {
	in := bufio.NewReader(os.Stdin)
	line, err := in.ReadBytes('\n')
	if err != nil {
		fmt.Fprintln(os.Stderr, "no turn:", err)
		return 3
	}
	var turn struct {
		Message   string `json:"message"`
		SessionID string `json:"session_id"`
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
	if turn.SessionID != "" {
		partial("(resumed " + turn.SessionID + ") ")
	}
	switch {
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
		partial("answer=" + r.Behavior + ":" + r.Message)
	case strings.HasPrefix(msg, "long:"):
		var n int
		fmt.Sscanf(msg, "long:%d", &n)
		partial("Here:\n\n```\n")
		for i := range n {
			partial(fmt.Sprintf("line %04d of the long answer\n", i))
		}
		partial("```\n\nEND-OF-LONG")
	case strings.HasPrefix(msg, "slow:"):
		var ms int
		fmt.Sscanf(msg, "slow:%d", &ms)
		for i := range 8 {
			partial(fmt.Sprintf("w%d ", i))
			time.Sleep(time.Duration(ms) * time.Millisecond)
		}
		partial("SLOW-DONE")
	default:
		for i, w := range strings.Fields(msg) {
			if i > 0 {
				w = " " + w
			}
			partial(w)
		}
	}
	emit(map[string]any{"type": "result", "text": "", "usage": map[string]any{"input_tokens": 12, "output_tokens": 34}})
	return 0
}
