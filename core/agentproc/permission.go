// This file: spec/protocol.md, "Tool permission (optional)" — permission
// requests, their answers on stdin, and the turn's pending-request state
// with its timeouts (D-PERM-1, F-PERM-1..3).

package agentproc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// ErrAlreadyAnswered is returned by Respond when the request was already
// answered, by the caller or by the runner.
var ErrAlreadyAnswered = errors.New("permission request already answered")

// AnswerSource says who decided a permission request.
type AnswerSource int

// Answer sources.
const (
	AnsweredByCaller            AnswerSource = iota + 1
	AnsweredByPermissionTimeout              // permission_timeout_secs elapsed (D-PERM-1): denied
	AnsweredByTurnEnd                        // turn timed out / was stopped / agent exited or sent error first
)

// String names the source for logs.
func (s AnswerSource) String() string {
	switch s {
	case AnsweredByCaller:
		return "caller"
	case AnsweredByPermissionTimeout:
		return "permission-timeout"
	case AnsweredByTurnEnd:
		return "turn-end"
	}
	return fmt.Sprintf("AnswerSource(%d)", int(s))
}

// Decision is the answer to a permission request (F-PERM-2).
type Decision struct {
	Allow        bool
	Message      string          // deny reason (or allow note); omitted from the wire when ""
	UpdatedInput json.RawMessage // only sent when non-nil (F-PERM-2: never pre-filled)
}

// PermissionRequest is one permission_request from the agent (P-PERM-2,
// F-PERM-1). It is answered exactly once, by whoever comes first: the
// caller through Respond, the permission timeout, or the end of the turn.
type PermissionRequest struct {
	ID          string          // request_id
	Tool        string          // tool_name
	Description string          // optional summary for the prompt
	Input       json.RawMessage // the input object, verbatim
	ToolUseID   string          // optional tool_use_id
	SessionID   string          // optional session_id of the request event

	turn  *turnState
	done  chan struct{}
	timer *time.Timer // permission timeout; guarded by turn.mu

	mu       sync.Mutex
	answered bool
	decision Decision
	source   AnswerSource
}

// Respond answers the request. Only the first answer (from any source)
// counts; later calls return ErrAlreadyAnswered. It writes one
// permission_response line to the agent's stdin and does not block on the
// user.
func (r *PermissionRequest) Respond(d Decision) error {
	if d.UpdatedInput != nil && !json.Valid(d.UpdatedInput) {
		return fmt.Errorf("respond to permission request %s: updated_input is not valid JSON", r.ID)
	}
	return r.answer(d, AnsweredByCaller, true)
}

// Done is closed once the request has been answered by anyone.
func (r *PermissionRequest) Done() <-chan struct{} { return r.done }

// Answer returns the decision and who made it; valid after Done is closed.
func (r *PermissionRequest) Answer() (Decision, AnswerSource) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.decision, r.source
}

// answer records the first answer; write says whether the agent is told.
func (r *PermissionRequest) answer(d Decision, src AnswerSource, write bool) error {
	r.mu.Lock()
	if r.answered {
		r.mu.Unlock()
		return ErrAlreadyAnswered
	}
	r.answered, r.decision, r.source = true, d, src
	r.mu.Unlock()
	var err error
	if write {
		err = r.turn.writeResponse(r.ID, d)
	}
	r.turn.settle(r)
	close(r.done)
	if err != nil {
		return fmt.Errorf("respond to permission request %s: %w", r.ID, err)
	}
	return nil
}

// permissionResponse is the stdin line answering a request (F-PERM-2).
type permissionResponse struct {
	Type         string          `json:"type"`
	RequestID    string          `json:"request_id"`
	Behavior     string          `json:"behavior"`
	Message      string          `json:"message,omitempty"`
	UpdatedInput json.RawMessage `json:"updated_input,omitempty"`
}

func responseLine(id string, d Decision) ([]byte, error) {
	resp := permissionResponse{Type: "permission_response", RequestID: id, Behavior: "deny", Message: d.Message}
	if d.Allow {
		resp.Behavior = "allow"
		resp.UpdatedInput = d.UpdatedInput
	}
	b, err := json.Marshal(resp)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// turnState is the part of a turn shared between the stdout reader, the
// caller answering permission requests, permission timers and Run.
type turnState struct {
	log         *slog.Logger
	permTimeout time.Duration

	stdinMu sync.Mutex
	stdin   *os.File // nil once closed

	mu       sync.Mutex
	pending  map[string]*PermissionRequest
	seen     map[string]bool // request ids of this turn (F-PERM-1: unique)
	ended    bool
	endMsg   string
	endWrite bool
	timers   sync.WaitGroup // running or armed permission timers
}

func (ts *turnState) writeResponse(id string, d Decision) error {
	line, err := responseLine(id, d)
	if err != nil {
		return err
	}
	ts.stdinMu.Lock()
	defer ts.stdinMu.Unlock()
	if ts.stdin == nil {
		return errors.New("agent stdin is closed")
	}
	_, err = ts.stdin.Write(line)
	return err
}

func (ts *turnState) closeStdin() {
	ts.stdinMu.Lock()
	defer ts.stdinMu.Unlock()
	if ts.stdin != nil {
		ts.stdin.Close()
		ts.stdin = nil
	}
}

// settle forgets an answered request and disarms its timer.
func (ts *turnState) settle(r *PermissionRequest) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.pending[r.ID] == r {
		delete(ts.pending, r.ID)
	}
	if r.timer != nil && r.timer.Stop() {
		ts.timers.Done() // the callback will not run
	}
	r.timer = nil
}

// end answers every pending request, and every later one, as the turn's end:
// denied with msg when write is set (timeout, stop), otherwise moot.
func (ts *turnState) end(msg string, write bool) {
	ts.mu.Lock()
	if !ts.ended || write {
		ts.ended, ts.endMsg, ts.endWrite = true, msg, write
	}
	list := make([]*PermissionRequest, 0, len(ts.pending))
	for _, r := range ts.pending {
		list = append(list, r)
	}
	ts.mu.Unlock()
	for _, r := range list {
		if err := r.answer(Decision{Message: msg}, AnsweredByTurnEnd, write); err != nil && !errors.Is(err, ErrAlreadyAnswered) {
			ts.log.LogAttrs(context.Background(), slog.LevelWarn, "could not deny a pending permission request", slog.String("request_id", r.ID), slog.Any("err", err))
		}
	}
}

// add registers a new request and arms its permission timeout (D-PERM-1).
// It reports false when the turn is already ending; the request is then
// answered at once.
func (ts *turnState) add(r *PermissionRequest) bool {
	ts.mu.Lock()
	if ts.ended {
		msg, write := ts.endMsg, ts.endWrite
		ts.mu.Unlock()
		_ = r.answer(Decision{Message: msg}, AnsweredByTurnEnd, write)
		return false
	}
	ts.pending[r.ID] = r
	ts.timers.Add(1)
	d := ts.permTimeout
	r.timer = time.AfterFunc(d, func() {
		defer ts.timers.Done()
		err := r.answer(Decision{Message: "permission request timed out after " + d.String()}, AnsweredByPermissionTimeout, true)
		if err == nil {
			ts.log.LogAttrs(context.Background(), slog.LevelInfo, "permission request timed out; denied", slog.String("request_id", r.ID))
		} else if !errors.Is(err, ErrAlreadyAnswered) {
			ts.log.LogAttrs(context.Background(), slog.LevelWarn, "could not deny a timed-out permission request", slog.String("request_id", r.ID), slog.Any("err", err))
		}
	})
	ts.mu.Unlock()
	return true
}

// permission handles a permission_request line (F-PERM-1).
func (a *assembler) permission(l Line) {
	ctx := context.Background()
	if !a.p.Permission {
		a.log.LogAttrs(ctx, slog.LevelWarn, "ignored a permission_request: the profile does not set permission: true")
		return
	}
	id, idOK := jsonString(l.Fields["request_id"])
	idOK = idOK && ValidRequestID(id)
	tool, toolOK := jsonString(l.Fields["tool_name"])
	input := bytes.TrimSpace(l.Fields["input"])
	var problem string
	switch {
	case !idOK:
		problem = "request_id missing or invalid"
	case !toolOK || tool == "":
		problem = "tool_name missing or not a string"
	case len(input) == 0 || input[0] != '{':
		problem = "input missing or not an object"
	}
	if problem != "" {
		a.log.LogAttrs(ctx, slog.LevelWarn, "malformed permission_request", slog.String("problem", problem), slog.String("request_id", id))
		if idOK && !a.errored {
			a.ts.mu.Lock()
			dup := a.ts.seen[id]
			a.ts.seen[id] = true
			a.ts.mu.Unlock()
			if !dup {
				if err := a.ts.writeResponse(id, Decision{Message: "malformed permission request: " + problem}); err != nil {
					a.log.LogAttrs(ctx, slog.LevelWarn, "could not deny a malformed permission request", slog.Any("err", err))
				}
			}
		}
		return
	}
	a.ts.mu.Lock()
	dup := a.ts.seen[id]
	a.ts.seen[id] = true
	a.ts.mu.Unlock()
	if dup {
		a.log.LogAttrs(ctx, slog.LevelWarn, "ignored a permission_request reusing a request_id", slog.String("request_id", id))
		return
	}
	r := &PermissionRequest{ID: id, Tool: tool, Input: json.RawMessage(input), SessionID: l.SessionID, turn: a.ts, done: make(chan struct{})}
	r.Description, _ = jsonString(l.Fields["description"])
	r.ToolUseID, _ = jsonString(l.Fields["tool_use_id"])
	if !a.ts.add(r) {
		return // the turn is ending (error, timeout, stop): already answered
	}
	if a.opts.OnEvent != nil {
		a.opts.OnEvent(Event{Kind: EventPermission, Request: r})
	}
}
