// This file: spec/protocol.md, "stdout: events" — what one stdout line is
// (P-OUT-1, P-OUT-2, P-OUT-3) and its usage (F-USAGE-1), in the shape of
// the conformance fixtures.

package agentproc

import (
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Line kinds returned by Classify.
const (
	KindPartial           = "partial"
	KindResult            = "result"
	KindError             = "error"
	KindPermissionRequest = "permission_request"
	KindMalformed         = "malformed"
)

// Line is one classified stdout line, shaped like the conformance fixtures'
// expectations (cases.json).
type Line struct {
	// Kind is partial, result, error, permission_request or malformed.
	Kind string
	// Value is the text (partial, result), the message (error), the whole
	// event object as map[string]any (permission_request), or the raw line
	// (malformed).
	Value any
	// Role is the partial's role when it is a string ("" when absent).
	Role string
	// SessionID is the event's session_id when it is a non-empty string.
	// It is not validated here; the runner drops invalid ids (F-SID-1).
	SessionID string
	// Usage is the usage object of a result or error (F-USAGE-1), nil if none.
	Usage *Usage
	// Attachments are a partial's or result's files (X-FILE-1, a bridge
	// extension), nil when it has none.
	Attachments []Attachment
	// Fields are the event's raw fields (nil when malformed).
	Fields map[string]json.RawMessage
}

// Usage is the optional token/cost accounting of a result or error
// (F-USAGE-1). Unknown keys are ignored; absent or non-numeric keys are zero.
type Usage struct {
	InputTokens              int64   `json:"input_tokens"`
	OutputTokens             int64   `json:"output_tokens"`
	TotalTokens              int64   `json:"total_tokens"`
	CacheReadInputTokens     int64   `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64   `json:"cache_creation_input_tokens"`
	ReasoningTokens          int64   `json:"reasoning_tokens"`
	DurationMS               float64 `json:"duration_ms"`
	CostUSD                  float64 `json:"cost_usd"`
}

// Classify classifies one stdout line (without its newline) exactly as the
// conformance cases expect (P-OUT-1, P-OUT-2): anything that is not a JSON
// object with a known string type — including the 0.3 session and text
// events — is malformed.
func Classify(line []byte) Line {
	malformed := Line{Kind: KindMalformed, Value: string(line)}
	// Decoding into a map (not a struct) keeps key matching exact: Go's
	// struct decoding would also accept "Type" or "TEXT".
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(line, &fields); err != nil || fields == nil {
		return malformed
	}
	typ, ok := jsonString(fields["type"])
	if !ok {
		return malformed
	}
	l := Line{Kind: typ, Fields: fields}
	switch typ {
	case KindPartial:
		l.Value, _ = jsonString(fields["text"])
		l.Role, _ = jsonString(fields["role"])
		l.Attachments = parseAttachments(fields["attachments"])
	case KindResult:
		l.Value, _ = jsonString(fields["text"])
		l.Usage = parseUsage(fields["usage"])
		l.Attachments = parseAttachments(fields["attachments"])
	case KindError:
		l.Value, _ = jsonString(fields["message"])
		l.Usage = parseUsage(fields["usage"])
	case KindPermissionRequest:
		var obj map[string]any
		if err := json.Unmarshal(line, &obj); err != nil {
			return malformed
		}
		l.Value = obj
	default:
		return malformed
	}
	if sid, ok := jsonString(fields["session_id"]); ok && sid != "" {
		l.SessionID = sid
	}
	return l
}

// jsonString decodes raw as a JSON string; ok is false for anything else.
func jsonString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// parseUsage reads the known numeric keys of a usage object, leniently: a
// wrong-typed key is zero rather than a reason to lose the rest.
func parseUsage(raw json.RawMessage) *Usage {
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil
	}
	num := func(k string) float64 {
		var f float64
		if v, ok := m[k]; ok {
			_ = json.Unmarshal(v, &f) // not a number: stays zero
		}
		return f
	}
	return &Usage{
		InputTokens:              int64(num("input_tokens")),
		OutputTokens:             int64(num("output_tokens")),
		TotalTokens:              int64(num("total_tokens")),
		CacheReadInputTokens:     int64(num("cache_read_input_tokens")),
		CacheCreationInputTokens: int64(num("cache_creation_input_tokens")),
		ReasoningTokens:          int64(num("reasoning_tokens")),
		DurationMS:               num("duration_ms"),
		CostUSD:                  num("cost_usd"),
	}
}

// ValidSessionID reports whether id may be used as a session id on output
// (F-SID-1): non-empty, valid UTF-8, no path separators, no control
// characters — and not "." or "..", which name directories when a profile
// puts {{SESSION_ID}} in a path (a tightening beyond F-SID-1).
func ValidSessionID(id string) bool {
	if id == "" || id == "." || id == ".." || !utf8.ValidString(id) || strings.ContainsAny(id, `/\`) {
		return false
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// ValidRequestID reports whether a permission request_id is usable
// (F-PERM-1): a non-empty string without whitespace or control characters.
// Shims use it to refuse what the bridge would refuse.
func ValidRequestID(id string) bool {
	if id == "" || !utf8.ValidString(id) {
		return false
	}
	for _, r := range id {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return false
		}
	}
	return true
}
