package sendfile

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// protocolVersions are the MCP revisions the server speaks, newest first.
// Its one tool uses nothing a later revision changed.
var protocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// Server is the send_file MCP server: JSON-RPC 2.0, one message per line
// on stdin and stdout (the MCP stdio transport).
type Server struct {
	Spool   *Spool // where sent files go; nil: send_file says it cannot send
	Root    string // the directory files are sent from (ReadFile)
	Max     int64  // the largest file, MaxBytes when 0
	Version string // the server's version, for initialize
}

type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// JSON-RPC 2.0 error codes.
const (
	errParse          = -32700
	errInvalidRequest = -32600
	errNoMethod       = -32601
	errInvalidParams  = -32602
)

// Serve answers requests from r on w until r ends or ctx is done (checked
// between messages: the CLI ends the server by closing its stdin).
func (s Server) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for ctx.Err() == nil {
		line, err := br.ReadBytes('\n')
		if line = bytes.TrimSpace(line); len(line) > 0 {
			if resp := s.handle(line); resp != nil {
				b, merr := json.Marshal(resp)
				if merr != nil {
					return fmt.Errorf("mcp: encode response: %w", merr)
				}
				if _, werr := w.Write(append(b, '\n')); werr != nil {
					return fmt.Errorf("mcp: write response: %w", werr)
				}
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("mcp: read request: %w", err)
		}
	}
	return ctx.Err()
}

// handle answers one message; nil for a notification (or a response the
// client sent: the server makes no requests of its own).
func (s Server) handle(line []byte) *rpcResponse {
	var req rpcRequest
	if err := json.Unmarshal(line, &req); err != nil {
		return &rpcResponse{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: &rpcError{errParse, "parse error: " + err.Error()}}
	}
	if req.Method == "" {
		if len(req.ID) > 0 {
			return nil // a response to nothing we asked
		}
		return &rpcResponse{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: &rpcError{errInvalidRequest, "invalid request: no method"}}
	}
	if len(req.ID) == 0 || string(req.ID) == "null" {
		return nil // notifications/initialized, notifications/cancelled, …
	}
	resp := &rpcResponse{JSONRPC: "2.0", ID: req.ID}
	switch req.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(req.Params, &p)
		// The client's version when the server speaks it, else the
		// newest it does: the client then decides (MCP lifecycle).
		v := protocolVersions[0]
		if slices.Contains(protocolVersions, p.ProtocolVersion) {
			v = p.ProtocolVersion
		}
		resp.Result = map[string]any{
			"protocolVersion": v,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": ServerName, "version": s.version()},
			"instructions":    "Call send_file to send the user a file from the working directory (a chart, a report, a screenshot): the chat shows it, images as pictures.",
		}
	case "ping":
		resp.Result = map[string]any{}
	case "tools/list":
		resp.Result = map[string]any{"tools": []any{toolSpec(s.max())}}
	case "tools/call":
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal(req.Params, &p); err != nil {
			resp.Error = &rpcError{errInvalidParams, "invalid params: " + err.Error()}
			break
		}
		if p.Name != ToolName {
			resp.Error = &rpcError{errInvalidParams, fmt.Sprintf("unknown tool %q", p.Name)}
			break
		}
		resp.Result = s.sendFile(p.Arguments)
	default:
		resp.Error = &rpcError{errNoMethod, "method not found: " + req.Method}
	}
	return resp
}

func (s Server) version() string {
	if s.Version == "" {
		return "dev"
	}
	return s.Version
}

func (s Server) max() int64 {
	if s.Max <= 0 {
		return MaxBytes
	}
	return s.Max
}

// toolSpec is send_file as tools/list describes it.
func toolSpec(max int64) map[string]any {
	str := func(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
	return map[string]any{
		"name":  ToolName,
		"title": "Send a file to the chat",
		"description": "Send a file from the working directory to the user in the chat: images (PNG, JPEG, GIF, WebP) show as pictures, " +
			"anything else as a file to download. Use it whenever the user asks to see or get a file, a chart, a report or a screenshot: " +
			"write the file first, then send it. Files up to " + Bytes(max) + "; hidden files (.env, .git) and files outside the working directory are refused.",
		"inputSchema": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"path":      str("The file to send, relative to the working directory (e.g. chart.png or out/report.pdf)."),
				"caption":   str("Optional: a short line shown with the file."),
				"filename":  str("Optional: the name the user sees (default: the file's own name)."),
				"mime_type": str("Optional: the media type, e.g. image/png (default: guessed from the name and the contents)."),
			},
			"required": []string{"path"},
		},
	}
}

// sendFile runs the tool: the file goes to the spool, and the result tells
// the model what happened (an error result it can explain to the user).
func (s Server) sendFile(raw json.RawMessage) map[string]any {
	var a struct {
		Path     string `json:"path"`
		Caption  string `json:"caption"`
		Filename string `json:"filename"`
		MIMEType string `json:"mime_type"`
	}
	if err := json.Unmarshal(raw, &a); err != nil && len(raw) > 0 && string(raw) != "null" {
		return toolResult(true, "send_file: arguments must be an object with a path: "+err.Error())
	}
	if s.Spool == nil {
		return toolResult(true, "send_file cannot send files here: it works only when the agent runs through agentbridge (the shim sets "+SpoolEnv+")")
	}
	name, data, err := ReadFile(s.Root, a.Path, s.max())
	if err != nil {
		return toolResult(true, "send_file: "+err.Error())
	}
	if n := strings.TrimSpace(a.Filename); n != "" && !strings.ContainsAny(n, `/\`) {
		name = n
	}
	at := NewAttachment(name, strings.TrimSpace(a.MIMEType), data)
	if err := s.Spool.Put(Entry{Attachment: at, Caption: strings.TrimSpace(a.Caption)}); err != nil {
		return toolResult(true, "send_file: "+err.Error())
	}
	return toolResult(false, fmt.Sprintf("Sent %s (%s, %s) to the chat; the user sees it after the text written so far.", name, at.MIMEType, Bytes(at.Size)))
}

func toolResult(isError bool, text string) map[string]any {
	return map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}, "isError": isError}
}
