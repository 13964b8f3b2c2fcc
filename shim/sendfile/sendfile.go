// Package sendfile is the send_file tool agentbridge offers agent CLIs: a
// minimal MCP stdio server (`agentbridge mcp`, which the shims register
// through each CLI's own MCP configuration) that reads a file where the
// agent runs and hands it to the shim through a spool directory, and the
// spool the shim empties into the attachments of its next event.
//
// The bytes travel as data: URLs on the shim's stdout, so this works
// unchanged inside isolated containers and pods.
package sendfile

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge/core/agentproc"
)

// ServerName is the name the shims register the MCP server under, and
// ToolName its one tool: CLIs call it mcp__agentbridge__send_file (Claude
// Code, Qwen Code, Codex) or send_file (Gemini CLI).
const (
	ServerName = "agentbridge"
	ToolName   = "send_file"
)

// SpoolEnv names the variable, in the CLI's environment and so in the MCP
// server's, that holds the spool directory; RootEnv the directory files
// are sent from (the agent's working directory).
const (
	SpoolEnv = "AGENTBRIDGE_SEND_FILE_SPOOL"
	RootEnv  = "AGENTBRIDGE_SEND_FILE_ROOT"
)

// MaxBytes is the largest file send_file takes: what fits, base64-encoded
// in a data: URL, in one stdout line the bridge reads (D-LINE-1), with room
// for the rest of the event.
const MaxBytes = (agentproc.MaxLineBytes - 64<<10) / 4 * 3

// Attachment is one element of a partial's or result's attachments, the
// bridge's extension to AgentProc 0.4 (spec/protocol.md).
type Attachment struct {
	Kind     string `json:"kind"` // image, file, audio or video
	URL      string `json:"url"`  // data:<mime>;base64,…
	Filename string `json:"filename,omitempty"`
	MIMEType string `json:"mime_type,omitempty"`
	Size     int64  `json:"size,omitempty"`
}

// NewAttachment is data as an attachment named name; mimeType "" is
// guessed from the name, then from the bytes.
func NewAttachment(name, mimeType string, data []byte) Attachment {
	if mimeType == "" {
		mimeType = mime.TypeByExtension(strings.ToLower(filepath.Ext(name)))
	}
	if mimeType == "" {
		mimeType = http.DetectContentType(data)
	}
	bare, _, _ := strings.Cut(mimeType, ";")
	bare = strings.TrimSpace(bare)
	return Attachment{Kind: Kind(bare), URL: "data:" + bare + ";base64," + base64.StdEncoding.EncodeToString(data),
		Filename: name, MIMEType: bare, Size: int64(len(data))}
}

// Kind is the attachment kind of a media type. SVG is a file: no platform
// shows it as a picture.
func Kind(mimeType string) string {
	switch major, _, _ := strings.Cut(mimeType, "/"); {
	case mimeType == "image/svg+xml":
		return "file"
	case major == "image", major == "audio", major == "video":
		return major
	}
	return "file"
}

// Entry is one file in the spool: the attachment and the caption the
// agent gave it.
type Entry struct {
	Attachment Attachment `json:"attachment"`
	Caption    string     `json:"caption,omitempty"`
}

// Spool is the private directory (0700) a shim reads the files its CLI's
// send_file calls put there. Entries are written whole (a temporary name,
// then a rename), so a reader never sees half a file.
type Spool struct{ Dir string }

// NewSpool creates a spool in the temporary directory.
func NewSpool() (*Spool, error) {
	dir, err := os.MkdirTemp("", "agentbridge-files-")
	if err != nil {
		return nil, fmt.Errorf("send_file spool: %w", err)
	}
	return &Spool{Dir: dir}, nil
}

// Remove deletes the spool and whatever is left in it.
func (s *Spool) Remove() error { return os.RemoveAll(s.Dir) }

// Put adds e to the spool.
func (s *Spool) Put(e Entry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("send_file spool: %w", err)
	}
	var r [6]byte
	_, _ = rand.Read(r[:])
	// Names sort in the order the files were sent; a leading dot marks
	// what is not (yet) an entry.
	name := fmt.Sprintf("%020d-%s.json", time.Now().UnixNano(), hex.EncodeToString(r[:]))
	tmp, err := os.CreateTemp(s.Dir, ".put-")
	if err != nil {
		return fmt.Errorf("send_file spool: %w", err)
	}
	_, werr := tmp.Write(b)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), filepath.Join(s.Dir, name))
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("send_file spool: %w", werr)
	}
	return nil
}

// Take removes and returns the spool's entries, oldest first. An entry
// that cannot be read is dropped and reported in the error, after the
// others.
func (s *Spool) Take() ([]Entry, error) {
	des, err := os.ReadDir(s.Dir) // sorted by name: by time sent
	if err != nil {
		return nil, fmt.Errorf("send_file spool: %w", err)
	}
	var out []Entry
	var errs []error
	for _, de := range des {
		name := de.Name()
		if strings.HasPrefix(name, ".") || !de.Type().IsRegular() {
			continue
		}
		p := filepath.Join(s.Dir, name)
		b, err := os.ReadFile(p)
		_ = os.Remove(p)
		var e Entry
		if err == nil {
			err = json.Unmarshal(b, &e)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("send_file spool entry %s: %w", name, err))
			continue
		}
		out = append(out, e)
	}
	return out, errors.Join(errs...)
}
