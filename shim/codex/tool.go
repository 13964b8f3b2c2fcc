package codex

import (
	"encoding/json"
	"regexp"
	"strings"
	"sync"

	"github.com/agentbridge/agentbridge/shim/internal/shimio"
)

// toolItem is what exec's and app-server's tool call items carry: a
// command, file changes, an MCP tool, a web search. exec names the item
// types in snake_case (command_execution), app-server in camelCase
// (commandExecution); the fields are the same.
type toolItem struct {
	Command   json.RawMessage `json:"command"` // a string, or app-server's argv list
	Changes   json.RawMessage `json:"changes"` // [{"path": …, …}], kept whole for permission requests
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Query     string          `json:"query"`
}

// describe names a tool call item for shimio.ToolLine; "" for an item that
// is not a tool call.
func (it *toolItem) describe(typ string) (name, detail string) {
	switch typ {
	case "command_execution", "commandExecution":
		var cmd any
		_ = json.Unmarshal(it.Command, &cmd)
		b, _ := json.Marshal(map[string]any{"command": cmd})
		return "Bash", unwrapShell(shimio.ToolDetail(b))
	case "file_change", "fileChange":
		var changes []struct {
			Path string `json:"path"`
		}
		_ = json.Unmarshal(it.Changes, &changes)
		var paths []string
		for _, c := range changes {
			paths = append(paths, c.Path)
		}
		return "Edit", strings.Join(paths, ", ")
	case "mcp_tool_call", "mcpToolCall":
		return it.Server + "." + it.Tool, shimio.ToolDetail(it.Arguments)
	case "web_search", "webSearch":
		return "WebSearch", it.Query
	}
	return "", ""
}

// shellWrap is codex's way of running a command: `/bin/bash -lc '…'`.
// Compiled on first use, as every package-level pattern here: every
// agentbridge process (each turn's shim among them) links this package.
var shellWrap = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:\S*/)?(?:bash|sh|zsh) -l?c (.+)$`)
})

// unwrapShell shows the command codex runs, not the shell around it.
func unwrapShell(cmd string) string {
	m := shellWrap().FindStringSubmatch(cmd)
	if m == nil {
		return cmd
	}
	inner := m[1]
	if len(inner) >= 2 && inner[0] == '\'' && inner[len(inner)-1] == '\'' {
		return strings.ReplaceAll(inner[1:len(inner)-1], `'\''`, `'`)
	}
	if len(inner) >= 2 && inner[0] == '"' && inner[len(inner)-1] == '"' {
		return inner[1 : len(inner)-1]
	}
	return inner
}
