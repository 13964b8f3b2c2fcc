package agentproc

import (
	"encoding/json"
	"errors"
	"fmt"
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
