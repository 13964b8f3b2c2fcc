package codex

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/shim/internal/shimio"
)

// JSON-RPC ids of the shim's own requests to codex app-server.
const (
	idInitialize = 0
	idThread     = 1 // thread/start or thread/resume
	idTurn       = 2 // turn/start
)

// runAppServer runs one turn with approvals through `codex app-server`
// (JSON-RPC over stdio, one JSON object a line, no "jsonrpc" field):
// initialize, thread/start or thread/resume, turn/start, then it answers
// the server's approval requests with the bridge's permission responses.
//
// A thread codex cannot resume is not a dead end: the shim says so once
// and starts a new thread on the same connection.
func runAppServer(ctx context.Context, c shimio.CLI, em *shimio.Emitter, turn shimio.Turn, resume string, in *bufio.Reader, stderr io.Writer, policy string, global, extra, environ []string) error {
	argv := append(append(append([]string(nil), global...), "app-server"), extra...)
	p, err := shimio.Launch(ctx, em, c, argv, environ, stderr)
	if err != nil {
		return err
	}
	s := newServerSession(em, p, c, shimio.NewStdinWriter(p.Stdin), turn, resume, policy, stderr)
	s.rpc.Send(map[string]any{"method": "initialize", "id": idInitialize, "params": map[string]any{
		"clientInfo": map[string]any{"name": "agentbridge", "title": "agentbridge", "version": turn.ProtocolVersion}}})
	s.rpc.Send(map[string]any{"method": "initialized"})
	if resume != "" {
		s.rpc.Send(map[string]any{"method": "thread/resume", "id": idThread, "params": map[string]any{
			"threadId": resume, "approvalPolicy": policy}})
	} else {
		s.startThread()
	}
	// Owned by the bridge's stdin: it ends when the bridge closes it.
	go func() {
		shimio.ReadResponses(in, s.answer)
		s.bridgeClosed()
	}()
	readErr := shimio.ReadLines(p.Stdout, shimio.MaxLineBytes, s.handle)
	s.rpc.Close()
	return p.Finish(ctx, em, c, readErr, func(int) string { return s.lastError })
}

// serverSession is one app-server turn's translation state.
type serverSession struct {
	em     *shimio.Emitter
	p      *shimio.Proc // told about retries and progress (nil in fuzz tests)
	cli    shimio.CLI
	rpc    *shimio.StdinWriter
	turn   shimio.Turn
	resume string // the thread being resumed; "" once a new one starts
	policy string
	stderr io.Writer

	// Read and written only by the stdout handler.
	thread    string                     // our thread id; other threads' events are a sub-agent's
	fileItems map[string]json.RawMessage // fileChange item id → its changes
	tools     map[string]bool            // item ids whose tool call was shown
	deltaSeen map[string]bool            // item ids whose text came as deltas
	lastItem  string                     // the agent message item output last came from
	anyOutput bool
	lastText  string // the last completed agent message: the result text
	lastError string // the last error notification that will not be retried
	usage     shimio.Usage

	seq     atomic.Int64                    // numbers the requests passed on to the bridge
	pending shimio.Pending[json.RawMessage] // bridge request_id → codex's JSON-RPC id, unanswered
}

func newServerSession(em *shimio.Emitter, p *shimio.Proc, c shimio.CLI, rpc *shimio.StdinWriter, turn shimio.Turn, resume, policy string, stderr io.Writer) *serverSession {
	return &serverSession{em: em, p: p, cli: c, rpc: rpc, turn: turn, resume: resume, policy: policy, stderr: stderr,
		fileItems: map[string]json.RawMessage{}, tools: map[string]bool{}, deltaSeen: map[string]bool{}}
}

// startThread asks for a new thread.
func (s *serverSession) startThread() {
	s.rpc.Send(map[string]any{"method": "thread/start", "id": idThread, "params": map[string]any{
		"approvalPolicy": s.policy}})
}

// rpcMessage is the union of what app-server writes: a response (id and
// result or error), a notification (method) or a request (method and id).
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// item is the part of a ThreadItem the shim reads.
type item struct {
	Type    string   `json:"type"`
	ID      string   `json:"id"`
	Text    string   `json:"text"`
	Summary []string `json:"summary"`
	toolItem
}

type params struct {
	ThreadID string                  `json:"threadId"`
	ItemID   string                  `json:"itemId"`
	Delta    string                  `json:"delta"`
	Item     *item                   `json:"item"`
	Message  string                  `json:"message"`
	Reason   string                  `json:"reason"`
	Command  string                  `json:"command"`
	Cwd      string                  `json:"cwd"`
	Grant    string                  `json:"grantRoot"`
	Error    *turnError              `json:"error"`
	Retry    bool                    `json:"willRetry"`
	Usage    *struct{ Last *tokens } `json:"tokenUsage"`
	Turn     *struct {
		Status     string     `json:"status"`
		Error      *turnError `json:"error"`
		DurationMS float64    `json:"durationMs"`
	} `json:"turn"`
}

type turnError struct {
	Message string `json:"message"`
}

type tokens struct {
	InputTokens           int64 `json:"inputTokens"`
	CachedInputTokens     int64 `json:"cachedInputTokens"`
	OutputTokens          int64 `json:"outputTokens"`
	ReasoningOutputTokens int64 `json:"reasoningOutputTokens"`
	TotalTokens           int64 `json:"totalTokens"`
}

func (s *serverSession) handle(raw []byte) error {
	var m rpcMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		fmt.Fprintf(s.stderr, "shim codex: ignored a line that is not JSON: %.200s\n", raw)
		return nil
	}
	hasID := len(m.ID) > 0 && string(m.ID) != "null"
	switch {
	case m.Method == "" && hasID:
		s.response(m)
	case m.Method != "" && hasID:
		s.request(m)
	case m.Method != "":
		s.notification(m)
	}
	return nil
}

// finish ends codex's part of the turn: closing its stdin lets it exit.
func (s *serverSession) finish() { s.rpc.Close() }

func (s *serverSession) response(m rpcMessage) {
	id, err := strconv.Atoi(string(m.ID))
	if err != nil {
		return
	}
	if m.Error != nil {
		what := map[int]string{idInitialize: "initialize", idThread: "thread/start", idTurn: "turn/start"}[id]
		if id == idThread && s.resume != "" {
			if s.cli.Lost(m.Error.Message) && !s.em.Wrote() {
				fmt.Fprintf(s.stderr, "shim codex: thread/resume %s: %s; starting a new thread\n", s.resume, m.Error.Message)
				s.resume = ""
				_ = s.em.Restarted()
				s.startThread()
				return
			}
			what = "thread/resume"
		}
		if what == "" {
			return
		}
		_ = s.em.Error(fmt.Sprintf("codex %s: %s", what, m.Error.Message), nil)
		s.finish()
		return
	}
	if id != idThread {
		return
	}
	var r struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	if json.Unmarshal(m.Result, &r) != nil || r.Thread.ID == "" {
		_ = s.em.Error("codex: the thread response carries no thread id", nil)
		s.finish()
		return
	}
	s.thread = r.Thread.ID
	s.em.SetSession(r.Thread.ID)
	s.rpc.Send(map[string]any{"method": "turn/start", "id": idTurn, "params": map[string]any{
		"threadId": r.Thread.ID, "input": []any{map[string]any{"type": "text", "text": s.turn.Prompt()}}}})
}

// ours reports whether a notification belongs to this turn's thread (a
// sub-agent runs in threads of its own).
func (s *serverSession) ours(p *params) bool {
	return p.ThreadID == "" || s.thread == "" || p.ThreadID == s.thread
}

func (s *serverSession) output(itemID, text string) {
	if text == "" {
		return
	}
	if itemID != s.lastItem && s.anyOutput {
		text = "\n\n" + text
	}
	s.lastItem, s.anyOutput = itemID, true
	_ = s.em.Partial(text, "")
}

func (s *serverSession) notification(m rpcMessage) {
	var p params
	if len(m.Params) > 0 && json.Unmarshal(m.Params, &p) != nil {
		return
	}
	if !s.ours(&p) {
		return
	}
	switch m.Method {
	case "item/agentMessage/delta", "item/reasoning/summaryTextDelta", "item/reasoning/textDelta",
		"item/started", "item/completed", "thread/tokenUsage/updated", "turn/completed":
		s.p.Progress() // codex heard from its model API
	}
	switch m.Method {
	case "item/agentMessage/delta":
		s.deltaSeen[p.ItemID] = true
		s.output(p.ItemID, p.Delta)
	case "item/reasoning/summaryTextDelta", "item/reasoning/textDelta":
		s.deltaSeen[p.ItemID] = true
		_ = s.em.Partial(p.Delta, core.RoleThinking)
	case "item/started":
		if p.Item != nil && p.Item.Type == "fileChange" {
			s.fileItems[p.Item.ID] = p.Item.Changes
		}
		s.tool(p.Item)
	case "item/completed":
		s.itemCompleted(p.Item)
	case "thread/tokenUsage/updated":
		// last is one model call; their sum is this turn's usage (total
		// is the whole thread's, earlier turns included).
		if p.Usage != nil && p.Usage.Last != nil {
			l := p.Usage.Last
			s.usage.InputTokens += l.InputTokens
			s.usage.CacheReadInputTokens += l.CachedInputTokens
			s.usage.OutputTokens += l.OutputTokens
			s.usage.ReasoningTokens += l.ReasoningOutputTokens
			s.usage.TotalTokens += l.TotalTokens
		}
	case "error":
		msg := "codex reported an error"
		if p.Error != nil && p.Error.Message != "" {
			msg = p.Error.Message
		}
		if p.Retry {
			fmt.Fprintf(s.stderr, "shim codex: retrying: %s\n", msg)
			s.p.Retrying(msg)
			return
		}
		s.lastError = msg
	case "turn/completed":
		s.turnCompleted(&p)
	}
}

// tool shows a tool call item once, when it starts (or completes).
func (s *serverSession) tool(it *item) {
	if it == nil || s.tools[it.ID] {
		return
	}
	name, detail := it.describe(it.Type)
	if name == "" {
		return
	}
	s.tools[it.ID] = true
	_ = s.em.Tool(name, detail)
}

func (s *serverSession) itemCompleted(it *item) {
	if it == nil {
		return
	}
	s.tool(it)
	switch it.Type {
	case "agentMessage":
		s.lastText = it.Text
		if !s.deltaSeen[it.ID] {
			s.output(it.ID, it.Text)
		}
	case "reasoning":
		if !s.deltaSeen[it.ID] {
			_ = s.em.Partial(strings.Join(it.Summary, "\n\n"), core.RoleThinking)
		}
	case "fileChange":
		delete(s.fileItems, it.ID)
	}
}

func (s *serverSession) turnCompleted(p *params) {
	defer s.finish()
	if p.Turn == nil {
		_ = s.em.Error("codex: turn/completed without a turn", nil)
		return
	}
	var u *shimio.Usage
	if s.usage != (shimio.Usage{}) || p.Turn.DurationMS > 0 {
		uu := s.usage
		uu.DurationMS = p.Turn.DurationMS
		u = &uu
	}
	switch p.Turn.Status {
	case "completed":
		_ = s.em.Result(s.lastText, u)
	case "interrupted":
		_ = s.em.Error("codex: the turn was interrupted", u)
	default:
		msg := s.lastError
		if p.Turn.Error != nil && p.Turn.Error.Message != "" {
			msg = p.Turn.Error.Message
		}
		if msg == "" {
			msg = fmt.Sprintf("codex: the turn ended with status %q", p.Turn.Status)
		}
		_ = s.em.Error(msg, u)
	}
}

// request turns codex's approval requests into permission_request events;
// any other server request is refused, so codex never waits on it.
func (s *serverSession) request(m rpcMessage) {
	var p params
	if len(m.Params) > 0 && json.Unmarshal(m.Params, &p) != nil {
		s.refuse(m.ID, "agentbridge: unreadable params")
		return
	}
	var (
		tool, desc string
		input      any
	)
	switch m.Method {
	case "item/commandExecution/requestApproval":
		tool, desc = "Bash", p.Reason
		in := map[string]any{"command": p.Command}
		if p.Cwd != "" {
			in["cwd"] = p.Cwd
		}
		input = in
		if desc == "" {
			desc = "Run a shell command"
		}
	case "item/fileChange/requestApproval":
		tool, desc = "Edit", p.Reason
		in := map[string]any{}
		if ch, ok := s.fileItems[p.ItemID]; ok && len(ch) > 0 {
			in["changes"] = ch
		}
		if p.Grant != "" {
			in["grant_root"] = p.Grant
		}
		input = in
		if desc == "" {
			desc = "Apply file changes"
		}
	default:
		s.refuse(m.ID, "agentbridge does not handle "+m.Method)
		return
	}
	b, err := json.Marshal(input)
	if err != nil {
		s.refuse(m.ID, "agentbridge: "+err.Error())
		return
	}
	id := strconv.FormatInt(s.seq.Add(1), 10)
	s.pending.Put(id, append(json.RawMessage(nil), m.ID...))
	_ = s.em.PermissionRequest(id, tool, b, desc, p.ItemID)
}

func (s *serverSession) refuse(id json.RawMessage, msg string) {
	s.rpc.Send(map[string]any{"id": id, "error": map[string]any{"code": -32601, "message": msg}})
}

// answer forwards the bridge's permission_response as the approval
// decision. Codex's decisions carry no reason: a deny reaches the model as
// codex's own "rejected by user", and the bridge's message goes to stderr.
func (s *serverSession) answer(pr shimio.PermissionResponse) {
	rpcID, ok := s.pending.Take(pr.RequestID)
	if !ok {
		fmt.Fprintf(s.stderr, "shim codex: ignored an answer to unknown request %q\n", pr.RequestID)
		return
	}
	decision := "decline"
	if pr.Behavior == "allow" {
		decision = "accept"
	} else if pr.Message != "" {
		fmt.Fprintf(s.stderr, "shim codex: request %s declined: %s\n", pr.RequestID, pr.Message)
	}
	s.rpc.Send(map[string]any{"id": rpcID, "result": map[string]any{"decision": decision}})
}

// bridgeClosed declines what is still pending once the bridge can no
// longer answer, so codex is never left waiting.
func (s *serverSession) bridgeClosed() {
	for _, id := range s.pending.TakeAll() {
		s.rpc.Send(map[string]any{"id": id, "result": map[string]any{"decision": "decline"}})
	}
}
