package shimio

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentbridge/agentbridge/shim/sendfile"
)

// SendFile is how a shim offers its CLI the send_file tool: the MCP server
// to register (Command with Args: `agentbridge mcp`) under
// sendfile.ServerName, and the spool the files come back through. The
// spool and the working directory reach the server in its environment
// (sendfile.SpoolEnv, sendfile.RootEnv), which Launch sets for the CLI, so
// the registration is the same on every turn.
type SendFile struct {
	Command string
	Args    []string
	spool   *sendfile.Spool
	root    string
}

// ToolName is the tool as Claude Code, Qwen Code and Codex name an MCP
// server's tool: mcp__agentbridge__send_file.
func (s *SendFile) ToolName() string {
	return "mcp__" + sendfile.ServerName + "__" + sendfile.ToolName
}

// Close removes the spool.
func (s *SendFile) Close() {
	if s != nil {
		_ = s.spool.Remove()
	}
}

// Dir is the spool's directory; a shim may keep a configuration file for
// its CLI there under a name starting with a dot (never read as a file).
func (s *SendFile) Dir() string { return s.spool.Dir }

// env is what the CLI's environment gets so the MCP server it starts
// finds the spool and the working directory.
func (s *SendFile) env() []string {
	var out []string
	for k, v := range s.Env() {
		out = append(out, k+"="+v)
	}
	return out
}

// newSendFile sets up send_file for a turn, with command (this binary when
// "") as the MCP server. Without a spool the turn goes on without the
// tool, and says so on stderr.
func newSendFile(command string, stderr io.Writer) *SendFile {
	if command == "" {
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintf(stderr, "shim: send_file is off: the agentbridge binary cannot be found (%v); set --mcp-command\n", err)
			return nil
		}
		command = exe
	}
	root, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(stderr, "shim: send_file is off: %v\n", err)
		return nil
	}
	sp, err := sendfile.NewSpool()
	if err != nil {
		fmt.Fprintf(stderr, "shim: send_file is off: %v\n", err)
		return nil
	}
	return &SendFile{Command: command, Args: []string{"mcp"}, spool: sp, root: root}
}

// fileEvent is a partial carrying a sent file.
type fileEvent struct {
	Type        string                `json:"type"`
	Text        string                `json:"text"`
	Attachments []sendfile.Attachment `json:"attachments"`
	SessionID   string                `json:"session_id,omitempty"`
}

// flushFiles writes each file the CLI sent since the last event as a
// partial carrying it (its caption as the text before it), so it shows
// after the text written so far (X-FILE-1). Called with e.mu held before
// every event.
func (e *Emitter) flushFiles() error {
	if e.files == nil || e.ended {
		return nil
	}
	entries, err := e.files.spool.Take()
	if err != nil && e.stderr != nil {
		fmt.Fprintf(e.stderr, "shim: %v\n", err)
	}
	for _, en := range entries {
		text := strings.TrimSpace(en.Caption)
		if text != "" {
			if e.outputOpen {
				text = "\n\n" + text
			}
			text += "\n"
		}
		if err := e.encode(fileEvent{Type: "partial", Text: text, Attachments: []sendfile.Attachment{en.Attachment}, SessionID: e.sid}, "partial"); err != nil {
			return err
		}
		e.outputOpen = false
	}
	return nil
}

// MCPServers is the MCP configuration, as JSON, that registers the server
// for CLIs that take Claude Code's format (claude and qwen --mcp-config,
// Gemini CLI's mcpServers setting): {"mcpServers":{"agentbridge":{…}}},
// with extra fields added to the server's entry.
func (s *SendFile) MCPServers(extra map[string]any) string {
	srv := map[string]any{"command": s.Command, "args": s.Args}
	for k, v := range extra {
		srv[k] = v
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{sendfile.ServerName: srv}})
	return string(b)
}

// EnvNames are the variables the MCP server needs from the CLI's
// environment, for a CLI that passes only the ones it is told to (codex).
func (s *SendFile) EnvNames() []string { return []string{sendfile.SpoolEnv, sendfile.RootEnv} }

// Env is EnvNames with their values, for a configuration file that sets
// the server's environment itself (gemini).
func (s *SendFile) Env() map[string]string {
	return map[string]string{sendfile.SpoolEnv: s.spool.Dir, sendfile.RootEnv: s.root}
}
