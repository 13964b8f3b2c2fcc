// This file: spec/protocol.md, "Bridge extension: files from the agent"
// (X-FILE-1) — the attachments array a partial or result may carry, and
// the turn's own attachments (D-ATT-1) in the upstream field names.

package agentproc

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
)

// Attachment kinds (D-ATT-1, X-FILE-1). KindOther is what a turn
// attachment of a kind the protocol does not name becomes.
const (
	AttachImage = "image"
	AttachFile  = "file"
	AttachAudio = "audio"
	AttachVideo = "video"
	AttachOther = "other"
)

// knownKind reports whether kind is one the protocol names.
func knownKind(kind string) bool {
	switch kind {
	case AttachImage, AttachFile, AttachAudio, AttachVideo:
		return true
	}
	return false
}

// MaxEventAttachments bounds how many attachments of one event are read;
// the rest are reported as one malformed entry. The bridge's per-turn
// limit is far lower; this only keeps a hostile line's cost flat.
const MaxEventAttachments = 1000

// parseAttachments reads an event's attachments array (X-FILE-1). Every
// element becomes one Attachment; one that is not well formed keeps what
// could be read and says why in Problem, so the bridge can refuse it with
// a visible line rather than drop it. Absent or null: nil.
func parseAttachments(raw json.RawMessage) []Attachment {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return []Attachment{{Problem: "attachments is not an array"}}
	}
	var out []Attachment
	for i, e := range elems {
		if i == MaxEventAttachments {
			out = append(out, Attachment{Problem: fmt.Sprintf("%d more attachments in one event; at most %d are read", len(elems)-i, MaxEventAttachments)})
			break
		}
		out = append(out, parseAttachment(e))
	}
	return out
}

// parseAttachment reads one element of an attachments array.
func parseAttachment(raw json.RawMessage) Attachment {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return Attachment{Problem: "an attachment is not an object"}
	}
	var a Attachment
	var problems []string
	str := func(key string, dst *string) {
		v, ok := m[key]
		if !ok || string(v) == "null" {
			return
		}
		if s, ok := jsonString(v); ok {
			*dst = s
			return
		}
		problems = append(problems, key+" is not a string")
	}
	str("kind", &a.Kind)
	str("url", &a.URL)
	str("filename", &a.Filename)
	str("mime_type", &a.MIMEType)
	// The turn's older names, accepted as fallbacks.
	if a.Filename == "" {
		str("name", &a.Filename)
	}
	if a.MIMEType == "" {
		str("mime", &a.MIMEType)
	}
	if v, ok := m["size"]; ok && string(v) != "null" {
		var f float64
		if err := json.Unmarshal(v, &f); err != nil || f < 0 || f > 1<<53 || f != float64(int64(f)) {
			problems = append(problems, "size is not a whole number of bytes")
		} else {
			a.Size = int64(f)
		}
	}
	switch {
	case a.URL == "":
		problems = append(problems, "url is missing")
	case a.Kind == "":
		a.Kind = AttachFile
	case !knownKind(a.Kind):
		problems = append(problems, fmt.Sprintf("kind %q is not image, file, audio or video", clip([]byte(a.Kind), 40)))
	}
	a.Problem = strings.Join(problems, "; ")
	return a
}

// normalize gives a turn attachment both the upstream field names
// (filename, mime_type) and the older ones (name, mime), and makes an
// unknown kind "other" (D-ATT-1), reporting whether it did.
func (a Attachment) normalize() (Attachment, bool) {
	if a.Filename == "" {
		a.Filename = a.Name
	}
	if a.Name == "" {
		a.Name = a.Filename
	}
	if a.MIMEType == "" {
		a.MIMEType = a.MIME
	}
	if a.MIME == "" {
		a.MIME = a.MIMEType
	}
	if a.Kind == AttachOther || knownKind(a.Kind) {
		return a, false
	}
	a.Kind = AttachOther
	return a, true
}

// TurnScheme reports whether a turn attachment's URL has a scheme the
// protocol allows: file, http(s) or data (D-ATT-1).
func TurnScheme(url string) bool {
	scheme, _, ok := strings.Cut(url, ":")
	if !ok {
		return false
	}
	switch strings.ToLower(scheme) {
	case "file", "http", "https", "data":
		return true
	}
	return false
}

// checkTurnAttachments applies D-ATT-1 to a turn's attachments before they
// are written: an unknown kind becomes "other" and a URL of another scheme
// than file, http(s) or data is not passed on, each with a warning.
func checkTurnAttachments(atts []Attachment, log *slog.Logger) []Attachment {
	out := atts[:0:0]
	for _, a := range atts {
		if !TurnScheme(a.URL) {
			log.LogAttrs(context.Background(), slog.LevelWarn, "turn attachment of an unsupported scheme not passed on", slog.String("rule", "D-ATT-1"),
				slog.String("url", clip([]byte(a.URL), 40)))
			continue
		}
		n, changed := a.normalize()
		if changed {
			log.LogAttrs(context.Background(), slog.LevelWarn, "turn attachment of an unknown kind passed on as other", slog.String("rule", "D-ATT-1"),
				slog.String("kind", clip([]byte(a.Kind), 40)))
		}
		out = append(out, n)
	}
	return out
}
