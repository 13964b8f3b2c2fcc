// Package claude is the AgentProc 0.4 shim for Claude Code (`claude -p`)
// and, on the same wire format, Qwen Code: it starts the CLI in stream-json
// mode, hands it the turn's message, and translates its events — text and
// thinking deltas, the final result, errors — into partial, result and
// error events. With permission on, the CLI's can_use_tool control requests
// become permission_request events and the bridge's answers go back as
// control_response lines.
package claude

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/shim/internal/shimio"
)

// flavor is what differs between the CLIs speaking Claude's stream-json.
type flavor struct {
	name string // shim name, for messages
	cli  shimio.CLI
	argv func(resume string, t shimio.Turn) []string // the CLI's own flags for this turn
	// sendFile is the flags that register the send_file MCP server.
	sendFile func(sf *shimio.SendFile) []string
	initReq  bool // send an initialize control request first
	// apiError starts the text of a reply that is the CLI's report of a
	// failed API call (qwen answers "[API Error: Connection error. …]" as
	// a successful result): such a reply is the turn's error instead.
	apiError string
}

var claudeFlavor = flavor{
	name: "claude",
	cli: shimio.CLI{Bin: "claude", Install: "npm i -g @anthropic-ai/claude-code",
		// claude 2.1.197: a UUID it has no transcript of, and anything
		// else (it would look that up as a session title).
		LostSession: []string{"No conversation found with session ID", "--resume requires a valid session ID"},
		NoLogin:     []string{"Not logged in", "Invalid API key", "OAuth token has expired", "Invalid bearer token"},
		// claude's own defaults (10 retries with backoff up to 32 s, a
		// 10 minute request timeout) keep an unreachable API silent for
		// about three minutes; with these a refused connection fails in
		// about 3 s and one that never answers in about 50 s. A streamed
		// reply is not cut by API_TIMEOUT_MS: it bounds the wait for the
		// response to begin.
		Defaults: []string{"CLAUDE_CODE_MAX_RETRIES=2", "API_TIMEOUT_MS=15000"},
		Login:    "on the bridge's host run `claude` once and log in (`/login`), or set ANTHROPIC_API_KEY (or CLAUDE_CODE_OAUTH_TOKEN from `claude setup-token`) in the bridge's environment"},
	argv: func(resume string, t shimio.Turn) []string {
		a := []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json",
			"--verbose", "--include-partial-messages",
			// The bridge has no way to ask the user free-form questions
			// mid-turn, so the tool that does is off.
			"--disallowedTools", "AskUserQuestion"}
		if t.Permission {
			a = append(a, "--permission-prompt-tool", "stdio")
		}
		if resume != "" {
			// The equals form, as the Agent SDK uses, so an id can never
			// read as a flag.
			a = append(a, "--resume="+resume)
		}
		return a
	},
	// The tool is allowed up front: sending a file the agent may read
	// anyway needs no prompt, and with permission off claude would deny
	// it. --allowedTools adds to the rules the settings and a profile's
	// own --allowedTools give.
	sendFile: func(sf *shimio.SendFile) []string {
		return []string{"--mcp-config", sf.MCPServers(map[string]any{"type": "stdio"}), "--allowedTools", sf.ToolName()}
	},
}

var qwenFlavor = flavor{
	name: "qwen",
	cli: shimio.CLI{Bin: "qwen", Install: "npm i -g @qwen-code/qwen-code",
		// qwen 0.15.10, on stderr: "No saved session found with ID …" (or
		// "with title …").
		LostSession: []string{"No saved session found with"},
		NoLogin:     []string{"Missing API key", "401"},
		Login:       "set OPENAI_API_KEY (and OPENAI_BASE_URL, OPENAI_MODEL) or DASHSCOPE_API_KEY in the bridge's environment, or on the bridge's host run `qwen` once and log in"},
	argv: func(resume string, _ shimio.Turn) []string {
		// Stream-json input turns on the control protocol by itself.
		a := []string{"--input-format", "stream-json", "--output-format", "stream-json", "--include-partial-messages"}
		if resume != "" {
			a = append(a, "--resume="+resume)
		}
		return a
	},
	// qwen's own MCP setting "trust" lets the tool run without asking.
	sendFile: func(sf *shimio.SendFile) []string {
		return []string{"--mcp-config", sf.MCPServers(map[string]any{"trust": true})}
	},
	initReq:  true,
	apiError: "[API Error:",
}

// Run runs one AgentProc turn through Claude Code. stdin carries the turn
// line (and permission responses), stdout receives AgentProc events,
// stderr the CLI's own stderr. args are the shim's flags (--bin PATH to
// name the claude binary), then optionally "--" and flags passed to claude
// unchanged (e.g. --model, --permission-mode, --allowedTools). environ is
// the CLI's environment; its PATH is searched for the binary.
//
// It returns nil after a result, shim.ErrTurnFailed (wrapped) after an error
// event, or ctx's error when stopped. It does not wait for stdin to end:
// with permission on, a reader of stdin lives until the bridge closes it.
func Run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, args, environ []string) error {
	return run(ctx, claudeFlavor, stdin, stdout, stderr, args, environ)
}

// RunQwen is Run for Qwen Code (`qwen`), which speaks the same stream-json
// and control protocol. Its --bin default is qwen.
func RunQwen(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, args, environ []string) error {
	return run(ctx, qwenFlavor, stdin, stdout, stderr, args, environ)
}

func run(ctx context.Context, fl flavor, stdin io.Reader, stdout, stderr io.Writer, args, environ []string) error {
	em := shimio.NewEmitter(stdout)
	st, err := shimio.Begin(em, fl.name, fl.cli, stdin, stderr, args, nil)
	if err != nil {
		return err
	}
	defer st.SendFile.Close()
	b := &bridge{}
	if st.Turn.Permission {
		// Owned by the bridge's stdin: it ends when the bridge closes it.
		// One reader for the whole turn, whichever attempt is running.
		go func() {
			shimio.ReadResponses(st.In, b.answer)
			b.close()
		}()
	}
	return shimio.Attempts(em, stderr, fl.name, st.Resume, func(resume string) error {
		return attempt(ctx, fl, st, resume, em, b, stderr, environ)
	})
}

// attempt runs the CLI once: resuming resume, or a new session for "".
func attempt(ctx context.Context, fl flavor, st shimio.Setup, resume string, em *shimio.Emitter, b *bridge, stderr io.Writer, environ []string) error {
	cli, turn := st.CLI, st.Turn
	var argv []string
	if st.SendFile != nil {
		argv = fl.sendFile(st.SendFile)
	}
	argv = append(append(argv, fl.argv(resume, turn)...), st.Args...)
	p, err := shimio.Launch(ctx, em, cli, argv, environ, stderr)
	if err != nil {
		return err
	}
	p.Resuming = resume != ""
	s := newSession(fl, cli, turn, resume != "", em, shimio.NewStdinWriter(p.Stdin), stderr)
	b.attach(s)
	if fl.initReq {
		s.ctl.Send(map[string]any{"type": "control_request", "request_id": "agentbridge_init",
			"request": map[string]any{"subtype": "initialize", "hooks": nil}})
	}
	s.ctl.Send(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": turn.Prompt()},
		"parent_tool_use_id": nil, "session_id": ""})
	readErr := shimio.ReadLines(p.Stdout, shimio.MaxLineBytes, s.handle)
	s.ctl.Close()
	if s.lost && readErr == nil {
		_, _ = p.Wait()
		return shimio.ErrSessionLost
	}
	return p.Finish(ctx, em, cli, readErr, nil)
}

// bridge hands the bridge's permission responses to the running attempt's
// session.
type bridge struct {
	mu     sync.Mutex
	cur    *session
	closed bool
}

func (b *bridge) attach(s *session) {
	b.mu.Lock()
	b.cur = s
	closed := b.closed
	b.mu.Unlock()
	if closed {
		s.bridgeClosed()
	}
}

func (b *bridge) answer(pr shimio.PermissionResponse) {
	b.mu.Lock()
	s := b.cur
	b.mu.Unlock()
	if s != nil {
		s.answer(pr)
	}
}

func (b *bridge) close() {
	b.mu.Lock()
	s := b.cur
	b.closed = true
	b.mu.Unlock()
	if s != nil {
		s.bridgeClosed()
	}
}

// session is one turn's translation state.
type session struct {
	fl       flavor
	cli      shimio.CLI
	turn     shimio.Turn
	resuming bool // the CLI was asked to resume a session
	em       *shimio.Emitter
	ctl      *shimio.StdinWriter
	stderr   io.Writer
	lost     bool // the CLI could not resume it (shimio.ErrSessionLost)
	started  bool // system/init was seen: the CLI saves this session

	pending shimio.Pending[json.RawMessage] // can_use_tool requests sent to the bridge, unanswered: their input
	mu      sync.Mutex
	asked   map[string]bool // every request id sent to the bridge this turn

	streamed   map[string]bool // assistant message ids whose text came as deltas
	tools      map[string]bool // tool_use ids already shown
	textStart  bool            // the next text delta starts a text block
	dropText   bool            // the current text block is an API error report
	anyOutput  bool            // an output partial was written
	sepPending bool            // the next output text starts a new block
}

func newSession(fl flavor, cli shimio.CLI, turn shimio.Turn, resuming bool, em *shimio.Emitter, ctl *shimio.StdinWriter, stderr io.Writer) *session {
	return &session{fl: fl, cli: cli, turn: turn, resuming: resuming, em: em, ctl: ctl, stderr: stderr,
		asked: map[string]bool{}, streamed: map[string]bool{}, tools: map[string]bool{}}
}

// line is the union of the CLI's stdout events the shim reads.
type line struct {
	Type            string          `json:"type"`
	Subtype         string          `json:"subtype"`
	SessionID       string          `json:"session_id"`
	ParentToolUseID *string         `json:"parent_tool_use_id"`
	Event           *streamEvent    `json:"event"`
	Message         json.RawMessage `json:"message"`
	IsError         bool            `json:"is_error"`
	Result          *string         `json:"result"`
	Errors          []any           `json:"errors"`
	Error           json.RawMessage `json:"error"` // qwen's error_during_execution: {"message": …}
	Usage           map[string]any  `json:"usage"`
	TotalCostUSD    float64         `json:"total_cost_usd"`
	DurationMS      float64         `json:"duration_ms"`
	RequestID       string          `json:"request_id"`
	Request         *controlRequest `json:"request"`
}

type streamEvent struct {
	Type         string               `json:"type"`
	Message      *struct{ ID string } `json:"message"`
	ContentBlock *struct {
		Type string `json:"type"`
	} `json:"content_block"`
	Delta *struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Thinking string `json:"thinking"`
	} `json:"delta"`
}

type controlRequest struct {
	Subtype     string          `json:"subtype"`
	ToolName    string          `json:"tool_name"`
	Input       json.RawMessage `json:"input"`
	Description string          `json:"description"`
	ToolUseID   string          `json:"tool_use_id"`
}

type apiMessage struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Content []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		Thinking string          `json:"thinking"`
		ID       string          `json:"id"`    // tool_use
		Name     string          `json:"name"`  // tool_use
		Input    json.RawMessage `json:"input"` // tool_use
	} `json:"content"`
}

func (s *session) handle(raw []byte) error {
	var l line
	if err := json.Unmarshal(raw, &l); err != nil {
		fmt.Fprintf(s.stderr, "shim %s: ignored a line that is not JSON: %.200s\n", s.fl.name, raw)
		return nil
	}
	if l.Type == "result" && l.IsError && s.resuming && !s.em.Wrote() && s.cli.Lost(errorText(&l)) {
		// The CLI does not have the session (its id on this line is the
		// one asked for, or a new one it never saved): nothing of it is
		// reported, and the turn starts a new session.
		s.lost = true
		s.ctl.Close()
		return nil
	}
	// Only a session that started (system/init) is saved: an error before
	// it (a bad --resume, qwen's missing key) carries an id nobody can
	// resume.
	if l.Type == "system" && l.Subtype == "init" {
		s.started = true
	}
	if s.started {
		s.em.SetSession(l.SessionID)
	}
	sub := l.ParentToolUseID != nil && *l.ParentToolUseID != "" // a sub-agent's event
	switch l.Type {
	case "stream_event":
		if !sub && l.Event != nil {
			s.streamEvent(l.Event)
		}
	case "assistant":
		if !sub {
			s.assistant(l.Message)
		}
	case "result":
		s.result(&l)
		// The turn is over: closing stdin lets the CLI exit.
		s.ctl.Close()
	case "control_request":
		s.controlRequest(l.RequestID, l.Request)
	case "control_cancel_request":
		s.pending.Take(l.RequestID)
	}
	return nil
}

func (s *session) output(text string) {
	if text == "" {
		return
	}
	if s.sepPending && s.anyOutput && !strings.HasSuffix(text, "\n") {
		text = "\n\n" + text
	}
	s.sepPending = false
	s.anyOutput = true
	_ = s.em.Partial(text, "")
}

func (s *session) streamEvent(ev *streamEvent) {
	switch ev.Type {
	case "message_start":
		if ev.Message != nil && ev.Message.ID != "" {
			s.streamed[ev.Message.ID] = true
		}
	case "content_block_start":
		if ev.ContentBlock != nil && ev.ContentBlock.Type == "text" {
			s.sepPending = true
			s.textStart, s.dropText = true, false
		}
	case "content_block_stop":
		s.dropText = false
	case "content_block_delta":
		if ev.Delta == nil {
			return
		}
		switch ev.Delta.Type {
		case "text_delta":
			if s.textStart {
				// A block that starts as the CLI's API error report is
				// the turn's error, not its reply (see flavor.apiError).
				s.textStart, s.dropText = false, s.apiError(ev.Delta.Text)
			}
			if !s.dropText {
				s.output(ev.Delta.Text)
			}
		case "thinking_delta":
			_ = s.em.Partial(ev.Delta.Thinking, core.RoleThinking)
		}
	}
}

// assistant shows the tool calls of a complete assistant message (its
// input is whole only here, not in the deltas), and its text when that did
// not arrive as deltas (a CLI that does not stream partial messages).
func (s *session) assistant(raw json.RawMessage) {
	var m apiMessage
	// A "<synthetic>" message is the CLI's own error text (an API 401,
	// say); the error event that follows carries it.
	if json.Unmarshal(raw, &m) != nil || m.Model == "<synthetic>" {
		return
	}
	streamed := s.streamed[m.ID]
	for _, c := range m.Content {
		switch {
		case c.Type == "tool_use":
			// Each content block may come in a message of its own, so
			// a tool is shown once by its id.
			if c.Name != "" && !s.tools[c.ID] {
				s.tools[c.ID] = true
				_ = s.em.Tool(c.Name, shimio.ToolDetail(c.Input))
			}
		case streamed, s.apiError(c.Text):
		case c.Type == "text":
			s.sepPending = true
			s.output(c.Text)
		case c.Type == "thinking":
			_ = s.em.Partial(c.Thinking, core.RoleThinking)
		}
	}
}

// apiError reports whether text is the CLI's report of a failed API call
// (see flavor.apiError).
func (s *session) apiError(text string) bool {
	return s.fl.apiError != "" && strings.HasPrefix(strings.TrimSpace(text), s.fl.apiError)
}

func (s *session) result(l *line) {
	u := usage(l)
	if !l.IsError {
		text := ""
		if l.Result != nil {
			text = *l.Result
		}
		if s.apiError(text) {
			_ = s.em.Error(strings.TrimSpace(text), u)
			return
		}
		_ = s.em.Result(text, u)
		return
	}
	msg := errorText(l)
	if msg == "" {
		msg = fmt.Sprintf("%s reported an error (%s)", s.fl.name, l.Subtype)
	}
	_ = s.em.Error(msg, u)
}

// errorText is an error result's message: its result text and errors[].
func errorText(l *line) string {
	var msgs []string
	if l.Result != nil && *l.Result != "" {
		msgs = append(msgs, *l.Result)
	}
	var e struct{ Message string }
	if json.Unmarshal(l.Error, &e) == nil && e.Message != "" {
		msgs = append(msgs, e.Message)
	}
	for _, e := range l.Errors {
		if str, ok := e.(string); ok && str != "" {
			msgs = append(msgs, str)
		} else if b, err := json.Marshal(e); err == nil {
			msgs = append(msgs, string(b))
		}
	}
	return strings.Join(msgs, "; ")
}

// usage maps a result's usage to F-USAGE-1 keys.
func usage(l *line) *shimio.Usage {
	num := func(k string) int64 {
		f, _ := l.Usage[k].(float64)
		return int64(f)
	}
	u := &shimio.Usage{
		InputTokens:              num("input_tokens"),
		OutputTokens:             num("output_tokens"),
		TotalTokens:              num("total_tokens"),
		CacheReadInputTokens:     num("cache_read_input_tokens"),
		CacheCreationInputTokens: num("cache_creation_input_tokens"),
		DurationMS:               l.DurationMS,
		CostUSD:                  l.TotalCostUSD,
	}
	if u.TotalTokens == 0 {
		u.TotalTokens = u.InputTokens + u.OutputTokens
	}
	if *u == (shimio.Usage{}) {
		return nil
	}
	return u
}

func (s *session) controlRequest(id string, req *controlRequest) {
	if req == nil || id == "" {
		return
	}
	if req.Subtype != "can_use_tool" {
		s.ctl.Send(map[string]any{"type": "control_response", "response": map[string]any{
			"subtype": "error", "request_id": id, "error": "agentbridge shim does not handle " + req.Subtype}})
		return
	}
	deny := func(msg string) {
		s.ctl.Send(controlResponse(id, map[string]any{"behavior": "deny", "message": msg}))
	}
	switch {
	case !s.turn.Permission:
		deny("tool approval is off for this agent (the profile sets permission: false)")
		return
	case req.ToolName == "AskUserQuestion":
		deny("AskUserQuestion is not available through agentbridge; ask in your reply instead")
		return
	case req.ToolName == "" || !agentproc.ValidRequestID(id):
		// The bridge rejects such a request (F-PERM-1) and cannot even deny
		// an id it does not accept, which would leave claude waiting.
		fmt.Fprintf(s.stderr, "shim %s: denied a malformed can_use_tool request %q (tool %q)\n", s.fl.name, id, req.ToolName)
		deny("agentbridge cannot ask about a tool request without a tool name or with a request id it cannot pass on")
		return
	}
	s.mu.Lock()
	reused := s.asked[id]
	s.asked[id] = true
	s.mu.Unlock()
	if reused {
		// The bridge ignores a reused id (F-PERM-1: unique), which would
		// leave claude waiting: answer it here, and drop the earlier
		// request so claude gets one answer for the id.
		s.pending.Take(id)
		fmt.Fprintf(s.stderr, "shim %s: denied a can_use_tool request reusing id %q\n", s.fl.name, id)
		deny("agentbridge cannot ask twice under one request id")
		return
	}
	s.pending.Put(id, req.Input)
	_ = s.em.PermissionRequest(id, req.ToolName, req.Input, req.Description, req.ToolUseID)
}

func controlResponse(id string, resp map[string]any) map[string]any {
	return map[string]any{"type": "control_response", "response": map[string]any{
		"subtype": "success", "request_id": id, "response": resp}}
}

// answer forwards the bridge's permission_response as a control_response.
// Allow carries the approver's updated_input when there is one, else the
// request's own input unchanged: claude 2.1.197 rejects an allow without
// updatedInput (a ZodError that fails the tool call, seen in the live
// test), and the Agent SDKs fill it the same way. Deny carries the reason.
func (s *session) answer(pr shimio.PermissionResponse) {
	input, ok := s.pending.Take(pr.RequestID)
	if !ok {
		fmt.Fprintf(s.stderr, "shim %s: ignored an answer to unknown or cancelled request %q\n", s.fl.name, pr.RequestID)
		return
	}
	if pr.Behavior == "allow" {
		updated := input
		if len(pr.UpdatedInput) > 0 && string(pr.UpdatedInput) != "null" {
			updated = pr.UpdatedInput
		}
		if len(updated) == 0 || updated[0] != '{' {
			updated = json.RawMessage(`{}`)
		}
		resp := map[string]any{"behavior": "allow", "updatedInput": updated}
		s.ctl.Send(controlResponse(pr.RequestID, resp))
		return
	}
	msg := pr.Message
	if msg == "" {
		msg = "denied by the user"
	}
	s.ctl.Send(controlResponse(pr.RequestID, map[string]any{"behavior": "deny", "message": msg}))
}

// bridgeClosed denies what is still pending once the bridge can no longer
// answer, so the CLI is never left waiting.
func (s *session) bridgeClosed() {
	for id := range s.pending.TakeAll() {
		s.ctl.Send(controlResponse(id, map[string]any{"behavior": "deny", "message": "no answer: the bridge closed the permission channel"}))
	}
}
