package shimio

import (
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Lengths of a tool line's parts, in runes: a chat line, not a transcript.
const (
	maxToolName   = 40
	maxToolDetail = 100
)

// ToolLine is how a tool call reads in the chat: "🔧 Bash: ls -la", or
// "✏️ Write: notes.md" for a tool that edits files, ending in a newline.
// Both parts are made safe to show: one line (control and format
// characters become spaces, runs of spaces one) and truncated with "…".
// Mentions stay as written: the bridge defuses them as each platform
// needs. An empty name gives "".
func ToolLine(name, detail string) string {
	name = clean(name, maxToolName)
	if name == "" {
		return ""
	}
	icon := "🔧"
	if editsFiles(name) {
		icon = "✏️"
	}
	line := icon + " " + name
	if d := clean(detail, maxToolDetail); d != "" {
		line += ": " + d
	}
	return line + "\n"
}

// editsFiles reports whether a tool (Claude, Qwen, Gemini or Codex naming)
// writes files.
func editsFiles(name string) bool {
	switch strings.ToLower(name) {
	case "write", "edit", "multiedit", "notebookedit", "write_file", "replace", "edit_file", "apply_patch":
		return true
	}
	return false
}

// ToolDetail picks what a tool's input is about (the command, the file,
// the pattern...), or failing that the input as compact JSON: the part of
// a tool line after the name.
func ToolDetail(input json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(input, &m) != nil || len(m) == 0 {
		return ""
	}
	for _, k := range []string{"command", "cmd", "file_path", "absolute_path", "notebook_path", "path", "dir_path",
		"pattern", "query", "url", "prompt", "description", "subject"} {
		if v, ok := m[k]; ok {
			switch v := v.(type) {
			case string:
				if v != "" {
					return v
				}
			case []any: // e.g. codex's ["bash", "-lc", "ls"]
				var parts []string
				for _, p := range v {
					if s, ok := p.(string); ok {
						parts = append(parts, s)
					}
				}
				return strings.Join(parts, " ")
			}
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return ""
	}
	return string(b)
}

// clean makes s one safe line of at most max runes.
func clean(s string, max int) string {
	var b strings.Builder
	space := false
	n := 0
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError {
			space = b.Len() > 0
			continue
		}
		if n == max {
			b.WriteString("…")
			break
		}
		if space {
			b.WriteByte(' ')
			n++
			space = false
			if n == max {
				b.WriteString("…")
				break
			}
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}
