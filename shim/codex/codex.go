// Package codex is the AgentProc 0.4 shim for the OpenAI Codex CLI. With
// permission off it runs codex headless: `codex exec --json` for a new
// thread and `codex exec resume --json THREAD_ID` for the next turn, prompt
// on stdin; exec never asks (its sandbox decides what runs). With
// permission on it drives `codex app-server` over JSON-RPC instead: token
// deltas, and command and file-change approvals routed to the bridge as
// permission_request events.
package codex

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/shim/internal/shimio"
	"github.com/agentbridge/agentbridge/shim/sendfile"
)

var cli = shimio.CLI{Bin: "codex", Install: "npm i -g @openai/codex",
	// codex 0.171.0: exec's stderr "Error: thread/resume: thread/resume
	// failed: no rollout found for thread id …", and app-server's
	// thread/resume errors "no rollout found for thread id …" and
	// "invalid session id: …".
	LostSession: []string{"no rollout found for thread id", "invalid session id"},
	NoLogin:     []string{"401 Unauthorized", "Not logged in", "no Codex credentials were found"},
	Login:       "on the bridge's host run `codex login` (with the profile's CODEX_HOME), or set OPENAI_API_KEY in the bridge's environment"}

// Run runs one AgentProc turn through `codex exec --json`, or through
// `codex app-server` when the turn line says "permission": true. stdin
// carries the turn line (and, with permission on, the bridge's
// permission_response lines), stdout receives AgentProc events, stderr
// codex's own stderr. args are the shim's flags (--bin PATH,
// --approval-policy POLICY), then optionally "--" and flags passed to codex
// unchanged: after `exec` or after `app-server`, so only flags both accept
// work in a profile that may run either (-c key=value, --enable/--disable
// FEATURE; --sandbox and -m are exec-only: use -c sandbox_mode=... and
// -c model=...). environ is codex's environment; its PATH is searched for
// the binary.
//
// It returns nil after a result, shim.ErrTurnFailed (wrapped) after an error
// event, or ctx's error when stopped. With permission on it does not wait
// for stdin to end: a reader of stdin lives until the bridge closes it.
func Run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, args, environ []string) error {
	em := shimio.NewEmitter(stdout)
	var policy *string
	st, err := shimio.Begin(em, "codex", cli, stdin, stderr, args, func(fs *flag.FlagSet) {
		policy = fs.String("approval-policy", "untrusted", "app-server approval `policy` with permission on: untrusted (ask before anything not known safe) or on-request (the model asks)")
	})
	if err != nil {
		return err
	}
	defer st.SendFile.Close()
	c, turn := st.CLI, st.Turn
	global := sendFileConfig(st.SendFile)
	if turn.Permission {
		return runAppServer(ctx, c, em, turn, st.Resume, st.In, stderr, *policy, global, st.Args, environ)
	}
	return shimio.Attempts(em, stderr, "codex", st.Resume, func(resume string) error {
		return runExec(ctx, c, em, turn, resume, stderr, global, st.Args, environ)
	})
}

// sendFileConfig is the -c flags that register the send_file MCP server
// (before the subcommand: codex reads them for exec and app-server
// alike, and a profile's own -c after it wins). codex starts an MCP
// server with a few variables of its own only: env_vars passes on the
// ones naming the spool. "approve" runs the tool without asking: exec
// could not ask (it fails the call), and sending a file the agent may
// read anyway needs no prompt.
func sendFileConfig(sf *shimio.SendFile) []string {
	if sf == nil {
		return nil
	}
	toml := func(v any) string { b, _ := json.Marshal(v); return string(b) } // a JSON string or array of strings is TOML too
	key := "mcp_servers." + sendfile.ServerName + "."
	return []string{"-c", key + "command=" + toml(sf.Command), "-c", key + "args=" + toml(sf.Args),
		"-c", key + "env_vars=" + toml(sf.EnvNames()), "-c", key + `default_tools_approval_mode="approve"`}
}

// runExec runs one `codex exec`: resuming the thread resume, or a new one
// for "".
func runExec(ctx context.Context, c shimio.CLI, em *shimio.Emitter, turn shimio.Turn, resume string, stderr io.Writer, global, extra, environ []string) error {
	argv := append(append([]string(nil), global...), "exec")
	if resume != "" {
		argv = append(argv, "resume")
	}
	argv = append(argv, "--json", "--skip-git-repo-check")
	argv = append(argv, extra...)
	if resume != "" {
		argv = append(argv, resume)
	}
	// "-": the prompt comes from stdin, so a prompt starting with "-" is
	// never read as a flag.
	argv = append(argv, "-")
	p, err := shimio.Launch(ctx, em, c, argv, environ, stderr)
	if err != nil {
		return err
	}
	p.Resuming = resume != ""
	_, _ = io.WriteString(p.Stdin, turn.Prompt())
	p.Stdin.Close()
	t := newTranslator(em, p, stderr, resume)
	readErr := shimio.ReadLines(p.Stdout, shimio.MaxLineBytes, t.handle)
	return p.Finish(ctx, em, c, readErr, func(int) string { return t.lastError })
}

// translator turns codex exec events (codex-rs/exec/src/exec_events.rs)
// into AgentProc events.
func newTranslator(em *shimio.Emitter, p *shimio.Proc, stderr io.Writer, resume string) *translator {
	return &translator{em: em, p: p, stderr: stderr, resume: resume, tools: map[string]bool{}}
}

type translator struct {
	em        *shimio.Emitter
	p         *shimio.Proc // told about retries and progress (nil in fuzz tests)
	stderr    io.Writer
	resume    string          // the thread asked for, "" for a new one
	tools     map[string]bool // item ids whose tool call was shown
	lastText  string          // the last agent_message: the result text
	anyText   bool
	lastError string // the last non-transient error event
}

type execEvent struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"`
	Message  string `json:"message"`
	Item     *struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Text    string `json:"text"`
		Message string `json:"message"`
		toolItem
	} `json:"item"`
	Usage *struct {
		InputTokens           int64 `json:"input_tokens"`
		CachedInputTokens     int64 `json:"cached_input_tokens"`
		OutputTokens          int64 `json:"output_tokens"`
		ReasoningOutputTokens int64 `json:"reasoning_output_tokens"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func (t *translator) handle(raw []byte) error {
	var ev execEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		fmt.Fprintf(t.stderr, "shim codex: ignored a line that is not JSON: %.200s\n", raw)
		return nil
	}
	switch ev.Type {
	case "thread.started":
		if t.resume != "" && ev.ThreadID != t.resume {
			// codex started a new thread instead of the one asked for.
			fmt.Fprintf(t.stderr, "shim codex: asked to resume thread %s, codex started %s\n", t.resume, ev.ThreadID)
			_ = t.em.Restarted()
		}
		// Only this event carries the id; the emitter repeats it.
		t.em.SetSession(ev.ThreadID)
	case "item.started":
		if ev.Item != nil {
			t.tool(ev.Item.ID, ev.Item.Type, &ev.Item.toolItem)
		}
	case "item.completed":
		if ev.Item == nil {
			return nil
		}
		t.tool(ev.Item.ID, ev.Item.Type, &ev.Item.toolItem)
		switch ev.Item.Type {
		case "agent_message":
			text := ev.Item.Text
			if t.anyText && text != "" {
				text = "\n\n" + text
			}
			t.anyText = t.anyText || text != ""
			t.lastText = ev.Item.Text
			_ = t.em.Partial(text, "")
		case "reasoning":
			_ = t.em.Partial(ev.Item.Text, core.RoleThinking)
		case "error":
			// A warning item (e.g. unknown model metadata), not fatal.
			fmt.Fprintf(t.stderr, "shim codex: warning: %s\n", ev.Item.Message)
		}
	case "turn.completed":
		var u *shimio.Usage
		if ev.Usage != nil {
			u = &shimio.Usage{
				InputTokens:          ev.Usage.InputTokens,
				OutputTokens:         ev.Usage.OutputTokens,
				TotalTokens:          ev.Usage.InputTokens + ev.Usage.OutputTokens,
				CacheReadInputTokens: ev.Usage.CachedInputTokens,
				ReasoningTokens:      ev.Usage.ReasoningOutputTokens,
			}
		}
		_ = t.em.Result(t.lastText, u)
	case "turn.failed":
		msg := "codex: the turn failed"
		if ev.Error != nil && ev.Error.Message != "" {
			msg = ev.Error.Message
		}
		_ = t.em.Error(msg, nil)
	case "error":
		// "Reconnecting... 2/5 (...)" is a retry in progress, and
		// "Reconnecting... waiting for network (...)" one without end.
		if strings.HasPrefix(ev.Message, "Reconnecting") {
			fmt.Fprintf(t.stderr, "shim codex: %s\n", ev.Message)
			t.p.Retrying(ev.Message)
			return nil
		}
		t.lastError = ev.Message
	}
	if progress(&ev) {
		t.p.Progress()
	}
	return nil
}

// progress reports whether an exec event means codex heard from its model
// API: anything but the thread and turn starting, errors and warnings.
func progress(ev *execEvent) bool {
	switch ev.Type {
	case "thread.started", "turn.started", "error":
		return false
	case "item.completed", "item.started", "item.updated":
		return ev.Item != nil && ev.Item.Type != "error"
	}
	return true
}

// tool shows a tool call item once, when it starts (or, for items that
// only complete, when it completes).
func (t *translator) tool(id, typ string, it *toolItem) {
	name, detail := it.describe(typ)
	if name == "" || t.tools[id] {
		return
	}
	t.tools[id] = true
	_ = t.em.Tool(name, detail)
}
