// Package gemini is the AgentProc 0.4 shim for Gemini CLI in headless
// mode: `gemini -o stream-json [--resume ID]` with the prompt on stdin.
// Headless Gemini has no approval channel: which tools it may use is
// decided up front by its --approval-mode (default offers no shell or
// write tools at all), so this shim sends no permission requests.
package gemini

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbridge/agentbridge/shim/internal/shimio"
	"github.com/agentbridge/agentbridge/shim/sendfile"
)

var cli = shimio.CLI{Bin: "gemini", Install: "npm i -g @google/gemini-cli",
	// gemini 0.61.0 exits 42 with "Error resuming session: Invalid session
	// identifier …" (or "…: No previous sessions found for this
	// project.") on stderr.
	LostSession: []string{"Error resuming session"},
	// "Attempt 1 failed. Retrying with backoff... Error: exception
	// TypeError: fetch failed sending request": gemini has no knob for
	// this in the environment (general.maxAttempts is a settings.json key).
	Retrying: []string{"failed. Retrying with backoff"},
	NoLogin: []string{"must specify the GEMINI_API_KEY", "Invalid auth method selected", "API key not valid",
		"API_KEY_INVALID", "Please set an Auth method"},
	Login: "set GEMINI_API_KEY (or GOOGLE_API_KEY, or Vertex AI's GOOGLE_CLOUD_PROJECT and GOOGLE_GENAI_USE_VERTEXAI) in the bridge's environment, or on the bridge's host run `gemini` once and log in"}

// Run runs one AgentProc turn through `gemini -o stream-json`. stdin
// carries the turn line, stdout receives AgentProc events, stderr gemini's
// own stderr. args are the shim's flags (--bin PATH), then optionally "--"
// and flags passed to gemini unchanged (e.g. -m MODEL, --approval-mode
// auto_edit). environ is gemini's environment; its PATH is searched.
//
// It returns nil after a result, shim.ErrTurnFailed (wrapped) after an error
// event, or ctx's error when stopped.
func Run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, args, environ []string) error {
	em := shimio.NewEmitter(stdout)
	st, err := shimio.Begin(em, "gemini", cli, stdin, stderr, args, nil)
	if err != nil {
		return err
	}
	defer st.SendFile.Close()
	if st.SendFile != nil {
		st.Args = append(sendFileExtension(st.SendFile, environ, stderr), st.Args...)
	}
	return shimio.Attempts(em, stderr, "gemini", st.Resume, func(resume string) error {
		return attempt(ctx, st, resume, em, stderr, environ)
	})
}

// sendFileExtension registers the send_file MCP server with gemini as an
// extension, in the extensions directory of the gemini home environ names
// (GEMINI_CLI_HOME, else HOME): gemini has no flag for an MCP server, and
// the settings files it would take from elsewhere (system settings and
// defaults) must be owned by root. The extension is the same on every
// turn — the spool reaches the server through gemini's environment — so
// it is written only when missing or changed (a new agentbridge path).
// It returns gemini's flags for the turn: a policy allowing the tool
// (headless gemini offers the model no tool that would need a
// confirmation, and ignores an extension's "trust"), or nothing when
// the tool cannot be registered.
func sendFileExtension(sf *shimio.SendFile, environ []string, stderr io.Writer) []string {
	home := ""
	for _, k := range []string{"HOME", "GEMINI_CLI_HOME"} {
		for _, kv := range environ {
			if v, ok := strings.CutPrefix(kv, k+"="); ok && v != "" {
				home = v
			}
		}
	}
	if home == "" {
		fmt.Fprintln(stderr, "shim gemini: send_file is off: no HOME to register it in")
		return nil
	}
	dir := filepath.Join(home, ".gemini", "extensions", sendfile.ServerName)
	b, _ := json.MarshalIndent(map[string]any{
		"name": sendfile.ServerName, "version": "1.0.0",
		"description": "agentbridge's send_file tool: the agent sends files to the chat (written by agentbridge shim gemini)",
		"mcpServers":  map[string]any{sendfile.ServerName: map[string]any{"command": sf.Command, "args": sf.Args, "trust": true}},
	}, "", "  ")
	path := filepath.Join(dir, "gemini-extension.json")
	if old, err := os.ReadFile(path); err != nil || !bytes.Equal(old, b) {
		err := os.MkdirAll(dir, 0o700)
		if err == nil {
			err = writeAtomic(path, b)
		}
		if err != nil {
			fmt.Fprintf(stderr, "shim gemini: send_file is off: %v\n", err)
			return nil
		}
	}
	policy := filepath.Join(sf.Dir(), ".gemini-policy.toml")
	rule := fmt.Sprintf("[[rule]]\nmcpName = %q\ntoolName = %q\ndecision = \"allow\"\npriority = 500\n", sendfile.ServerName, sendfile.ToolName)
	if err := os.WriteFile(policy, []byte(rule), 0o600); err != nil {
		fmt.Fprintf(stderr, "shim gemini: send_file is off: %v\n", err)
		return nil
	}
	return []string{"--policy", policy}
}

// writeAtomic writes b to path through a temporary file and a rename, so
// a gemini starting at the same time never reads half of it.
func writeAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

// attempt runs gemini once: resuming resume, or a new session for "".
func attempt(ctx context.Context, st shimio.Setup, resume string, em *shimio.Emitter, stderr io.Writer, environ []string) error {
	argv := []string{"--output-format", "stream-json"}
	if resume != "" {
		argv = append(argv, "--resume", resume)
	}
	argv = append(argv, st.Args...)
	p, err := shimio.Launch(ctx, em, st.CLI, argv, environ, stderr)
	if err != nil {
		return err
	}
	p.Resuming = resume != ""
	// The prompt on stdin, not as an argument: it may start with "-".
	_, _ = io.WriteString(p.Stdin, st.Turn.Prompt())
	p.Stdin.Close()
	t := &translator{em: em, p: p, stderr: stderr, resumed: resume != ""}
	readErr := shimio.ReadLines(p.Stdout, shimio.MaxLineBytes, t.handle)
	return p.Finish(ctx, em, st.CLI, readErr, func(code int) string {
		if code == 55 {
			return "gemini refuses to run in an untrusted directory: set GEMINI_CLI_TRUST_WORKSPACE=true in the profile's env (or trust the directory in gemini)"
		}
		return ""
	})
}

// translator turns gemini's stream-json events into AgentProc events.
type translator struct {
	em      *shimio.Emitter
	p       *shimio.Proc // told about progress (nil in fuzz tests)
	resumed bool         // gemini resumed a saved session
	sid     string       // init's session id, reported once gemini can resume it
	stderr  io.Writer
	text    strings.Builder // the assistant's text so far: the result text
}

type streamEvent struct {
	Type      string          `json:"type"`
	SessionID string          `json:"session_id"`
	Role      string          `json:"role"`
	Content   string          `json:"content"`
	Delta     bool            `json:"delta"`
	Severity  string          `json:"severity"`
	Message   string          `json:"message"`
	Status    string          `json:"status"`
	ToolName  string          `json:"tool_name"`  // tool_use
	Params    json.RawMessage `json:"parameters"` // tool_use
	Error     *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	Stats *struct {
		TotalTokens  int64   `json:"total_tokens"`
		InputTokens  int64   `json:"input_tokens"`
		OutputTokens int64   `json:"output_tokens"`
		Cached       int64   `json:"cached"`
		DurationMS   float64 `json:"duration_ms"`
	} `json:"stats"`
}

func (t *translator) handle(raw []byte) error {
	var ev streamEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		fmt.Fprintf(t.stderr, "shim gemini: ignored a line that is not JSON: %.200s\n", raw)
		return nil
	}
	if ev.Type == "tool_result" {
		t.p.Progress() // a tool ran: the API's silence counts from here
	}
	if ev.Type == "tool_use" || ev.Type == "result" && ev.Status == "success" || ev.Type == "message" && ev.Role == "assistant" {
		t.p.Progress() // gemini heard from its model API
		// gemini 0.61.0 cannot resume a session without a model message
		// ("No previous sessions found for this project."), though it
		// saved the user's: the id is reported from the first answer on.
		t.em.SetSession(t.sid)
	}
	switch ev.Type {
	case "init":
		// Only init carries the id; the emitter repeats it.
		t.sid = ev.SessionID
		if t.resumed {
			t.em.SetSession(t.sid)
		}
	case "tool_use":
		_ = t.em.Tool(ev.ToolName, shimio.ToolDetail(ev.Params))
	case "message":
		if ev.Role == "assistant" {
			t.text.WriteString(ev.Content)
			_ = t.em.Partial(ev.Content, "")
		}
	case "error":
		if ev.Severity == "error" {
			_ = t.em.Error(ev.Message, nil)
		} else {
			fmt.Fprintf(t.stderr, "shim gemini: %s: %s\n", ev.Severity, ev.Message)
		}
	case "result":
		u := usage(&ev)
		if ev.Status == "success" {
			_ = t.em.Result(t.text.String(), u)
			return nil
		}
		msg := "gemini: the turn failed (" + ev.Status + ")"
		if ev.Error != nil && ev.Error.Message != "" {
			msg = ev.Error.Message
		}
		_ = t.em.Error(msg, u)
	}
	return nil
}

func usage(ev *streamEvent) *shimio.Usage {
	if ev.Stats == nil {
		return nil
	}
	s := ev.Stats
	return &shimio.Usage{InputTokens: s.InputTokens, OutputTokens: s.OutputTokens, TotalTokens: s.TotalTokens,
		CacheReadInputTokens: s.Cached, DurationMS: s.DurationMS}
}
