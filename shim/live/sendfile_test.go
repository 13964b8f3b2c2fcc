package live

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/core/agentproc"
)

// callTool reads "CALL_TOOL:<name> ARGS:<json>" in text, as the mock model
// APIs in research/mock do, and picks the declared tool whose name ends
// with name (an MCP tool is declared as mcp__agentbridge__send_file, say).
func callTool(text string, declared []string) (name string, args map[string]any, ok bool) {
	_, rest, ok := strings.Cut(text, "CALL_TOOL:")
	if !ok {
		return "", nil, false
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return "", nil, false
	}
	name, args = f[0], map[string]any{}
	if _, a, ok := strings.Cut(rest, "ARGS:"); ok {
		if af := strings.Fields(a); len(af) > 0 {
			_ = json.Unmarshal([]byte(af[0]), &args)
		}
	}
	for _, d := range declared {
		if d == name || strings.HasSuffix(d, name) {
			return d, args, true
		}
	}
	return name, args, true
}

// toolNames lists the names of the tools a request declares, in any of
// the shapes the model APIs use: {name}, {function:{name}}, Gemini's
// {functionDeclarations:[{name}]}, and nested {tools:[…]}.
func toolNames(tools any) []string {
	var out []string
	list, _ := tools.([]any)
	for _, t := range list {
		m, _ := t.(map[string]any)
		if n, ok := m["name"].(string); ok {
			out = append(out, n)
		}
		if f, ok := m["function"].(map[string]any); ok {
			if n, ok := f["name"].(string); ok {
				out = append(out, n)
			}
		}
		for _, k := range []string{"functionDeclarations", "tools"} {
			out = append(out, toolNames(m[k])...)
		}
	}
	return out
}

// sendFileTurn runs one turn of profile's shim directly, in the test's
// working directory holding chart.png, with the profile's own arguments
// and environment, and returns the events it wrote. With permission on
// any permission_request fails the test (send_file must need none) and is
// denied.
func (e liveEnv) sendFileTurn(t *testing.T, profile string, permission bool, message string) []map[string]any {
	t.Helper()
	p, err := agentproc.LoadProfile(filepath.Join(repoRoot, "profiles", profile, "profile.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, kv := range e.env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	path := append(append([]string{}, e.path...), filepath.Dir(nodePath()), "/usr/local/bin", "/usr/bin", "/bin")
	env := append([]string{"PATH=" + strings.Join(path, ":"), "LANG=C.UTF-8"}, e.env...)
	for k, v := range p.Env {
		v = strings.ReplaceAll(v, "{{PROFILE_DIR}}", p.Dir())
		if v = os.Expand(v, func(n string) string { return vars[n] }); v != "" {
			env = append(env, k+"="+v)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(buildDir, "agentbridge"), p.Args...)
	cmd.Dir, cmd.Env = e.dir, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	turn, _ := json.Marshal(map[string]any{"type": "turn", "message": message, "session_id": "", "session_name": "default",
		"attachments": []any{}, "permission": permission, "protocol_version": "0.4"})
	_, _ = stdin.Write(append(turn, '\n'))
	if !permission {
		stdin.Close()
	}
	var evs []map[string]any
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), agentproc.MaxLineBytes)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Errorf("%s wrote a line that is not JSON: %.200s", profile, sc.Bytes())
			continue
		}
		evs = append(evs, ev)
		switch ev["type"] {
		case "permission_request":
			t.Errorf("%s asked permission for %v: send_file must need none", profile, ev["tool_name"])
			b, _ := json.Marshal(map[string]any{"type": "permission_response", "request_id": ev["request_id"], "behavior": "deny"})
			_, _ = stdin.Write(append(b, '\n'))
		case "result", "error":
			stdin.Close()
		}
	}
	stdin.Close()
	_ = cmd.Wait()
	t.Logf("%s stderr:\n%s", profile, stderr.Bytes()) // shown when the test fails
	return evs
}

// assertSentFile checks that a partial before the result carries want as
// chart.png, an image/png data: URL holding its bytes.
func assertSentFile(t *testing.T, profile string, evs []map[string]any, want []byte) {
	t.Helper()
	sent := -1
	for i, ev := range evs {
		atts, _ := ev["attachments"].([]any)
		for _, a := range atts {
			am, _ := a.(map[string]any)
			url, _ := am["url"].(string)
			b64, ok := strings.CutPrefix(url, "data:image/png;base64,")
			data, err := base64.StdEncoding.DecodeString(b64)
			if !ok || err != nil || !bytes.Equal(data, want) || am["kind"] != "image" || am["filename"] != "chart.png" || am["mime_type"] != "image/png" {
				t.Errorf("%s: attachment %v (%.60s…) is not chart.png's bytes as an image/png data: URL", profile, am["filename"], url)
				continue
			}
			if ev["type"] != "partial" {
				t.Errorf("%s: the file came on a %v event, want a partial", profile, ev["type"])
			}
			sent = i
		}
	}
	if sent < 0 {
		t.Fatalf("%s sent no file; events: %v", profile, evs)
	}
	last := evs[len(evs)-1]
	if last["type"] != "result" {
		t.Errorf("%s ended with %v, want a result after the file", profile, last)
	}
}

// chartFile writes a small PNG into dir as chart.png and returns its bytes.
func chartFile(t *testing.T, dir string) []byte {
	t.Helper()
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{0x42}, 600)...)
	if err := os.WriteFile(filepath.Join(dir, "chart.png"), png, 0o600); err != nil {
		t.Fatal(err)
	}
	return png
}

const sendChart = `please CALL_TOOL:send_file ARGS:{"path":"chart.png","caption":"Weekly"}`

// TestSendFileClaudeLive: Claude Code calls the send_file tool the shim
// registered (no permission prompt, approvals on as the profile ships),
// and the shim's stdout carries chart.png's bytes before the result.
func TestSendFileClaudeLive(t *testing.T) {
	t.Parallel()
	bin := cliDir(t, "claude", "@anthropic-ai/claude-code@2.1.197")
	mock := anthropicMock(t)
	e := liveEnv{path: []string{agentbridge(t), bin}, dir: t.TempDir(),
		env: []string{"HOME=" + t.TempDir(), "ANTHROPIC_BASE_URL=" + mock.URL, "ANTHROPIC_API_KEY=sk-ant-live-test", "CLAUDE_CODE_MAX_RETRIES=0"}}
	want := chartFile(t, e.dir)
	evs := e.sendFileTurn(t, "claude-code", true, sendChart)
	assertSentFile(t, "claude-code", evs, want)
}

// TestSendFileCodexLive: the same through codex, headless (exec) and with
// approvals (app-server, as the profile ships).
func TestSendFileCodexLive(t *testing.T) {
	t.Parallel()
	bin := cliDir(t, "codex", "@openai/codex@0.171.0")
	mock := codexToolMock(t)
	home := t.TempDir()
	e := liveEnv{path: []string{agentbridge(t), bin}, dir: t.TempDir(),
		env: []string{"HOME=" + home, "CODEX_HOME=" + codexHome(t, home, mock.URL), "OPENAI_API_KEY=sk-live-test"}}
	want := chartFile(t, e.dir)
	for _, permission := range []bool{false, true} {
		evs := e.sendFileTurn(t, "codex", permission, sendChart)
		assertSentFile(t, "codex", evs, want)
	}
}

// namespaceOf is the name of the Responses API namespace tool declaring
// the tool name, "" when it is declared at the top level.
func namespaceOf(tools any, name string) string {
	list, _ := tools.([]any)
	for _, t := range list {
		m, _ := t.(map[string]any)
		if m["type"] == "namespace" && slices.Contains(toolNames(m["tools"]), name) {
			ns, _ := m["name"].(string)
			return ns
		}
	}
	return ""
}

// TestSendFileGeminiLive: the same through Gemini CLI, headless as the
// profile ships it.
func TestSendFileGeminiLive(t *testing.T) {
	t.Parallel()
	bin := cliDir(t, "gemini", "@google/gemini-cli@0.61.0")
	mock := geminiMock(t)
	e := geminiEnv(t, bin, mock.URL)
	want := chartFile(t, e.dir)
	evs := e.sendFileTurn(t, "gemini-cli", false, sendChart)
	assertSentFile(t, "gemini-cli", evs, want)
}

func mustJSON(v any) string {
	s, err := jsonString(v)
	if err != nil {
		panic(err)
	}
	return s
}

// TestSendFileQwenLive: the same through Qwen Code, approvals on as the
// profile ships it.
func TestSendFileQwenLive(t *testing.T) {
	t.Parallel()
	bin := cliDir(t, "qwen", "@qwen-code/qwen-code@0.15.10")
	mock := chatMock(t)
	e := qwenEnv(t, bin, mock.URL)
	want := chartFile(t, e.dir)
	evs := e.sendFileTurn(t, "qwen-code", true, sendChart)
	assertSentFile(t, "qwen-code", evs, want)
}

// calledTool reports whether an assistant message of a Chat Completions
// conversation called the tool name.
func calledTool(msgs []any, name string) bool {
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		calls, _ := mm["tool_calls"].([]any)
		for _, c := range calls {
			f, _ := c.(map[string]any)["function"].(map[string]any)
			if f["name"] == name {
				return true
			}
		}
	}
	return false
}
