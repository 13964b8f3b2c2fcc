package codex

import (
	"fmt"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/agentbridge/agentbridge/shim/internal/shimio"
	"github.com/agentbridge/agentbridge/shim/internal/shimtest"
)

func TestMain(m *testing.M) {
	shimtest.FakeMain() // the test binary doubles as the fake codex
	goleak.VerifyTestMain(m)
}

type ev = map[string]any

const thread = "01a229d3-4374-7cf3-9613-535264693a9e"

func TestReplay(t *testing.T) {
	tests := []shimtest.Replay{
		{
			Name: "new thread: reasoning, message, usage", Script: "new.txt", Turn: ev{"message": "say hi"},
			Args: []string{"--", "-m", "gpt-mock", "-c", "analytics.enabled=false"},
			Want: []ev{
				{"type": "partial", "role": "thinking", "text": "**Greeting** the user", "session_id": thread},
				{"type": "partial", "text": "Hello from the responses mock.", "session_id": thread},
				{"type": "result", "text": "Hello from the responses mock.", "session_id": thread,
					"usage": ev{"input_tokens": 21.0, "output_tokens": 9.0, "total_tokens": 30.0, "cache_read_input_tokens": 4.0, "reasoning_tokens": 2.0}},
			},
			Argv: withSendFile("exec", "--json", "--skip-git-repo-check", "-m", "gpt-mock", "-c", "analytics.enabled=false", "-"),
		},
		{
			Name: "resume: exec resume THREAD -, prompt on stdin", Script: "resume.txt",
			Turn: ev{"message": "-second turn, dash first", "session_id": thread},
			Want: []ev{
				{"type": "partial", "text": "Second turn.", "session_id": thread},
				{"type": "result", "text": "Second turn.", "session_id": thread, "usage": ev{"input_tokens": 42.0, "output_tokens": 18.0, "total_tokens": 60.0}},
			},
			Argv: withSendFile("exec", "resume", "--json", "--skip-git-repo-check", thread, "-"),
		},
		{
			Name: "messages around a command; Reconnecting is not an error", Script: "tool.txt", Turn: ev{"message": "please USE_TOOL"},
			Want: []ev{
				{"type": "partial", "text": "Touching the file.", "session_id": thread},
				{"type": "partial", "role": "thinking", "text": "🔧 Bash: touch codex_touched.txt\n", "session_id": thread},
				{"type": "partial", "text": "\n\nMock done after tool.", "session_id": thread},
				{"type": "result", "text": "Mock done after tool.", "session_id": thread, "usage": ev{"input_tokens": 42.0, "output_tokens": 18.0, "total_tokens": 60.0}},
			},
			Argv: withSendFile("exec", "--json", "--skip-git-repo-check", "-"),
		},
		{
			Name: "turn.failed is the error", Script: "unauthorized.txt", Turn: ev{"message": "say hi"},
			Want: []ev{{"type": "error", "session_id": "01a229de-2058-78e2-ab61-b3c2bebc6978",
				"message": "unexpected status 401 Unauthorized: Incorrect API key provided (mock), url: http://127.0.0.1:8766/v1/responses — " + cli.Login}},
			Argv:   withSendFile("exec", "--json", "--skip-git-repo-check", "-"),
			Failed: true,
		},
		{
			Name: "an error event without turn.failed", Script: "error_only.txt", Turn: ev{"message": "say hi"},
			Want:   []ev{{"type": "error", "message": "thread/resume: no rollout found for thread id 0000"}},
			Argv:   withSendFile("exec", "--json", "--skip-git-repo-check", "-"),
			Failed: true,
		},
		{
			Name: "dies before any event: status and stderr", Script: "crash.txt", Turn: ev{"message": "say hi"},
			Want:   []ev{{"type": "error", "message": "codex exited with status 1: Error: `wire_api = \"chat\"` is no longer supported"}},
			Argv:   withSendFile("exec", "--json", "--skip-git-repo-check", "-"),
			Failed: true,
		},
	}
	fresh := []ev{
		{"type": "partial", "text": shimio.ResumeNotice + "\n\n"},
		{"type": "partial", "role": "thinking", "text": "**Greeting** the user", "session_id": thread},
		{"type": "partial", "text": "Hello from the responses mock.", "session_id": thread},
		{"type": "result", "text": shimio.ResumeNotice + "\n\nHello from the responses mock.", "session_id": thread,
			"usage": ev{"input_tokens": 21.0, "output_tokens": 9.0, "total_tokens": 30.0, "cache_read_input_tokens": 4.0, "reasoning_tokens": 2.0}},
	}
	tests = append(tests, shimtest.Replay{
		Name: "a thread codex has no rollout of: a new thread in the same turn, one notice", Script: "resume_unknown.txt",
		Turn:   ev{"message": "say hi", "session_id": "11111111-2222-4333-8444-555555555555"},
		Want:   fresh,
		Before: [][]string{withSendFile("exec", "resume", "--json", "--skip-git-repo-check", "11111111-2222-4333-8444-555555555555", "-")},
		Argv:   withSendFile("exec", "--json", "--skip-git-repo-check", "-"),
	}, shimtest.Replay{
		Name: "codex starts a new thread instead of the one asked for: one notice, the new id", Script: "resume_other.txt",
		Turn: ev{"message": "say hi", "session_id": "22222222-2222-4333-8444-555555555555"},
		Want: fresh,
		Argv: withSendFile("exec", "resume", "--json", "--skip-git-repo-check", "22222222-2222-4333-8444-555555555555", "-"),
	}, shimtest.Replay{
		Name: "an id codex would read as a thread name is never passed to it", Script: "new.txt",
		Turn: ev{"message": "say hi", "session_id": "demo-485bc65220c3"},
		Want: fresh,
		Argv: withSendFile("exec", "--json", "--skip-git-repo-check", "-"),
	})
	tests = append(tests, shimtest.Replay{
		Name: "an unreachable API ends the turn at the retry bound", Script: "no_network.txt",
		Turn: ev{"message": "say hi"}, Env: []string{shimio.RetryEnv + "=1"},
		Want: []ev{{"type": "error", "session_id": "01a230f0-ede2-7b01-bd2e-70ea4bd54d8a",
			"message": "codex could not reach its model API for 1s (Reconnecting... waiting for network (Connection failed: error sending request)); check the network and the API's URL on the bridge's host (" + shimio.RetryEnv + " sets this bound)"}},
		Argv:   withSendFile("exec", "--json", "--skip-git-repo-check", "-"),
		Failed: true,
	})
	shimtest.RunReplays(t, "codex", Run, ev{"type": "turn", "session_id": "", "protocol_version": "0.4"}, tests)
}

func TestMissingCLI(t *testing.T) {
	turn := ev{"type": "turn", "message": "hi", "session_id": "", "protocol_version": "0.4"}
	res := shimtest.Drive(t, Run, turn, nil, []string{"PATH=" + t.TempDir()}, nil)
	want := []ev{{"type": "error", "message": "codex not found on PATH — install with npm i -g @openai/codex"}}
	if diff := cmp.Diff(want, res.Events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// withSendFile is codex's argv after the -c flags that register the
// send_file MCP server, which names this test binary as agentbridge.
func withSendFile(args ...string) []string {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return append([]string{"-c", fmt.Sprintf("mcp_servers.agentbridge.command=%q", exe), "-c", `mcp_servers.agentbridge.args=["mcp"]`,
		"-c", `mcp_servers.agentbridge.env_vars=["AGENTBRIDGE_SEND_FILE_SPOOL","AGENTBRIDGE_SEND_FILE_ROOT"]`,
		"-c", `mcp_servers.agentbridge.default_tools_approval_mode="approve"`}, args...)
}
