package sendfile

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentbridge/agentbridge/core/agentproc"
)

var pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR fake png body")

// session drives a Server through the MCP stdio transport: each request
// line in, its response line (if any) out.
type session struct {
	t   *testing.T
	in  *io.PipeWriter
	out *bufio.Reader
	end chan error
}

func newSession(t *testing.T, s Server) *session {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	se := &session{t: t, in: inW, out: bufio.NewReader(outR), end: make(chan error, 1)}
	go func() {
		err := s.Serve(context.Background(), inR, outW)
		outW.Close()
		se.end <- err
	}()
	t.Cleanup(func() {
		inW.Close()
		if err := <-se.end; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return se
}

func (se *session) send(line string) {
	se.t.Helper()
	if _, err := io.WriteString(se.in, line+"\n"); err != nil {
		se.t.Fatal(err)
	}
}

func (se *session) call(line string) map[string]any {
	se.t.Helper()
	se.send(line)
	b, err := se.out.ReadBytes('\n')
	if err != nil {
		se.t.Fatalf("no response to %s: %v", line, err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		se.t.Fatalf("response %q: %v", b, err)
	}
	if m["jsonrpc"] != "2.0" {
		se.t.Errorf("response %s lacks jsonrpc 2.0", b)
	}
	return m
}

func result(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	r, ok := m["result"].(map[string]any)
	if !ok {
		t.Fatalf("no result: %v", m)
	}
	return r
}

func toolText(t *testing.T, m map[string]any) (string, bool) {
	t.Helper()
	r := result(t, m)
	c := r["content"].([]any)[0].(map[string]any)
	return c["text"].(string), r["isError"] == true
}

// TestHandshake: initialize answers the client's protocol version when
// the server speaks it and its newest otherwise (MCP lifecycle, version
// negotiation); notifications get no answer; ping, tools/list and unknown
// methods are answered by id.
func TestHandshake(t *testing.T) {
	se := newSession(t, Server{Root: t.TempDir()})
	r := result(t, se.call(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`))
	if r["protocolVersion"] != "2025-06-18" {
		t.Errorf("negotiated %v, want the client's 2025-06-18", r["protocolVersion"])
	}
	if _, ok := r["capabilities"].(map[string]any)["tools"]; !ok {
		t.Errorf("capabilities %v lack tools", r["capabilities"])
	}
	se.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	r = result(t, se.call(`{"jsonrpc":"2.0","id":"two","method":"initialize","params":{"protocolVersion":"2099-01-01"}}`))
	if r["protocolVersion"] != protocolVersions[0] {
		t.Errorf("an unknown version negotiated %v, want the newest, %s", r["protocolVersion"], protocolVersions[0])
	}
	if m := se.call(`{"jsonrpc":"2.0","id":3,"method":"ping"}`); m["id"] != float64(3) || m["result"] == nil {
		t.Errorf("ping: %v", m)
	}
	tools := result(t, se.call(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`))["tools"].([]any)
	if len(tools) != 1 || tools[0].(map[string]any)["name"] != "send_file" {
		t.Fatalf("tools/list: %v", tools)
	}
	schema := tools[0].(map[string]any)["inputSchema"].(map[string]any)
	if schema["type"] != "object" || schema["required"].([]any)[0] != "path" {
		t.Errorf("send_file schema %v", schema)
	}
	if m := se.call(`{"jsonrpc":"2.0","id":5,"method":"resources/list"}`); m["error"].(map[string]any)["code"] != float64(errNoMethod) {
		t.Errorf("unknown method: %v", m)
	}
	if m := se.call(`not json`); m["error"].(map[string]any)["code"] != float64(errParse) {
		t.Errorf("parse error: %v", m)
	}
	if m := se.call(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"rm_rf","arguments":{}}}`); m["error"] == nil {
		t.Errorf("unknown tool: %v", m)
	}
}

// TestSendFileSpools: a sent file lands in the spool as a data: URL with
// its bytes, kind, name, media type and caption, and the spool hands each
// entry out once, in the order sent.
func TestSendFileSpools(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "chart.png"), pngBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "out"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "out", "notes.txt"), []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sp, err := NewSpool()
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Remove()
	if fi, err := os.Stat(sp.Dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("spool %v (%v), want a 0700 directory", fi, err)
	}
	se := newSession(t, Server{Root: root, Spool: sp})
	text, isErr := toolText(t, se.call(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_file","arguments":{"path":"chart.png","caption":"Sales"}}}`))
	if isErr || !strings.Contains(text, "chart.png") {
		t.Fatalf("send chart.png: %q (error %v)", text, isErr)
	}
	text, isErr = toolText(t, se.call(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"send_file","arguments":{"path":"`+filepath.Join(root, "out", "notes.txt")+`","filename":"n.txt"}}}`))
	if isErr {
		t.Fatalf("send by absolute path: %q", text)
	}
	got, err := sp.Take()
	if err != nil || len(got) != 2 {
		t.Fatalf("Take = %v, %v; want 2 entries", got, err)
	}
	a := got[0].Attachment
	if a.Kind != "image" || a.MIMEType != "image/png" || a.Filename != "chart.png" || a.Size != int64(len(pngBytes)) || got[0].Caption != "Sales" {
		t.Errorf("first entry %+v, caption %q", a, got[0].Caption)
	}
	if a.URL != "data:image/png;base64,"+base64.StdEncoding.EncodeToString(pngBytes) {
		t.Errorf("first entry's URL %.60s… does not carry the file's bytes", a.URL)
	}
	if b := got[1].Attachment; b.Kind != "file" || b.Filename != "n.txt" || !strings.HasPrefix(b.MIMEType, "text/plain") {
		t.Errorf("second entry %+v", b)
	}
	if again, _ := sp.Take(); len(again) != 0 {
		t.Errorf("entries handed out twice: %v", again)
	}
}

// TestSendFileRefuses: what the tool must not send — a path escaping the
// working directory (.. or a symlink), hidden files where tokens live,
// directories, non-regular files, files over the limit, nothing at all —
// is an error result naming why, and nothing reaches the spool.
func TestSendFileRefuses(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	write := func(p string, b []byte) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(outside, "secret.txt"), []byte("token"))
	write(filepath.Join(root, ".env"), []byte("API_KEY=x"))
	write(filepath.Join(root, ".claude", "credentials.json"), []byte("{}"))
	write(filepath.Join(root, "big.bin"), bytes.Repeat([]byte("x"), 101))
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, ".env"), filepath.Join(root, "env.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	sp, err := NewSpool()
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Remove()
	se := newSession(t, Server{Root: root, Spool: sp, Max: 100})
	for path, want := range map[string]string{
		"../" + filepath.Base(outside) + "/secret.txt": "outside the working directory",
		filepath.Join(outside, "secret.txt"):           "outside the working directory",
		"link.txt":                                     "outside the working directory",
		".env":                                         "hidden",
		"env.txt":                                      "hidden",
		".claude/credentials.json":                     "hidden",
		"dir":                                          "directory",
		".":                                            "directory",
		"fifo":                                         "not a regular file",
		"big.bin":                                      "over the 100 B limit",
		"missing.png":                                  "does not exist",
		"":                                             "path is empty",
	} {
		args, _ := json.Marshal(map[string]any{"path": path})
		text, isErr := toolText(t, se.call(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_file","arguments":`+string(args)+`}}`))
		if !isErr || !strings.Contains(text, want) {
			t.Errorf("send_file %q: %q (error %v), want an error saying %q", path, text, isErr, want)
		}
	}
	if got, _ := sp.Take(); len(got) != 0 {
		t.Errorf("refused files reached the spool: %d entries", len(got))
	}
	// Not started by a shim: no spool, a clear error.
	write(filepath.Join(root, "ok.txt"), []byte("ok"))
	se2 := newSession(t, Server{Root: root})
	if text, isErr := toolText(t, se2.call(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"send_file","arguments":{"path":"ok.txt"}}}`)); !isErr || !strings.Contains(text, SpoolEnv) {
		t.Errorf("without a spool: %q (error %v)", text, isErr)
	}
}

// TestMaxBytesFitsALine: the largest file, as a data: URL in an event,
// stays under the bridge's stdout line limit.
func TestMaxBytesFitsALine(t *testing.T) {
	ev, _ := json.Marshal(map[string]any{"type": "partial", "text": "", "attachments": []any{NewAttachment(strings.Repeat("n", 255), "application/octet-stream", make([]byte, MaxBytes))}})
	if len(ev) > agentproc.MaxLineBytes {
		t.Errorf("an event with a %d-byte file is %d bytes, over the line limit", MaxBytes, len(ev))
	}
}
