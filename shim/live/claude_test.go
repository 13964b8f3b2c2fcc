package live

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// anthropicMock serves the Messages API as Claude Code uses it (agents.md
// 1.6): streamed SSE; a Bash tool_use when the prompt says USE_TOOL; after a tool result, a reply quoting it.
func anthropicMock(t *testing.T) *mockServer {
	return newMock(t, func(m *mockServer, w http.ResponseWriter, r *http.Request, body map[string]any) {
		if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1/messages") || strings.HasSuffix(r.URL.Path, "count_tokens") {
			w.WriteHeader(http.StatusOK) // the HEAD / preflight, anything else
			return
		}
		msgs, _ := body["messages"].([]any)
		last := map[string]any{}
		if len(msgs) > 0 {
			last, _ = msgs[len(msgs)-1].(map[string]any)
		}
		var blocks []map[string]any
		reply := ""
		if blks, ok := last["content"].([]any); ok {
			for _, b := range blks {
				if bm, _ := b.(map[string]any); bm["type"] == "tool_result" {
					reply = "Tool result: " + strings.TrimSpace(textOf(bm["content"]))
					if bm["is_error"] == true {
						reply = "Tool error: " + strings.TrimSpace(textOf(bm["content"]))
					}
				}
			}
		}
		name, args, call := callTool(textOf(msgs), toolNames(body["tools"]))
		switch {
		case reply != "":
		case call:
			blocks = append(blocks, map[string]any{"type": "tool_use", "id": "toolu_live_2", "name": name, "input": args})
		case strings.Contains(textOf(msgs), "USE_TOOL"):
			blocks = append(blocks, map[string]any{"type": "tool_use", "id": "toolu_live_1", "name": "Bash",
				"input": map[string]any{"command": "touch touched.txt", "description": "touch a file"}})
		default:
			reply = "Hello from the mock. Turn with " + itoa(len(msgs)) + " messages."
		}
		w.Header().Set("Content-Type", "text/event-stream")
		stop := "end_turn"
		sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_live_" + itoa(len(m.bodies())),
			"type": "message", "role": "assistant", "model": body["model"], "content": []any{}, "stop_reason": nil,
			"usage": map[string]any{"input_tokens": 12, "output_tokens": 1}}})
		if reply != "" {
			sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
			for _, wd := range words(reply) {
				sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": wd}})
			}
			sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
		}
		for i, b := range blocks {
			stop = "tool_use"
			sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			in, _ := jsonString(b["input"])
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": in}})
			sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
		}
		sse(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 7}})
		sse(w, "message_stop", map[string]any{"type": "message_stop"})
	})
}

func TestClaudeCodeLive(t *testing.T) {
	t.Parallel() // own HOME, mock and working directory: CPU-bound CLI starts overlap with waits
	bin := cliDir(t, "claude", "@anthropic-ai/claude-code@2.1.197")
	mock := anthropicMock(t)
	home, work := t.TempDir(), t.TempDir()
	e := liveEnv{
		path: []string{agentbridge(t), bin},
		env: []string{"HOME=" + home, "ANTHROPIC_BASE_URL=" + mock.URL, "ANTHROPIC_API_KEY=sk-ant-live-test",
			// Allowlisted: the operator's value wins over the shim's 2.
			"CLAUDE_CODE_MAX_RETRIES=0"},
		dir: work,
	}

	first := e.run(t, "claude-code", "deny", "", "say hello")
	if first.ExitCode != 0 || first.SessionID == "" {
		t.Fatalf("first turn: %+v", first)
	}
	if got := strings.Join(first.Partials, ""); !strings.HasPrefix(got, "Hello from the mock.") || len(first.Partials) < 3 {
		t.Errorf("first turn streamed %q in %d partials, want the mock's words one by one", got, len(first.Partials))
	}
	if first.Usage["input_tokens"] == nil || first.Usage["output_tokens"] == nil {
		t.Errorf("first turn usage = %v, want tokens", first.Usage)
	}
	n1 := len(mock.bodies())

	second := e.run(t, "claude-code", "deny", first.SessionID, "and again")
	if second.ExitCode != 0 || second.SessionID != first.SessionID {
		t.Fatalf("resumed turn: session %q, want %q; %+v", second.SessionID, first.SessionID, second)
	}
	b := mock.bodies()
	if len(b) <= n1 {
		t.Fatalf("resumed turn made no model request")
	}
	if h1, h2 := len(b[n1-1]["messages"].([]any)), len(b[len(b)-1]["messages"].([]any)); h2 <= h1 {
		t.Errorf("resumed turn sent %d messages, the first %d: history not resumed", h2, h1)
	}

	allowed := e.run(t, "claude-code", "allow", "", "please USE_TOOL now")
	if allowed.ExitCode != 0 || !strings.Contains(strings.Join(allowed.Partials, ""), "Tool result:") {
		t.Errorf("allowed tool turn: %+v", allowed)
	}
	if _, err := os.Stat(filepath.Join(work, "touched.txt")); err != nil {
		t.Errorf("allowed Bash tool did not run: %v", err)
	}
	if err := os.Remove(filepath.Join(work, "touched.txt")); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}

	denied := e.run(t, "claude-code", "deny", "", "please USE_TOOL now")
	if got := strings.Join(denied.Partials, ""); denied.ExitCode != 0 || !strings.Contains(got, "Tool error: denied by agentbridge run --permission deny") {
		t.Errorf("denied tool turn streamed %q: %+v", got, denied)
	}
	if _, err := os.Stat(filepath.Join(work, "touched.txt")); !os.IsNotExist(err) {
		t.Errorf("denied Bash tool ran anyway (stat: %v)", err)
	}
	e.check(t, "claude-code", "say hello", "please USE_TOOL now")
}
