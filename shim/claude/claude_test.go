package claude

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/agentbridge/agentbridge/shim"
	"github.com/agentbridge/agentbridge/shim/internal/shimio"
	"github.com/agentbridge/agentbridge/shim/internal/shimtest"
)

func TestMain(m *testing.M) {
	shimtest.FakeMain() // the test binary doubles as the fake claude/qwen
	goleak.VerifyTestMain(m)
}

type ev = map[string]any

// Base argv of every turn (agents.md 1.1), after the send_file MCP
// server's registration, which names this test binary as agentbridge.
var claudeBase = append(sendFileFlags(`{"mcpServers":{"agentbridge":{"args":["mcp"],"command":%q,"type":"stdio"}}}`, "--allowedTools", "mcp__agentbridge__send_file"), "-p", "--input-format", "stream-json", "--output-format", "stream-json",
	"--verbose", "--include-partial-messages", "--disallowedTools", "AskUserQuestion")

// sendFileFlags is --mcp-config with config (%q: this binary), then more.
func sendFileFlags(config string, more ...any) []any {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return append([]any{"--mcp-config", fmt.Sprintf(config, exe)}, more...)
}

func argv(base []any, extra ...any) []string {
	var out []string
	for _, a := range append(append([]any{}, base...), extra...) {
		out = append(out, a.(string))
	}
	return out
}

func allow(req ev) ev {
	return ev{"type": "permission_response", "request_id": req["request_id"], "behavior": "allow"}
}

const (
	sid  = "b19d9545-17cb-4c85-8743-9879fbed2ee3"
	psid = "4c3aaee7-e961-445e-81e1-b856666dc875"
)

var bashInput = ev{"command": "touch mock_touched.txt", "description": "mock touch"}

func permRequest() ev {
	return ev{"type": "permission_request", "request_id": "3a0eb201-f07e-470e-b8ce-b99df97d8f9b", "tool_name": "Bash",
		"input": bashInput, "description": "mock touch", "tool_use_id": "toolu_740fafd4b9904bb88b2b", "session_id": psid}
}

// streamed is what stream.txt plays: thinking, then the answer in deltas.
func streamed() []ev {
	return []ev{
		{"type": "partial", "role": "thinking", "text": "The user greets me.", "session_id": sid},
		{"type": "partial", "role": "thinking", "text": " Answer briefly.", "session_id": sid},
		{"type": "partial", "text": "Hello", "session_id": sid},
		{"type": "partial", "text": " from", "session_id": sid},
		{"type": "partial", "text": " **Claude**.", "session_id": sid},
		{"type": "result", "text": "Hello from **Claude**.", "session_id": sid, "usage": ev{"input_tokens": 12.0, "output_tokens": 7.0,
			"total_tokens": 19.0, "cache_read_input_tokens": 5.0, "cache_creation_input_tokens": 3.0, "duration_ms": 257.0, "cost_usd": 0.000235}},
	}
}

// restarted is events after a session that could not be resumed: the
// notice first (without a session id: none is known yet), and the result
// text repeating it for a profile that does not stream.
func restarted(events ...ev) []ev {
	out := []ev{{"type": "partial", "text": shimio.ResumeNotice + "\n\n"}}
	for _, e := range events {
		if e["type"] == "result" {
			e = maps.Clone(e)
			e["text"] = shimio.ResumeNotice + "\n\n" + e["text"].(string)
		}
		out = append(out, e)
	}
	return out
}

func TestReplayClaude(t *testing.T) {
	usage := ev{"input_tokens": 24.0, "output_tokens": 14.0, "total_tokens": 38.0, "cache_read_input_tokens": 5.0,
		"cache_creation_input_tokens": 3.0, "duration_ms": 257.0, "cost_usd": 0.00047}
	tests := []shimtest.Replay{
		{
			Name:   "streamed answer with thinking",
			Script: "stream.txt",
			Turn:   ev{"message": "say hello"},
			Want:   streamed(),
			Argv:   argv(claudeBase),
		},
		{
			Name:   "resume keeps the session id, extra args pass through",
			Script: "resume.txt",
			Turn:   ev{"message": "and again", "session_id": "1dbc0ce2-76e2-43aa-93a6-951aacb4a03c"},
			Args:   []string{"--", "--model", "claude-sonnet-4-5"},
			Want: []ev{
				{"type": "partial", "text": "Second turn.", "session_id": "1dbc0ce2-76e2-43aa-93a6-951aacb4a03c"},
				{"type": "result", "text": "Second turn.", "session_id": "1dbc0ce2-76e2-43aa-93a6-951aacb4a03c", "usage": ev{"input_tokens": 40.0, "output_tokens": 3.0,
					"total_tokens": 43.0, "cache_read_input_tokens": 5.0, "cache_creation_input_tokens": 3.0, "duration_ms": 257.0, "cost_usd": 0.0006}},
			},
			Argv: argv(claudeBase, "--resume=1dbc0ce2-76e2-43aa-93a6-951aacb4a03c", "--model", "claude-sonnet-4-5"),
		},
		{
			Name:    "permission allowed without an edit: the unchanged input as updatedInput",
			Script:  "permission_allow.txt",
			Turn:    ev{"message": "please touch a file", "permission": true},
			Respond: allow,
			Want: []ev{
				{"type": "partial", "text": "I'll create it.", "session_id": psid},
				{"type": "partial", "role": "thinking", "text": "🔧 Bash: touch mock_touched.txt\n", "session_id": psid},
				permRequest(),
				{"type": "partial", "text": "\n\nDone.", "session_id": psid},
				{"type": "result", "text": "Done.", "session_id": psid, "usage": usage},
			},
			Argv: argv(claudeBase, "--permission-prompt-tool", "stdio"),
		},
		{
			Name:   "permission allowed with an edited input",
			Script: "permission_edit.txt",
			Turn:   ev{"message": "please touch a file", "permission": true},
			Respond: func(req ev) ev {
				return ev{"type": "permission_response", "request_id": req["request_id"], "behavior": "allow", "updated_input": ev{"command": "touch other.txt"}}
			},
			Want: []ev{
				{"type": "partial", "text": "I'll create it.", "session_id": psid},
				{"type": "partial", "role": "thinking", "text": "🔧 Bash: touch mock_touched.txt\n", "session_id": psid},
				permRequest(),
				{"type": "partial", "text": "\n\nDone.", "session_id": psid},
				{"type": "result", "text": "Done.", "session_id": psid, "usage": usage},
			},
			Argv: argv(claudeBase, "--permission-prompt-tool", "stdio"),
		},
		{
			Name:   "permission denied with a reason",
			Script: "permission_deny.txt",
			Turn:   ev{"message": "please touch a file", "permission": true},
			Respond: func(req ev) ev {
				return ev{"type": "permission_response", "request_id": req["request_id"], "behavior": "deny", "message": "not in this repo"}
			},
			Want: []ev{
				{"type": "partial", "text": "I'll create it.", "session_id": psid},
				{"type": "partial", "role": "thinking", "text": "🔧 Bash: touch mock_touched.txt\n", "session_id": psid},
				permRequest(),
				{"type": "partial", "text": "\n\nUnderstood, I did not touch it.", "session_id": psid},
				{"type": "result", "text": "Understood, I did not touch it.", "session_id": psid, "usage": usage},
			},
			Argv: argv(claudeBase, "--permission-prompt-tool", "stdio"),
		},
		{
			Name:    "AskUserQuestion denied by the shim, hook callback refused",
			Script:  "ask_user.txt",
			Turn:    ev{"message": "pick one", "permission": true},
			Respond: allow,
			Want: []ev{
				{"type": "partial", "text": "A or B?", "session_id": sid},
				{"type": "result", "text": "A or B?", "session_id": sid, "usage": ev{"input_tokens": 10.0, "output_tokens": 3.0, "total_tokens": 13.0,
					"cache_read_input_tokens": 5.0, "cache_creation_input_tokens": 3.0, "duration_ms": 257.0, "cost_usd": 0.0001}},
			},
			Argv: argv(claudeBase, "--permission-prompt-tool", "stdio"),
		},
		{
			Name:   "permission off: can_use_tool denied without asking",
			Script: "permission_off.txt",
			Turn:   ev{"message": "touch it"},
			Want: []ev{
				{"type": "partial", "text": "I was not allowed to run it.", "session_id": sid},
				{"type": "result", "text": "I was not allowed to run it.", "session_id": sid, "usage": ev{"input_tokens": 10.0, "output_tokens": 6.0, "total_tokens": 16.0,
					"cache_read_input_tokens": 5.0, "cache_creation_input_tokens": 3.0, "duration_ms": 257.0, "cost_usd": 0.0001}},
			},
			Argv: argv(claudeBase),
		},
		{
			Name:    "malformed and reused can_use_tool requests denied by the shim (F-PERM-1)",
			Script:  "permission_malformed.txt",
			Turn:    ev{"message": "touch it", "permission": true},
			Respond: allow,
			Want: []ev{
				{"type": "permission_request", "request_id": "r-ok", "tool_name": "Bash", "input": ev{"command": "true"}, "tool_use_id": "toolu_ok", "session_id": sid},
				{"type": "partial", "text": "Ran it once.", "session_id": sid},
				{"type": "result", "text": "Ran it once.", "session_id": sid, "usage": ev{"input_tokens": 10.0, "output_tokens": 6.0, "total_tokens": 16.0,
					"duration_ms": 257.0, "cost_usd": 0.0001}},
			},
			Argv: argv(claudeBase, "--permission-prompt-tool", "stdio"),
		},
		{
			Name:   "sub-agent events are not streamed",
			Script: "subagent.txt",
			Turn:   ev{"message": "research it"},
			Want: []ev{
				{"type": "partial", "text": "Summary.", "session_id": sid},
				{"type": "result", "text": "Summary.", "session_id": sid, "usage": ev{"input_tokens": 10.0, "output_tokens": 2.0, "total_tokens": 12.0,
					"cache_read_input_tokens": 5.0, "cache_creation_input_tokens": 3.0, "duration_ms": 257.0, "cost_usd": 0.0001}},
			},
			Argv: argv(claudeBase),
		},
		{
			Name:   "API 401: is_error with subtype success is an error, synthetic text not streamed",
			Script: "auth_error.txt",
			Turn:   ev{"message": "hi"},
			Want: []ev{
				{"type": "error", "message": "Invalid API key · Fix external API key — " + claudeFlavor.cli.Login, "session_id": "a272f556-1fc3-4a49-b8d0-d4c2284c8e4c",
					"usage": ev{"cache_read_input_tokens": 5.0, "cache_creation_input_tokens": 3.0, "duration_ms": 257.0}},
			},
			Argv:   argv(claudeBase),
			Failed: true,
		},
		{
			Name:   "a session claude no longer has: a new one in the same turn, one notice, only the new id",
			Script: "resume_unknown.txt",
			Turn:   ev{"message": "say hello", "session_id": "00000000-0000-0000-0000-000000000000"},
			Want:   restarted(streamed()...),
			Before: [][]string{argv(claudeBase, "--resume=00000000-0000-0000-0000-000000000000")},
			Argv:   argv(claudeBase),
		},
		{
			Name:   "an id claude cannot take (another agent's) is never passed to it",
			Script: "stream.txt",
			Turn:   ev{"message": "say hello", "session_id": "demo-485bc65220c3"},
			Want:   restarted(streamed()...),
			Argv:   argv(claudeBase),
		},
		{
			Name:   "a flag-like session id is never passed to claude",
			Script: "stream.txt",
			Turn:   ev{"message": "say hello", "session_id": "--dangerously-skip-permissions"},
			Want:   restarted(streamed()...),
			Argv:   argv(claudeBase),
		},
		{
			Name:   "not logged in: the error says what to do on the bridge's host",
			Script: "not_logged_in.txt",
			Turn:   ev{"message": "hi"},
			Want: []ev{
				{"type": "error", "message": "Not logged in · Please run /login — " + claudeFlavor.cli.Login,
					"session_id": "8f560834-aa40-44ef-92a2-6cdc841e33ca", "usage": ev{"duration_ms": 12.0}},
			},
			Argv:   argv(claudeBase),
			Failed: true,
		},
		{
			Name:   "CLI dies without a result: exit status and stderr",
			Script: "crash.txt",
			Turn:   ev{"message": "hi"},
			Want: []ev{
				{"type": "error", "message": "claude exited with status 3: Error: something broke inside the CLI", "session_id": sid},
			},
			Argv:   argv(claudeBase),
			Failed: true,
		},
	}
	shimtest.RunReplays(t, "claude", Run, ev{"type": "turn", "session_id": "", "session_name": "default", "attachments": []any{}, "protocol_version": "0.4"}, tests)
}

// A missing CLI is one clear error event, never silence (issue 7).
func TestMissingCLI(t *testing.T) {
	for _, tc := range []struct {
		run  shimtest.RunFunc
		want string
	}{
		{Run, "claude not found on PATH — install with npm i -g @anthropic-ai/claude-code"},
		{RunQwen, "qwen not found on PATH — install with npm i -g @qwen-code/qwen-code"},
	} {
		turn := ev{"type": "turn", "message": "hi", "session_id": "", "protocol_version": "0.4"}
		res := shimtest.Drive(t, tc.run, turn, nil, []string{"PATH=" + t.TempDir()}, nil)
		want := []ev{{"type": "error", "message": tc.want}}
		if diff := cmp.Diff(want, res.Events); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
		if !errors.Is(res.Err, shim.ErrTurnFailed) || !errors.Is(res.Err, shim.ErrCannotStart) {
			t.Errorf("Run error = %v, want ErrTurnFailed and ErrCannotStart (exit 127)", res.Err)
		}
	}
}

func TestBadInput(t *testing.T) {
	fake := shimtest.NewFake(t, "claude")
	for _, tc := range []struct {
		name string
		turn ev
		args []string
		want string
	}{
		{"not a turn", ev{"type": "permission_response"}, nil, `shim claude: read turn: first line has type "permission_response", want "turn"`},
		{"unknown shim flag", ev{"type": "turn", "message": "hi"}, []string{"--nope"}, "shim claude: flag provided but not defined: -nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := shimtest.Drive(t, Run, tc.turn, tc.args, fake.Environ(t, "testdata/stream.txt"), nil)
			if diff := cmp.Diff([]ev{{"type": "error", "message": tc.want}}, res.Events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPromptAttachments(t *testing.T) {
	turn := ev{"type": "turn", "message": "look", "attachments": []any{ev{"kind": "image", "url": "file:///tmp/a%20b.png", "name": "a b.png", "mime": "image/png"}}}
	fake := shimtest.NewFake(t, "claude")
	// The fake checks the user line it is sent; another prompt would end in a mismatch error.
	res := shimtest.Drive(t, Run, turn, nil, fake.Environ(t, "testdata/attachments.txt"), nil)
	want := []ev{{"type": "result", "text": "A cat.", "session_id": "5e4c1a2b-0d3f-4e6a-9b8c-7d1e2f3a4b5c"}}
	if diff := cmp.Diff(want, res.Events); diff != "" {
		t.Errorf("events (-want +got):\n%s\nstderr:\n%s", diff, res.Stderr)
	}
}

func TestReplayQwen(t *testing.T) {
	base := append(sendFileFlags(`{"mcpServers":{"agentbridge":{"args":["mcp"],"command":%q,"trust":true}}}`), "--input-format", "stream-json", "--output-format", "stream-json", "--include-partial-messages")
	const qsid, qpsid = "2d494145-bb64-4669-a235-97c1ad4dc89d", "72d7bf51-610b-441f-8ac4-c60a50b4853d"
	tests := []shimtest.Replay{
		{
			Name:   "streamed answer, resumed session",
			Script: "qwen_stream.txt",
			Turn:   ev{"message": "say hi", "session_id": qsid},
			Args:   []string{"--", "--auth-type", "openai"},
			Want: []ev{
				{"type": "partial", "text": "Hello", "session_id": qsid},
				{"type": "partial", "text": " from", "session_id": qsid},
				{"type": "partial", "text": " the", "session_id": qsid},
				{"type": "partial", "text": " chat", "session_id": qsid},
				{"type": "partial", "text": " mock.", "session_id": qsid},
				{"type": "result", "text": "Hello from the chat mock.", "session_id": qsid,
					"usage": ev{"input_tokens": 42.0, "output_tokens": 18.0, "total_tokens": 60.0, "duration_ms": 302.0}},
			},
			Argv: argv(base, "--resume="+qsid, "--auth-type", "openai"),
		},
		{
			Name:    "run_shell_command allowed",
			Script:  "qwen_permission.txt",
			Turn:    ev{"message": "please USE_TOOL now", "permission": true},
			Respond: allow,
			Want: []ev{
				{"type": "partial", "role": "thinking", "text": "🔧 run_shell_command: touch chat_touched.txt\n", "session_id": qpsid},
				{"type": "permission_request", "request_id": "938fb6d3-43d7-4c83-a3f3-2b5e1a446231", "tool_name": "run_shell_command",
					"input": ev{"command": "touch chat_touched.txt", "description": "mock touch"}, "tool_use_id": "call_2141dcc2", "session_id": qpsid},
				{"type": "partial", "text": "Mock done after tool.", "session_id": qpsid},
				{"type": "result", "text": "Mock done after tool.", "session_id": qpsid,
					"usage": ev{"input_tokens": 42.0, "output_tokens": 18.0, "total_tokens": 60.0, "duration_ms": 3620.0}},
			},
			Argv: argv(base),
		},
	}
	tests = append(tests, shimtest.Replay{
		Name:   "a session qwen no longer has: a new one in the same turn",
		Script: "qwen_resume_unknown.txt",
		Turn:   ev{"message": "say hi", "session_id": "11111111-2222-4333-8444-555555555555"},
		Want: restarted(
			ev{"type": "partial", "text": "Hello", "session_id": qsid},
			ev{"type": "partial", "text": " from", "session_id": qsid},
			ev{"type": "partial", "text": " the", "session_id": qsid},
			ev{"type": "partial", "text": " chat", "session_id": qsid},
			ev{"type": "partial", "text": " mock.", "session_id": qsid},
			ev{"type": "result", "text": "Hello from the chat mock.", "session_id": qsid,
				"usage": ev{"input_tokens": 42.0, "output_tokens": 18.0, "total_tokens": 60.0, "duration_ms": 302.0}}),
		Before: [][]string{argv(base, "--resume=11111111-2222-4333-8444-555555555555")},
		Argv:   argv(base),
	}, shimtest.Replay{
		Name:   "no key: qwen's error.message with the bridge-side hint, no unsaved session id",
		Script: "qwen_no_key.txt",
		Turn:   ev{"message": "hi"},
		Want:   []ev{{"type": "error", "message": "Missing API key for OpenAI-compatible auth. Set settings.security.auth.apiKey, or set the 'OPENAI_API_KEY' environment variable. — " + qwenFlavor.cli.Login}},
		Argv:   argv(base),
		Failed: true,
	})
	tests = append(tests, shimtest.Replay{
		Name:   "an API error qwen reports as a successful reply is the turn's error",
		Script: "qwen_api_error.txt",
		Turn:   ev{"message": "hi"},
		Want: []ev{{"type": "error", "message": "[API Error: Connection error. (cause: fetch failed)]", "session_id": "14d783cd-3549-44d1-bda9-5c2d19a836f0",
			"usage": ev{"duration_ms": 3274.0}}},
		Argv:   argv(base),
		Failed: true,
	})
	shimtest.RunReplays(t, "qwen", RunQwen, ev{"type": "turn", "session_id": "", "protocol_version": "0.4"}, tests)
}
