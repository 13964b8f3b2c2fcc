package live

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// codexToolMock serves the Responses API like responsesMock, but when the
// user asks to USE_TOOL it calls codex's shell tool to touch a file, and
// once a tool output is in the input it answers quoting that output, so a
// test sees what codex told the model (agents.md 2.3).
func codexToolMock(t *testing.T) *mockServer {
	return newMock(t, func(m *mockServer, w http.ResponseWriter, r *http.Request, body map[string]any) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses") {
			http.NotFound(w, r)
			return
		}
		input, _ := body["input"].([]any)
		var userText, toolOut string
		for _, it := range input {
			im, _ := it.(map[string]any)
			switch {
			case im["role"] == "user":
				userText += textOf(im["content"])
			case im["type"] == "function_call_output" || im["type"] == "custom_tool_call_output":
				toolOut = strings.TrimSpace(textOf([]any{im}))
			}
		}
		tools := map[string]bool{}
		list, _ := body["tools"].([]any)
		for _, tl := range list {
			if tm, _ := tl.(map[string]any); tm != nil {
				name, _ := tm["name"].(string)
				tools[name] = true
			}
		}
		w.Header().Set("Content-Type", "text/event-stream")
		sse(w, "response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": "resp_t", "object": "response", "status": "in_progress", "output": []any{}}})
		var out map[string]any
		if name, args, call := callTool(userText, toolNames(body["tools"])); call && toolOut == "" {
			// codex declares an MCP server's tools in a namespace
			// (mcp__agentbridge) the call names beside the tool.
			a, _ := jsonString(args)
			out = map[string]any{"type": "function_call", "id": "fc_live_2", "call_id": "call_live_2", "name": name, "arguments": a, "status": "completed"}
			if ns := namespaceOf(body["tools"], name); ns != "" {
				out["namespace"] = ns
			}
			sse(w, "response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0, "item": map[string]any{"type": "function_call", "id": "fc_live_2", "call_id": "call_live_2", "name": name, "arguments": "", "status": "in_progress"}})
		} else if strings.Contains(userText, "USE_TOOL") && toolOut == "" {
			name, args := "shell", `{"command":["bash","-lc","touch codex_touched.txt"]}`
			switch {
			case tools["exec_command"]:
				name, args = "exec_command", `{"cmd":"touch codex_touched.txt"}`
			case tools["shell_command"]:
				name, args = "shell_command", `{"command":"touch codex_touched.txt"}`
			}
			out = map[string]any{"type": "function_call", "id": "fc_live_1", "call_id": "call_live_1", "name": name, "arguments": args, "status": "completed"}
			sse(w, "response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0, "item": map[string]any{"type": "function_call", "id": "fc_live_1", "call_id": "call_live_1", "name": name, "arguments": "", "status": "in_progress"}})
		} else {
			reply := "Hello from the tool mock."
			if toolOut != "" {
				reply = "Tool output: " + toolOut
			}
			sse(w, "response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0, "item": map[string]any{"type": "message", "id": "msg_t", "role": "assistant", "status": "in_progress", "content": []any{}}})
			for _, wd := range words(reply) {
				sse(w, "response.output_text.delta", map[string]any{"type": "response.output_text.delta", "output_index": 0, "item_id": "msg_t", "content_index": 0, "delta": wd})
			}
			out = map[string]any{"type": "message", "id": "msg_t", "role": "assistant", "status": "completed", "content": []any{map[string]any{"type": "output_text", "text": reply, "annotations": []any{}}}}
		}
		sse(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": out})
		sse(w, "response.completed", map[string]any{"type": "response.completed", "response": map[string]any{"id": "resp_t", "status": "completed", "output": []any{out},
			"usage": map[string]any{"input_tokens": 21, "input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens": 9, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 30}}})
	})
}

// codexHome writes a CODEX_HOME whose config sends codex to the mock with
// telemetry, plugins and websockets off (agents.md 2.3).
func codexHome(t *testing.T, home, mockURL string) string {
	t.Helper()
	dir := filepath.Join(home, ".codex")
	config := `model = "gpt-mock"
model_provider = "mock"

[model_providers.mock]
name = "mock"
base_url = "` + mockURL + `/v1"
wire_api = "responses"
env_key = "OPENAI_API_KEY"
supports_websockets = false
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[features]
plugins = false
remote_plugin = false
apps = false
`
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCodexApprovalLive: with the shipped profile (permission: true) a
// shell command codex wants to run reaches `agentbridge run` as a
// permission_request; allowed, it runs; denied, it does not, and the model
// is told so.
func TestCodexApprovalLive(t *testing.T) {
	t.Parallel() // own HOME, mock and working directory: CPU-bound CLI starts overlap with waits
	bin := cliDir(t, "codex", "@openai/codex@0.171.0")
	mock := codexToolMock(t)
	home, work := t.TempDir(), t.TempDir()
	e := liveEnv{path: []string{agentbridge(t), bin}, dir: work,
		env: []string{"HOME=" + home, "CODEX_HOME=" + codexHome(t, home, mock.URL), "OPENAI_API_KEY=sk-live-test"}}
	touched := filepath.Join(work, "codex_touched.txt")

	// The tool call shows (a thinking partial) before its permission
	// request, then the answer.
	const toolLine = "🔧 Bash: touch codex_touched.txt\n"
	allowed := e.run(t, "codex", "allow", "", "please USE_TOOL now")
	if allowed.ExitCode != 0 || allowed.SessionID == "" || !strings.HasPrefix(strings.Join(allowed.Partials, ""), toolLine+"Tool output:") {
		t.Errorf("allowed tool turn: %+v", allowed)
	}
	if _, err := os.Stat(touched); err != nil {
		t.Errorf("allowed command did not run: %v\nstderr:\n%s", err, allowed.Stderr)
	}
	if err := os.Remove(touched); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}

	denied := e.run(t, "codex", "deny", "", "please USE_TOOL now")
	got := strings.Join(denied.Partials, "")
	t.Logf("allowed turn: %q; denied turn: %q", strings.Join(allowed.Partials, ""), got)
	if denied.ExitCode != 0 || !strings.HasPrefix(got, toolLine+"Tool output:") || !strings.Contains(strings.ToLower(got), "reject") {
		t.Errorf("denied tool turn streamed %q, want the model told of the rejection: %+v", got, denied)
	}
	if _, err := os.Stat(touched); !os.IsNotExist(err) {
		t.Errorf("denied command ran anyway (stat: %v)", err)
	}
	e.check(t, "codex", "say hi", "please USE_TOOL now")
}
