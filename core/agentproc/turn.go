// This file: spec/protocol.md, "stdin: the turn" — the turn line the bridge
// writes first (P-TURN-1) and the input it is built from.

package agentproc

import (
	"bytes"
	"encoding/json"
	"errors"
)

// ProtocolVersion is the wire version written in every turn line (P-TURN-1).
const ProtocolVersion = "0.4"

// ErrEmptyTurn is returned by Run for a turn with no message and no
// attachment (F-EMPTY-1); nothing is started.
var ErrEmptyTurn = errors.New("empty turn: no message and no attachment")

// Attachment is one file: handed to the agent in the turn line (D-ATT-1),
// or sent back by the agent on a partial or result (X-FILE-1).
type Attachment struct {
	Kind     string `json:"kind"` // image, file, audio, video; a turn's unknown kind becomes "other"
	URL      string `json:"url"`  // file:, http(s): or data:
	Filename string `json:"filename,omitempty"`
	MIMEType string `json:"mime_type,omitempty"`
	Size     int64  `json:"size,omitempty"`
	// Name and MIME are the turn's field names before the upstream ones
	// (filename, mime_type); the turn line carries both for one release.
	Name string `json:"name,omitempty"`
	MIME string `json:"mime,omitempty"`
	// Problem, on an agent's attachment, says why it is not well formed
	// ("" when it is); never on the wire.
	Problem string `json:"-"`
}

// Turn is the input of one turn.
type Turn struct {
	Message     string
	SessionID   string // previous turn's agent session id; "" = new session
	SessionName string // "" → "default"
	// ConversationID is the value of the bridge extension placeholder
	// {{AGENTBRIDGE_CONVERSATION_ID}}: a stable name of the conversation
	// the turn belongs to (core.ConversationKey.Slug), "" when there is
	// none (agentbridge run). It is not part of the turn line.
	ConversationID string
	Attachments    []Attachment
}

// turnLine is the stdin turn object (P-TURN-1).
type turnLine struct {
	Type            string       `json:"type"`
	Message         string       `json:"message"`
	SessionID       string       `json:"session_id"`
	SessionName     string       `json:"session_name"`
	Attachments     []Attachment `json:"attachments"`
	Permission      bool         `json:"permission,omitempty"`
	ProtocolVersion string       `json:"protocol_version"`
}

func encodeTurn(t Turn, sessionName string, permission bool) []byte {
	atts := make([]Attachment, len(t.Attachments))
	for i, a := range t.Attachments {
		atts[i], _ = a.normalize()
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	// Encoding strings and ints cannot fail.
	_ = enc.Encode(turnLine{
		Type: "turn", Message: t.Message, SessionID: t.SessionID, SessionName: sessionName,
		Attachments: atts, Permission: permission, ProtocolVersion: ProtocolVersion,
	})
	return buf.Bytes()
}
