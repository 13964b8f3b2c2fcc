// This file: spec/protocol.md, "stdout: events" — the allocation-light
// reading of the common partial, result and error lines; Classify decides
// everything else.

package agentproc

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge/core"
)

// scanned is the runner's view of one partial, result or error line read
// without building a map (see scanLine).
type scanned struct {
	kind      string // KindPartial, KindResult or KindError
	text      string // text (partial, result) or message (error)
	role      string // partial role when a string; "" when absent
	sessionID string // "" when absent or empty
}

// Keys scanLine understands; any other key sends the line to Classify.
const (
	keyType = iota
	keyText
	keyRole
	keySessionID
	keyMessage
	numKeys
)

// strSpan is one string value inside a line: the quoted bytes, and what the
// scan saw inside them.
type strSpan struct {
	raw     []byte // including the quotes
	escaped bool   // contains a backslash escape
	high    bool   // contains a byte >= 0x80
}

// strClass marks, per byte, what needs attention inside a JSON string:
// 1 = a control character (invalid JSON), 2 = backslash, 3 = quote,
// 4 = a byte >= 0x80.
var strClass = func() (t [256]byte) {
	for i := range 0x20 {
		t[i] = 1
	}
	t['\\'] = 2
	t['"'] = 3
	for i := 0x80; i < 256; i++ {
		t[i] = 4
	}
	return t
}()

// scanLine is the fast path of the stdout reader. It accepts only the
// common shape — one JSON object whose keys are among type, text, role,
// session_id and message, written plainly (ASCII, no escapes, no
// duplicates), each with a string value — and reports ok=false for
// anything else, for which the caller uses Classify. For every line it
// accepts it yields what Classify would (FuzzScanLineMatchesClassify).
// prevSID is the turn's session id so far: an equal id is reused rather
// than allocated again.
func scanLine(line []byte, prevSID string) (s scanned, ok bool) {
	var spans [numKeys]strSpan
	var seen [numKeys]bool
	i := skipWS(line, 0)
	if i >= len(line) || line[i] != '{' {
		return s, false
	}
	i++
	for n := 0; ; n++ {
		i = skipWS(line, i)
		if i >= len(line) {
			return s, false
		}
		if line[i] == '}' && n == 0 {
			return s, false // {}: no type
		}
		if line[i] != '"' {
			return s, false
		}
		// The key: plain printable ASCII only, so it equals its decoding.
		j := i + 1
		for j < len(line) && line[j] != '"' {
			if c := line[j]; c < 0x20 || c >= 0x80 || c == '\\' {
				return s, false
			}
			j++
		}
		if j >= len(line) {
			return s, false
		}
		var k int
		switch string(line[i+1 : j]) {
		case "type":
			k = keyType
		case "text":
			k = keyText
		case "role":
			k = keyRole
		case "session_id":
			k = keySessionID
		case "message":
			k = keyMessage
		default:
			return s, false
		}
		if seen[k] {
			return s, false // duplicate key: Classify knows which one wins
		}
		seen[k] = true
		i = skipWS(line, j+1)
		if i >= len(line) || line[i] != ':' {
			return s, false
		}
		i = skipWS(line, i+1)
		if i >= len(line) || line[i] != '"' {
			return s, false // not a string value
		}
		sp, end, valid := scanString(line, i)
		if !valid {
			return s, false
		}
		spans[k] = sp
		i = skipWS(line, end)
		if i >= len(line) {
			return s, false
		}
		if line[i] == ',' {
			i++
			continue
		}
		if line[i] != '}' {
			return s, false
		}
		if skipWS(line, i+1) != len(line) {
			return s, false // trailing bytes
		}
		break
	}
	if !seen[keyType] {
		return s, false
	}
	var typ string
	switch sp := spans[keyType]; string(sp.raw) {
	case `"partial"`:
		typ = KindPartial
	case `"result"`:
		typ = KindResult
	case `"error"`:
		typ = KindError
	default:
		if typ, ok = decodeString(sp); !ok {
			return s, false
		}
	}
	switch typ {
	case KindPartial:
		s.kind = KindPartial
		if seen[keyRole] {
			// The usual roles come from constants rather than a new string
			// per partial.
			switch sp := spans[keyRole]; string(sp.raw) {
			case `"` + core.RoleOutput + `"`:
				s.role = core.RoleOutput
			case `"` + core.RoleThinking + `"`:
				s.role = core.RoleThinking
			default:
				if s.role, ok = decodeString(sp); !ok {
					return s, false
				}
			}
		}
	case KindResult:
		s.kind = KindResult
	case KindError:
		s.kind = KindError
	default:
		return s, false
	}
	textKey := keyText
	if s.kind == KindError {
		textKey = keyMessage
	}
	if seen[textKey] {
		if s.text, ok = decodeString(spans[textKey]); !ok {
			return s, false
		}
	}
	if seen[keySessionID] {
		sp := spans[keySessionID]
		if !sp.escaped && !sp.high && string(sp.raw[1:len(sp.raw)-1]) == prevSID {
			s.sessionID = prevSID
		} else if s.sessionID, ok = decodeString(sp); !ok {
			return s, false
		}
	}
	return s, true
}

// skipWS returns the index of the first non-JSON-whitespace byte at or
// after i.
func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// scanString scans the JSON string starting at the quote at b[i]. It
// returns the span, the index after the closing quote, and false when the
// string is not valid JSON.
func scanString(b []byte, i int) (strSpan, int, bool) {
	sp := strSpan{}
	j := i + 1
	for j < len(b) {
		switch strClass[b[j]] {
		case 0:
			j++
		case 1:
			return sp, 0, false
		case 2:
			if j+1 >= len(b) {
				return sp, 0, false
			}
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(b) || !isHex(b[j+2]) || !isHex(b[j+3]) || !isHex(b[j+4]) || !isHex(b[j+5]) {
					return sp, 0, false
				}
				j += 6
			default:
				return sp, 0, false
			}
			sp.escaped = true
		case 3:
			sp.raw = b[i : j+1]
			return sp, j + 1, true
		case 4:
			sp.high = true
			j++
		}
	}
	return sp, 0, false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// decodeString decodes a string span scanString accepted. Plain valid
// UTF-8 is copied as is, the short escapes are undone here, and anything
// subtler (\u escapes, invalid UTF-8, which encoding/json replaces byte by
// byte) goes through encoding/json itself so the result cannot differ.
func decodeString(sp strSpan) (string, bool) {
	body := sp.raw[1 : len(sp.raw)-1]
	if sp.high && !utf8.Valid(body) {
		return jsonString(sp.raw)
	}
	if !sp.escaped {
		return string(body), true
	}
	var out strings.Builder
	out.Grow(len(body)) // escapes only shrink the text
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' {
			out.WriteByte(c)
			continue
		}
		i++
		switch body[i] {
		case '"', '\\', '/':
			out.WriteByte(body[i])
		case 'b':
			out.WriteByte('\b')
		case 'f':
			out.WriteByte('\f')
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
		default: // \u: surrogate rules and all
			return jsonString(json.RawMessage(sp.raw))
		}
	}
	return out.String(), true
}
