package gemini

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/agentbridge/agentbridge/shim/internal/shimio"
	"github.com/agentbridge/agentbridge/shim/internal/shimtest"
)

func TestMain(m *testing.M) {
	shimtest.FakeMain() // the test binary doubles as the fake gemini
	goleak.VerifyTestMain(m)
}

type ev = map[string]any

const sid = "6f5d28f1-ca40-4620-ab19-c9c4a0fc2c16"

func TestReplay(t *testing.T) {
	tests := []shimtest.Replay{
		{
			Name: "streamed answer", Script: "stream.txt", Turn: ev{"message": "say hi"},
			Args: []string{"--", "-m", "gemini-2.5-flash"},
			Want: []ev{
				{"type": "partial", "text": "Hello", "session_id": sid},
				{"type": "partial", "text": " from", "session_id": sid},
				{"type": "partial", "text": " gemini.", "session_id": sid},
				{"type": "result", "text": "Hello from gemini.", "session_id": sid,
					"usage": ev{"input_tokens": 34.0, "output_tokens": 12.0, "total_tokens": 46.0, "duration_ms": 104.0}},
			},
			Argv: []string{"--output-format", "stream-json", "-m", "gemini-2.5-flash"},
		},
		{
			Name: "resume", Script: "resume.txt", Turn: ev{"message": "second turn", "session_id": sid},
			Want: []ev{
				{"type": "partial", "text": "Again.", "session_id": sid},
				{"type": "result", "text": "Again.", "session_id": sid,
					"usage": ev{"input_tokens": 60.0, "output_tokens": 3.0, "total_tokens": 63.0, "duration_ms": 98.0}},
			},
			Argv: []string{"--output-format", "stream-json", "--resume", sid},
		},
		{
			Name: "tool call and a warning", Script: "tool.txt", Turn: ev{"message": "please USE_TOOL"},
			Want: []ev{
				{"type": "partial", "role": "thinking", "text": "🔧 run_shell_command: touch gemini_touched.txt\n", "session_id": "a30990f3-2747-4e0e-a66c-0176b75b3c3c"},
				{"type": "partial", "text": "Mock done after tool.", "session_id": "a30990f3-2747-4e0e-a66c-0176b75b3c3c"},
				{"type": "result", "text": "Mock done after tool.", "session_id": "a30990f3-2747-4e0e-a66c-0176b75b3c3c",
					"usage": ev{"input_tokens": 51.0, "output_tokens": 18.0, "total_tokens": 69.0, "duration_ms": 242.0}},
			},
			Argv: []string{"--output-format", "stream-json"},
		},
		{
			Name: "result with status error", Script: "api_error.txt", Turn: ev{"message": "say hi"},
			Want: []ev{
				{"type": "partial", "text": "Partly", "session_id": sid},
				{"type": "error", "message": "API key not valid. Please pass a valid API key. — " + cli.Login, "session_id": sid,
					"usage": ev{"input_tokens": 17.0, "total_tokens": 17.0, "duration_ms": 10.0}},
			},
			Argv:   []string{"--output-format", "stream-json"},
			Failed: true,
		},
		{
			Name: "untrusted directory: exit 55 explained", Script: "untrusted.txt", Turn: ev{"message": "say hi"},
			Want:   []ev{{"type": "error", "message": "gemini refuses to run in an untrusted directory: set GEMINI_CLI_TRUST_WORKSPACE=true in the profile's env (or trust the directory in gemini)"}},
			Argv:   []string{"--output-format", "stream-json"},
			Failed: true,
		},
	}
	fresh := []ev{
		{"type": "partial", "text": shimio.ResumeNotice + "\n\n"},
		{"type": "partial", "text": "Hello", "session_id": sid},
		{"type": "partial", "text": " from", "session_id": sid},
		{"type": "partial", "text": " gemini.", "session_id": sid},
		{"type": "result", "text": shimio.ResumeNotice + "\n\nHello from gemini.", "session_id": sid,
			"usage": ev{"input_tokens": 34.0, "output_tokens": 12.0, "total_tokens": 46.0, "duration_ms": 104.0}},
	}
	tests = append(tests, shimtest.Replay{
		Name: "a session gemini has no file of: a new one in the same turn, one notice", Script: "resume_unknown.txt",
		Turn:   ev{"message": "say hi", "session_id": "11111111-2222-4333-8444-555555555555"},
		Want:   fresh,
		Before: [][]string{{"--output-format", "stream-json", "--resume", "11111111-2222-4333-8444-555555555555"}},
		Argv:   []string{"--output-format", "stream-json"},
	}, shimtest.Replay{
		// gemini reads "latest" or "1" as a pick from its own list.
		Name: "an id that is not a UUID is never passed to gemini", Script: "stream.txt",
		Turn: ev{"message": "say hi", "session_id": "latest"},
		Want: fresh,
		Argv: []string{"--output-format", "stream-json"},
	}, shimtest.Replay{
		Name: "no API key: the error says what to do on the bridge's host", Script: "no_key.txt",
		Turn: ev{"message": "say hi"},
		Want: []ev{{"type": "error", "message": "gemini exited with status 41: When using Gemini API, you must specify the GEMINI_API_KEY environment variable.\n" +
			"Update your environment and try again (no reload needed if using .env)! — " + cli.Login}},
		Argv:   []string{"--output-format", "stream-json"},
		Failed: true,
	})
	tests = append(tests, shimtest.Replay{
		Name: "an unreachable API ends the turn at the retry bound", Script: "no_network.txt",
		Turn: ev{"message": "say hi"}, Env: []string{shimio.RetryEnv + "=1"},
		// No session id: gemini cannot resume a session it never got an
		// answer in.
		Want: []ev{{"type": "error",
			"message": "gemini could not reach its model API for 1s (Attempt 1 failed. Retrying with backoff... Error: exception TypeError: fetch failed sending request); check the network and the API's URL on the bridge's host (" + shimio.RetryEnv + " sets this bound)"}},
		Argv:   []string{"--output-format", "stream-json"},
		Failed: true,
	})
	for i := range tests {
		// The registration's flag names a file in the turn's own spool:
		// TestSendFileRegistered checks it.
		tests[i].Args = append([]string{"--send-file=false"}, tests[i].Args...)
	}
	shimtest.RunReplays(t, "gemini", Run, ev{"type": "turn", "session_id": "", "protocol_version": "0.4"}, tests)
}

// TestSendFileRegistered: the shim registers the send_file MCP server as
// a gemini extension in gemini's home, naming this binary with the
// argument mcp, and allows its tool with a policy file passed with
// --policy, which it removes with the spool once the turn is over.
func TestSendFileRegistered(t *testing.T) {
	fake := shimtest.NewFake(t, "gemini")
	env := fake.Environ(t, "testdata/stream.txt")
	res := shimtest.Drive(t, Run, ev{"type": "turn", "message": "say hi", "session_id": "", "protocol_version": "0.4"}, nil, env, nil)
	if res.Err != nil {
		t.Fatalf("Run: %v\n%s", res.Err, res.Stderr)
	}
	exe, _ := os.Executable()
	b, err := os.ReadFile(filepath.Join(fake.Dir, ".gemini", "extensions", "agentbridge", "gemini-extension.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ext struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(b, &ext); err != nil || ext.MCPServers["agentbridge"].Command != exe || !slices.Equal(ext.MCPServers["agentbridge"].Args, []string{"mcp"}) {
		t.Errorf("extension %s (%v), want agentbridge: %s mcp", b, err, exe)
	}
	argv := fake.Args(t)
	i := slices.Index(argv, "--policy")
	if i < 0 || i+1 >= len(argv) || !strings.HasSuffix(argv[i+1], ".gemini-policy.toml") {
		t.Fatalf("argv %q lacks --policy FILE", argv)
	}
	if _, err := os.Stat(argv[i+1]); !os.IsNotExist(err) {
		t.Errorf("the policy file outlived the turn (stat: %v)", err)
	}
}

func TestMissingCLI(t *testing.T) {
	turn := ev{"type": "turn", "message": "hi", "session_id": "", "protocol_version": "0.4"}
	res := shimtest.Drive(t, Run, turn, nil, []string{"PATH=" + t.TempDir()}, nil)
	want := []ev{{"type": "error", "message": "gemini not found on PATH — install with npm i -g @google/gemini-cli"}}
	if diff := cmp.Diff(want, res.Events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
