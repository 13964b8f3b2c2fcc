package discord

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

// agentEnv switches the test binary into a test agent: the end-to-end
// tests run real AgentProc processes by re-executing themselves.
const agentEnv = "DISCORD_TEST_AGENT"

func TestMain(m *testing.M) {
	if os.Getenv(agentEnv) != "" {
		os.Exit(testAgent())
	}
	goleak.VerifyTestMain(m)
}

// longAnswer is a reply well over Discord's limit with a code block that
// straddles a split point.
func longAnswer() string {
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

// testAgent speaks AgentProc 0.4: "long" streams longAnswer in small
// partials over about 3 s; anything else is streamed back word by word.
func testAgent() int {
	line, err := bufio.NewReader(os.Stdin).ReadBytes('\n')
	if err != nil {
		return 3
	}
	var turn struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(line, &turn) != nil {
		return 3
	}
	out := json.NewEncoder(os.Stdout)
	partial := func(s string) { out.Encode(map[string]any{"type": "partial", "text": s, "session_id": "s1"}) }
	if turn.Message == "long" {
		text := longAnswer()
		for len(text) > 0 {
			n := min(len(text), 120)
			partial(text[:n])
			text = text[n:]
			time.Sleep(40 * time.Millisecond) // an agent's pace, not synchronization
		}
	} else {
		for i, w := range strings.Fields(turn.Message) {
			if i > 0 {
				w = " " + w
			}
			partial(w)
		}
	}
	out.Encode(map[string]any{"type": "result", "text": "", "session_id": "s1"})
	return 0
}
