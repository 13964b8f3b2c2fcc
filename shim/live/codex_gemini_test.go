package live

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// responsesMock serves the OpenAI Responses API (POST /v1/responses, SSE)
// the way codex's custom provider uses it (agents.md 2.3).
func responsesMock(t *testing.T) *mockServer {
	return newMock(t, func(m *mockServer, w http.ResponseWriter, r *http.Request, body map[string]any) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses") {
			http.NotFound(w, r)
			return
		}
		input, _ := body["input"].([]any)
		reply := "Hello from the responses mock. Request with " + itoa(len(input)) + " input items."
		w.Header().Set("Content-Type", "text/event-stream")
		item := map[string]any{"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress", "content": []any{}}
		sse(w, "response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": "resp_1", "object": "response", "status": "in_progress", "output": []any{}}})
		sse(w, "response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item})
		sse(w, "response.content_part.added", map[string]any{"type": "response.content_part.added", "output_index": 0, "item_id": "msg_1", "content_index": 0, "part": map[string]any{"type": "output_text", "text": ""}})
		for _, wd := range words(reply) {
			sse(w, "response.output_text.delta", map[string]any{"type": "response.output_text.delta", "output_index": 0, "item_id": "msg_1", "content_index": 0, "delta": wd})
		}
		sse(w, "response.output_text.done", map[string]any{"type": "response.output_text.done", "output_index": 0, "item_id": "msg_1", "content_index": 0, "text": reply})
		done := map[string]any{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": []any{map[string]any{"type": "output_text", "text": reply, "annotations": []any{}}}}
		sse(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": done})
		sse(w, "response.completed", map[string]any{"type": "response.completed", "response": map[string]any{"id": "resp_1", "status": "completed", "output": []any{done},
			"usage": map[string]any{"input_tokens": 21, "input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens": 9, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 30}}})
	})
}

func TestCodexLive(t *testing.T) {
	t.Parallel() // own HOME, mock and working directory: CPU-bound CLI starts overlap with waits
	bin := cliDir(t, "codex", "@openai/codex@0.171.0")
	mock := responsesMock(t)
	home, work := t.TempDir(), t.TempDir()
	codexHome := filepath.Join(home, ".codex")
	config := `model = "gpt-mock"
model_provider = "mock"

[model_providers.mock]
name = "mock"
base_url = "` + mock.URL + `/v1"
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
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	e := liveEnv{path: []string{agentbridge(t), bin}, dir: work,
		env: []string{"HOME=" + home, "CODEX_HOME=" + codexHome, "OPENAI_API_KEY=sk-live-test"}}

	first := e.run(t, "codex", "deny", "", "say hi")
	if first.ExitCode != 0 || first.SessionID == "" || !strings.HasPrefix(strings.Join(first.Partials, ""), "Hello from the responses mock.") {
		t.Fatalf("first turn: %+v", first)
	}
	if first.Usage["input_tokens"] == nil {
		t.Errorf("first turn usage = %v", first.Usage)
	}
	n1 := len(mock.bodies())
	second := e.run(t, "codex", "deny", first.SessionID, "second turn")
	if second.ExitCode != 0 || second.SessionID != first.SessionID {
		t.Fatalf("resumed turn: session %q, want %q; %+v", second.SessionID, first.SessionID, second)
	}
	b := mock.bodies()
	if h1, h2 := len(b[n1-1]["input"].([]any)), len(b[len(b)-1]["input"].([]any)); h2 <= h1 {
		t.Errorf("resumed turn sent %d input items, the first %d: history not resumed", h2, h1)
	}
}

// geminiMock serves the Gemini API as gemini-cli uses it (agents.md 3.4):
// the model router's generateContent, countTokens and the streamed answer.
func geminiMock(t *testing.T) *mockServer {
	return newMock(t, func(m *mockServer, w http.ResponseWriter, r *http.Request, body map[string]any) {
		path := r.URL.Path
		switch {
		case strings.HasSuffix(path, ":countTokens"):
			writeJSON(w, map[string]any{"totalTokens": 10})
		case strings.HasSuffix(path, ":generateContent"):
			writeJSON(w, map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model",
				"parts": []any{map[string]any{"text": `{"reasoning":"simple","model_choice":"flash"}`}}}, "finishReason": "STOP", "index": 0}},
				"usageMetadata": map[string]any{"promptTokenCount": 5, "candidatesTokenCount": 5, "totalTokenCount": 10}})
		case strings.HasSuffix(path, ":streamGenerateContent"):
			contents, _ := body["contents"].([]any)
			reply := "Hello from the gemini mock. Request with " + itoa(len(contents)) + " contents."
			w.Header().Set("Content-Type", "text/event-stream")
			var last map[string]any
			if len(contents) > 0 {
				last, _ = contents[len(contents)-1].(map[string]any)
			}
			parts, _ := last["parts"].([]any)
			for _, p := range parts {
				if fr, ok := p.(map[string]any)["functionResponse"]; ok {
					out, _ := jsonString(fr)
					reply = "Tool result: " + out
				}
			}
			if name, args, call := callTool(textOf(parts), toolNames(body["tools"])); call && !strings.HasPrefix(reply, "Tool result:") {
				sse(w, "", map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model",
					"parts": []any{map[string]any{"functionCall": map[string]any{"name": name, "args": args}}}}, "finishReason": "STOP", "index": 0}},
					"usageMetadata": map[string]any{"promptTokenCount": 17, "candidatesTokenCount": 6, "totalTokenCount": 23}, "modelVersion": "gemini-mock"})
				return
			}
			ws := words(reply)
			for i, wd := range ws {
				c := map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": wd}}}, "index": 0}
				chunk := map[string]any{"candidates": []any{c}, "modelVersion": "gemini-mock"}
				if i == len(ws)-1 {
					c["finishReason"] = "STOP"
					chunk["usageMetadata"] = map[string]any{"promptTokenCount": 17, "candidatesTokenCount": 6, "totalTokenCount": 23}
				}
				sse(w, "", chunk)
			}
		default:
			http.NotFound(w, r)
		}
	})
}

func TestGeminiLive(t *testing.T) {
	t.Parallel() // own HOME, mock and working directory: CPU-bound CLI starts overlap with waits
	bin := cliDir(t, "gemini", "@google/gemini-cli@0.61.0")
	mock := geminiMock(t)
	e := geminiEnv(t, bin, mock.URL)

	first := e.run(t, "gemini-cli", "deny", "", "say hi")
	if first.ExitCode != 0 || first.SessionID == "" || !strings.HasPrefix(strings.Join(first.Partials, ""), "Hello from the gemini mock.") || len(first.Partials) < 3 {
		t.Fatalf("first turn: %+v", first)
	}
	second := e.run(t, "gemini-cli", "deny", first.SessionID, "second turn")
	if second.ExitCode != 0 || second.SessionID != first.SessionID {
		t.Fatalf("resumed turn: session %q, want %q; %+v", second.SessionID, first.SessionID, second)
	}
	if got := strings.Join(second.Partials, ""); !strings.Contains(got, "Request with 3 contents.") {
		t.Errorf("resumed turn: %q, want the history (3 contents) resent", got)
	}
	e.check(t, "gemini-cli", "say hi")
}
