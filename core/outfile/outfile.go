package outfile

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/core/render"
)

// Per-turn defaults (Policy.MaxFiles, Policy.MaxBytes).
const (
	DefaultMaxFiles = 10
	DefaultMaxBytes = 50_000_000
)

// maxLines bounds the lines one turn adds for files it refused: a flood
// of bad attachments costs the reply a few lines, then one more saying so.
const maxLines = 20

// Policy is what one turn allows.
type Policy struct {
	// Platform names the platform in lines ("Telegram"); MaxFileBytes is
	// its limit for one file (core.Limits.MaxFileBytes), 0 for none.
	Platform     string
	MaxFileBytes int64
	// MaxFiles and MaxBytes bound the files of one turn (their number and
	// their bytes together); 0 means the defaults.
	MaxFiles int
	MaxBytes int64
	// HostFiles allows file:// URLs: the agent runs on the bridge's host.
	// An isolated agent's paths name files in its container, not here.
	HostFiles bool
	// Roots are the directories a file:// URL may point into (the
	// profile's cwd, the turn's attachment directory).
	Roots []string
	// Agent, when set, is the account the agent runs as (a profile's
	// user:): a file:// file is sent only when that account could read
	// it, so a bridge running as root never sends what the agent itself
	// may not open.
	Agent *Account
	// Private are files and directories never sent even inside a root:
	// the bridge's config, store and profile files.
	Private []string
	// Spool is the directory the turn's files are copied to until they
	// are sent (created when the first file needs it, with mode 0700).
	Spool string
}

// Account is the account an agent runs as.
type Account struct {
	UID, GID uint32
	Groups   []uint32
}

// AccountOf is the account p's agent runs as (its user:), nil when it
// runs as the bridge.
func AccountOf(p *agentproc.Profile) *Account {
	if p.User == nil {
		return nil
	}
	return &Account{UID: p.User.UID, GID: p.User.GID, Groups: p.User.Groups}
}

// Reasons a file was not sent, for metrics (Result.Reason).
const (
	ReasonLink        = "link"        // http(s): shown as a link
	ReasonMalformed   = "malformed"   // the entry is not well formed
	ReasonScheme      = "scheme"      // a scheme the bridge does not take
	ReasonUndecodable = "undecodable" // a data: URL that does not decode
	ReasonOutside     = "outside"     // file:// outside the allowed places, or not allowed at all
	ReasonUnreadable  = "unreadable"  // file:// that cannot be read
	ReasonTooLarge    = "too_large"   // over the platform's limit for one file
	ReasonTurnFiles   = "turn_files"  // over the files per turn
	ReasonTurnBytes   = "turn_bytes"  // over the bytes per turn
	ReasonFailed      = "failed"      // the platform did not take it (stream's line)
)

// Reasons lists every Reason, so a metrics backend can show each at zero.
var Reasons = []string{ReasonLink, ReasonMalformed, ReasonScheme, ReasonUndecodable, ReasonOutside,
	ReasonUnreadable, ReasonTooLarge, ReasonTurnFiles, ReasonTurnBytes, ReasonFailed}

// Result is what became of one attachment: a File to send, or a Line to
// show instead (plain text, one paragraph; Markdown gives it for a chat)
// and the Reason. A Line is "" only when the turn has said enough about
// refused files already.
type Result struct {
	File   *core.File
	Line   string
	Reason string
	link   string // ReasonLink: the URL, which Markdown makes a link of
	name   string
}

// Markdown is Line for a reply in Markdown: a link is a link.
func (r Result) Markdown() string {
	if r.link != "" {
		return "📎 [" + render.EscapeMarkdown(r.name) + "](" + r.link + ")"
	}
	return render.EscapeMarkdown(r.Line)
}

// Turn checks one turn's attachments, in the order the agent sent them.
// It is not safe for concurrent use.
type Turn struct {
	p     Policy
	files int
	bytes int64
	lines int
	seq   int
}

// New returns the checker of one turn.
func New(p Policy) *Turn {
	if p.MaxFiles <= 0 {
		p.MaxFiles = DefaultMaxFiles
	}
	if p.MaxBytes <= 0 {
		p.MaxBytes = DefaultMaxBytes
	}
	return &Turn{p: p}
}

// refusal is why an attachment was not sent: what the line says after
// the file's name, and the metrics reason.
type refusal struct {
	reason, why string
}

func (r *refusal) Error() string { return r.why }

func refuse(reason, format string, args ...any) *refusal {
	return &refusal{reason: reason, why: fmt.Sprintf(format, args...)}
}

// Check checks a, spooling its bytes when it is to be sent.
func (t *Turn) Check(a agentproc.Attachment) Result {
	t.seq++
	name := displayName(a, t.seq)
	if a.Problem != "" {
		return t.line(name, refuse(ReasonMalformed, "refused: %s", a.Problem))
	}
	scheme, _, _ := strings.Cut(a.URL, ":")
	switch strings.ToLower(scheme) {
	case "http", "https":
		u, err := url.Parse(a.URL)
		if err != nil || u.Host == "" {
			return t.line(name, refuse(ReasonMalformed, "refused: not a valid link"))
		}
		target := strings.NewReplacer("(", "%28", ")", "%29", " ", "%20").Replace(u.String())
		return Result{Line: "📎 " + name + ": " + target, Reason: ReasonLink, link: target, name: name}
	case "data", "file":
	default:
		return t.line(name, refuse(ReasonScheme, "refused: the scheme %q is not one the bridge takes (data:, file:, http(s):)", clip(scheme, 20)))
	}
	if t.files >= t.p.MaxFiles {
		return t.line(name, refuse(ReasonTurnFiles, "not sent: over the limit of %d files per turn", t.p.MaxFiles))
	}
	limit, over := t.limit()
	if a.Size > limit {
		return t.line(name, over(a.Size))
	}
	f, err := t.spool(a, name, limit, over)
	if err != nil {
		var r *refusal
		if !errors.As(err, &r) {
			r = refuse(ReasonUnreadable, "could not be read")
		}
		return t.line(name, r)
	}
	t.files++
	t.bytes += f.Size
	return Result{File: f}
}

// limit returns how many bytes the next file may have, and the refusal
// of a file of n bytes over it.
func (t *Turn) limit() (int64, func(n int64) *refusal) {
	left := t.p.MaxBytes - t.bytes
	if t.p.MaxFileBytes > 0 && t.p.MaxFileBytes <= left {
		return t.p.MaxFileBytes, func(n int64) *refusal {
			return refuse(ReasonTooLarge, "is %s, over %s's %s limit", Size(n), t.p.Platform, Size(t.p.MaxFileBytes))
		}
	}
	return left, func(n int64) *refusal {
		if t.bytes == 0 {
			return refuse(ReasonTurnBytes, "is %s, over the limit of %s of files per turn", Size(n), Size(t.p.MaxBytes))
		}
		return refuse(ReasonTurnBytes, "is %s, over the %s left of the limit of %s of files per turn", Size(n), Size(left), Size(t.p.MaxBytes))
	}
}

// line is the Result of a refused attachment, bounded per turn.
func (t *Turn) line(name string, r *refusal) Result {
	t.lines++
	switch {
	case t.lines < maxLines:
		return Result{Line: "📎 " + name + " " + r.why, Reason: r.reason}
	case t.lines == maxLines:
		return Result{Line: "📎 More files were refused; not every one is named here.", Reason: r.reason}
	}
	return Result{Reason: r.reason}
}

// spool copies the attachment's bytes into the spool directory, at most
// limit of them, and returns the file to send.
func (t *Turn) spool(a agentproc.Attachment, name string, limit int64, over func(int64) *refusal) (*core.File, error) {
	src, mediaType, err := t.open(a.URL, limit, over)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	if err := os.MkdirAll(t.p.Spool, 0o700); err != nil {
		return nil, err
	}
	out, err := os.CreateTemp(t.p.Spool, "file-*")
	if err != nil {
		return nil, err
	}
	n, err := io.Copy(out, io.LimitReader(src, limit+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > limit {
		err = over(n) // n is limit+1: "over", not the size
		if st, serr := src.Stat(); serr == nil && st.size > limit {
			err = over(st.size)
		}
	}
	if err != nil {
		os.Remove(out.Name())
		return nil, err
	}
	mt := a.MIMEType
	if mt == "" {
		mt = mediaType
	}
	if mt == "" {
		mt = mime.TypeByExtension(filepath.Ext(name))
	}
	if mt == "" {
		mt = "application/octet-stream"
	}
	return &core.File{Name: name, MIME: mt, Kind: a.Kind, Size: n, Path: out.Name()}, nil
}

// source is an attachment's bytes being read.
type source interface {
	io.Reader
	Close() error
	Stat() (sourceStat, error)
}

type sourceStat struct{ size int64 }

// open opens the bytes a data: or file: URL names.
func (t *Turn) open(raw string, limit int64, over func(int64) *refusal) (source, string, error) {
	if strings.HasPrefix(strings.ToLower(raw), "data:") {
		return openData(raw[len("data:"):], limit, over)
	}
	if !t.p.HostFiles {
		return nil, "", refuse(ReasonOutside, "refused: file:// URLs are not taken from an agent that does not run on the bridge's host; send the bytes as a data: URL")
	}
	return t.openFile(raw, limit, over)
}

// displayName is the file's name as the chat shows it: the agent's
// filename, else the last element of a file:// path, else one made up
// from the kind and the media type; sanitised (Name).
func displayName(a agentproc.Attachment, seq int) string {
	name := a.Filename
	if name == "" && strings.HasPrefix(strings.ToLower(a.URL), "file:") {
		if u, err := url.Parse(a.URL); err == nil {
			name = filepath.Base(u.Path)
		}
	}
	if name = Name(name); name != "" {
		return name
	}
	kind := a.Kind
	if kind == "" || kind == agentproc.AttachFile {
		kind = "file"
	}
	ext := ""
	mt := a.MIMEType
	if mt == "" && strings.HasPrefix(strings.ToLower(a.URL), "data:") {
		mt, _, _ = strings.Cut(a.URL[len("data:"):], ";")
		mt, _, _ = strings.Cut(mt, ",")
	}
	if exts, _ := mime.ExtensionsByType(mt); len(exts) > 0 {
		ext = exts[0]
	}
	return fmt.Sprintf("%s-%d%s", Name(kind), seq, ext)
}

// maxName bounds a file name's length in bytes.
const maxName = 100

// Name sanitises a file name for a chat: its last path element only, no
// control or format characters (bidi overrides hide an extension), no
// leading dots or spaces, at most 100 bytes keeping the extension; ""
// when nothing usable is left.
func Name(name string) string {
	name = strings.ToValidUTF8(name, "")
	name = name[strings.LastIndexAny(name, `/\`)+1:]
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, name)
	name = strings.TrimLeft(strings.TrimSpace(name), ". ")
	if len(name) > maxName {
		ext := filepath.Ext(name)
		if len(ext) > 16 {
			ext = ""
		}
		stem := name[:maxName-len(ext)]
		for stem != "" && !utf8.ValidString(stem) {
			stem = stem[:len(stem)-1]
		}
		name = stem + ext
	}
	return name
}

// Size shows a byte count as people read limits: "50 MB", "10 MiB",
// "3.2 KB", "12 bytes".
func Size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1e6:
		return trimZero(float64(n)/1e6) + " MB"
	case n >= 1e3:
		return trimZero(float64(n)/1e3) + " KB"
	}
	return fmt.Sprintf("%d bytes", n)
}

func trimZero(f float64) string {
	s := fmt.Sprintf("%.1f", f)
	return strings.TrimSuffix(s, ".0")
}

func clip(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return strings.ToValidUTF8(s, "")
}
