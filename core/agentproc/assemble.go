// This file: spec/protocol.md, "stdout: events" — turning classified lines
// into the caller's events and the reply, session id, error and usage.

package agentproc

import (
	"bytes"
	"context"
	"log/slog"

	"github.com/agentbridge/agentbridge/core"
)

// EventKind says what an Event carries.
type EventKind int

// Event kinds.
const (
	EventPartial    EventKind = iota + 1 // a forwarded partial (only when Streaming, and not after an error)
	EventPermission                      // a permission request to answer (only when Permission)
	EventSession                         // the turn's session id, once, as soon as it is known (P-SID-1)
	// EventFiles carries the files of a partial or result (X-FILE-1),
	// right after the partial's own text: the caller checks them
	// (core/outfile) and shows them where they come.
	EventFiles
)

// Event is something the caller sees while the turn runs.
type Event struct {
	Kind    EventKind
	Text    string             // EventPartial: the chunk
	Role    string             // EventPartial: core.RoleOutput (default when absent) or the agent's role string, e.g. core.RoleThinking
	Request *PermissionRequest // EventPermission
	// SessionID is EventSession's id: the first valid one of the turn,
	// the one Outcome.SessionID will hold.
	SessionID string
	// Files are EventFiles' attachments, as the agent wrote them; an
	// entry that is not well formed says why in its Problem.
	Files []Attachment
}

// assembler turns classified stdout lines into events and the outcome's
// body, session id and error. Only the stdout reader goroutine touches it
// until Run reads the result.
type assembler struct {
	p    *Profile
	opts Options
	log  *slog.Logger
	ts   *turnState
	lim  *replyLimit

	sessionID  string
	partials   []string
	outputSeen bool // an output partial was forwarded: the body was streamed
	resultSeen bool
	resultText string
	errored    bool
	errMsg     string
	usage      *Usage
}

// handle applies one stdout line to the turn. Common lines take the
// allocation-light scanLine path; everything else goes through Classify.
func (a *assembler) handle(line []byte) {
	if s, ok := scanLine(line, a.sessionID); ok {
		a.apply(s, nil)
		return
	}
	l := Classify(line)
	if l.Kind == KindMalformed {
		a.log.LogAttrs(context.Background(), slog.LevelWarn, "ignored a malformed stdout line", slog.String("rule", "P-OUT-2"), slog.String("line", clip(line, 200)))
		return
	}
	s := scanned{kind: l.Kind, role: l.Role, sessionID: l.SessionID}
	s.text, _ = l.Value.(string)
	a.apply(s, &l)
}

// apply applies one classified line; l is the full classification when
// there is one (it carries usage and a permission request's fields).
func (a *assembler) apply(l scanned, full *Line) {
	ctx := context.Background()
	if l.sessionID != "" {
		switch {
		case l.sessionID == a.sessionID:
		case !ValidSessionID(l.sessionID):
			a.log.LogAttrs(ctx, slog.LevelWarn, "dropped an invalid session_id", slog.String("rule", "F-SID-1"), slog.String("session_id", clip([]byte(l.sessionID), 200)))
		case a.sessionID == "":
			a.sessionID = l.sessionID
			if a.opts.OnEvent != nil {
				a.opts.OnEvent(Event{Kind: EventSession, SessionID: l.sessionID})
			}
		default:
			a.log.LogAttrs(ctx, slog.LevelWarn, "agent changed its session_id mid-turn; keeping the first", slog.String("rule", "P-SID-4"),
				slog.String("first", a.sessionID), slog.String("later", clip([]byte(l.sessionID), 200)))
		}
	}
	var usage *Usage
	var files []Attachment
	if full != nil {
		usage, files = full.Usage, full.Attachments
	}
	switch l.kind {
	case KindPartial:
		if a.errored { // P-ERR-1
			return
		}
		// A partial's files go out even when its text is not shown
		// (P-PART-1): a file is never dropped unsaid.
		defer a.files(files)
		if !a.p.Streaming { // P-PART-1
			return
		}
		text := l.text
		role := l.role
		if role == "" {
			role = core.RoleOutput
		}
		if role == core.RoleOutput {
			a.outputSeen = true
		}
		if text = a.lim.partial(role, text); text == "" && l.text != "" {
			return // past the reply limit
		}
		if a.opts.CollectPartials && a.lim.keep(role, len(text)) {
			a.partials = append(a.partials, text)
		}
		if a.opts.OnEvent != nil {
			a.opts.OnEvent(Event{Kind: EventPartial, Text: text, Role: role})
		}
	case KindResult:
		switch {
		case a.errored:
			a.log.LogAttrs(ctx, slog.LevelWarn, "discarded a result after an error", slog.String("rule", "P-ERR-2"))
		case a.resultSeen:
			a.log.LogAttrs(ctx, slog.LevelWarn, "ignored a second result", slog.String("rule", "P-RES-1"))
		default:
			a.resultSeen = true
			a.resultText = l.text
			if usage != nil {
				a.usage = usage
			}
			if len(files) > 0 && !a.outputSeen && l.text != "" {
				// The words a result's files come with go first, as a
				// partial's would: a file follows the text that
				// introduces it, and the result's text is then the
				// streamed body (Outcome.Reply stays "").
				a.outputSeen = true
				text := a.lim.partial(core.RoleOutput, l.text)
				if a.opts.CollectPartials && a.lim.keep(core.RoleOutput, len(text)) {
					a.partials = append(a.partials, text)
				}
				if a.opts.OnEvent != nil && text != "" {
					a.opts.OnEvent(Event{Kind: EventPartial, Text: text, Role: core.RoleOutput})
				}
			}
			a.files(files)
		}
	case KindError:
		if a.errored {
			a.log.LogAttrs(ctx, slog.LevelWarn, "ignored a second error event")
			return
		}
		a.errored = true
		a.errMsg = l.text
		if usage != nil {
			a.usage = usage
		}
		// Pending permission requests are moot once the turn has failed.
		a.ts.end("", false)
	case KindPermissionRequest:
		if full != nil {
			a.permission(*full)
		}
	}
}

// files hands the caller an event's attachments (X-FILE-1).
func (a *assembler) files(files []Attachment) {
	if len(files) > 0 && a.opts.OnEvent != nil {
		a.opts.OnEvent(Event{Kind: EventFiles, Files: files})
	}
}

// clip shortens b for a log line, keeping it valid UTF-8.
func clip(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
	}
	return string(bytes.ToValidUTF8(b, []byte("\uFFFD")))
}
