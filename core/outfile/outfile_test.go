package outfile

import (
	"encoding/base64"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
)

func fileURL(p string) string { return (&url.URL{Scheme: "file", Path: p}).String() }

// setup is a turn whose agent works in cwd (with a private config.yaml in
// it), with a secret file outside cwd.
func setup(t *testing.T, p Policy) (*Turn, string, string) {
	t.Helper()
	base := t.TempDir()
	cwd := filepath.Join(base, "cwd")
	if err := os.MkdirAll(filepath.Join(cwd, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(path, s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(cwd, "notes.txt"), "notes")
	write(filepath.Join(cwd, "sub", "deep.txt"), "deep")
	write(filepath.Join(cwd, "config.yaml"), "token: secret")
	secret := filepath.Join(base, "secret.txt")
	write(secret, "secret")
	if err := os.Symlink(secret, filepath.Join(cwd, "escape.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(cwd, "notes.txt"), filepath.Join(cwd, "inside-link.txt")); err != nil {
		t.Fatal(err)
	}
	p.HostFiles = true
	p.Roots = []string{cwd}
	p.Private = append(p.Private, filepath.Join(cwd, "config.yaml"))
	p.Spool = filepath.Join(base, "spool")
	return New(p), cwd, base
}

func TestCheck(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nfake")
	tests := []struct {
		name   string
		a      agentproc.Attachment
		reason string // "" = sent
		line   string // a part of the line
		bytes  string // what was spooled, when sent
	}{
		{"data base64", agentproc.Attachment{Kind: "image", URL: "data:image/png;base64," + base64.StdEncoding.EncodeToString(png), Filename: "chart.png"}, "", "", string(png)},
		{"data unpadded url-safe", agentproc.Attachment{Kind: "file", URL: "data:;base64," + base64.RawURLEncoding.EncodeToString([]byte("hi?>>")), Filename: "a"}, "", "", "hi?>>"},
		{"data percent", agentproc.Attachment{Kind: "file", URL: "data:text/plain,hello%20world%0A"}, "", "", "hello world\n"},
		{"data bad base64", agentproc.Attachment{Kind: "file", URL: "data:;base64,@@@@", Filename: "x.bin"}, ReasonUndecodable, "x.bin refused: its data: URL is not valid base64", ""},
		{"data bad percent", agentproc.Attachment{Kind: "file", URL: "data:,50%", Filename: "x.txt"}, ReasonUndecodable, "malformed % escape", ""},
		{"data no comma", agentproc.Attachment{Kind: "file", URL: "data:abc"}, ReasonUndecodable, "no comma", ""},
		{"file inside", agentproc.Attachment{Kind: "file", URL: "FILE"}, "", "", "notes"},
		{"file in sub", agentproc.Attachment{Kind: "file", URL: "SUB"}, "", "", "deep"},
		{"symlink inside", agentproc.Attachment{Kind: "file", URL: "INLINK"}, "", "", "notes"},
		{"symlink escaping", agentproc.Attachment{Kind: "file", URL: "ESCAPE"}, ReasonOutside, "escape.txt refused: a file:// URL must name a file in the agent's working directory", ""},
		{"dot-dot", agentproc.Attachment{Kind: "file", URL: "DOTDOT"}, ReasonOutside, "secret.txt refused", ""},
		{"private in cwd", agentproc.Attachment{Kind: "file", URL: "CONFIG"}, ReasonOutside, "config.yaml refused: the bridge's own files", ""},
		{"directory", agentproc.Attachment{Kind: "file", URL: "CWD"}, ReasonUnreadable, "not a regular file", ""},
		{"missing", agentproc.Attachment{Kind: "file", URL: "MISSING"}, ReasonUnreadable, "no such file", ""},
		{"file host", agentproc.Attachment{Kind: "file", URL: "file://example.com/etc/passwd"}, ReasonMalformed, "not a valid file:// URL", ""},
		{"http", agentproc.Attachment{Kind: "file", URL: "https://example.com/r (1).pdf", Filename: "r.pdf"}, ReasonLink, "📎 r.pdf: https://example.com/r%20%281%29.pdf", ""},
		{"ftp", agentproc.Attachment{Kind: "file", URL: "ftp://example.com/x", Filename: "x"}, ReasonScheme, `x refused: the scheme "ftp" is not one the bridge takes`, ""},
		{"malformed", agentproc.Attachment{Problem: "url is missing"}, ReasonMalformed, "file-1 refused: url is missing", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			turn, cwd, base := setup(t, Policy{Platform: "Telegram", MaxFileBytes: 50e6})
			repl := strings.NewReplacer("FILE", fileURL(filepath.Join(cwd, "notes.txt")), "SUB", fileURL(filepath.Join(cwd, "sub", "deep.txt")),
				"INLINK", fileURL(filepath.Join(cwd, "inside-link.txt")), "ESCAPE", fileURL(filepath.Join(cwd, "escape.txt")),
				"DOTDOT", "file://"+cwd+"/sub/../../secret.txt", "CONFIG", fileURL(filepath.Join(cwd, "config.yaml")),
				"CWD", fileURL(cwd), "MISSING", fileURL(filepath.Join(cwd, "nope")))
			if !strings.HasPrefix(tt.a.URL, "data:") && !strings.Contains(tt.a.URL, "://") {
				tt.a.URL = repl.Replace(tt.a.URL)
			}
			r := turn.Check(tt.a)
			if r.Reason != tt.reason || !strings.Contains(r.Line, tt.line) {
				t.Fatalf("Check(%s) = reason %q line %q, want %q with %q", tt.a.URL, r.Reason, r.Line, tt.reason, tt.line)
			}
			if tt.reason == ReasonLink && r.Markdown() != "📎 [r\\.pdf](https://example.com/r%20%281%29.pdf)" {
				t.Errorf("link as Markdown: %q", r.Markdown())
			}
			if tt.reason != "" {
				if r.File != nil || r.Line == "" {
					t.Fatalf("refused but File %+v, line %q", r.File, r.Line)
				}
				if strings.Contains(r.Line, "secret") && tt.reason != ReasonOutside {
					t.Fatalf("line shows secret bytes: %q", r.Line)
				}
				entries, _ := os.ReadDir(filepath.Join(base, "spool"))
				if len(entries) != 0 {
					t.Fatalf("a refused file left %d spooled files", len(entries))
				}
				return
			}
			if r.File == nil {
				t.Fatalf("not sent: %q", r.Line)
			}
			got, err := os.ReadFile(r.File.Path)
			if err != nil || string(got) != tt.bytes || r.File.Size != int64(len(tt.bytes)) {
				t.Fatalf("spooled %q (%d, %v), want %q", got, r.File.Size, err, tt.bytes)
			}
			if !strings.HasPrefix(r.File.Path, filepath.Join(base, "spool")) {
				t.Fatalf("spooled at %s, not in the spool", r.File.Path)
			}
		})
	}
}

// TestCheckLimits: the platform's limit for one file, the bytes and files
// of a turn, each a line naming the file and the limit.
func TestCheckLimits(t *testing.T) {
	data := func(n int) string { return "data:;base64," + base64.StdEncoding.EncodeToString(make([]byte, n)) }
	turn, _, _ := setup(t, Policy{Platform: "Telegram", MaxFileBytes: 1000, MaxBytes: 1500, MaxFiles: 3})
	check := func(a agentproc.Attachment) Result {
		return turn.Check(a)
	}
	r := check(agentproc.Attachment{Kind: "file", URL: data(1200), Filename: "report.pdf"})
	if want := "📎 report.pdf is 1.2 KB, over Telegram's 1 KB limit"; r.Line != want || r.Reason != ReasonTooLarge {
		t.Errorf("over the platform: %q %q, want %q", r.Line, r.Reason, want)
	}
	r = turn.Check(agentproc.Attachment{Kind: "file", URL: data(1200), Filename: "report.pdf", Size: 10}) // a size that lies
	if r.Reason != ReasonTooLarge {
		t.Errorf("a lying size: %q %q", r.Line, r.Reason)
	}
	if r := turn.Check(agentproc.Attachment{Kind: "file", URL: data(900), Filename: "a"}); r.File == nil {
		t.Fatalf("a: %q", r.Line)
	}
	r = check(agentproc.Attachment{Kind: "file", URL: data(700), Filename: "b"})
	if want := "📎 b is 700 bytes, over the 600 bytes left of the limit of 1.5 KB of files per turn"; r.Line != want || r.Reason != ReasonTurnBytes {
		t.Errorf("over the turn's bytes: %q, want %q", r.Line, want)
	}
	for _, n := range []string{"c", "d"} {
		if r := turn.Check(agentproc.Attachment{Kind: "file", URL: data(1), Filename: n}); r.File == nil {
			t.Fatalf("%s: %q", n, r.Line)
		}
	}
	r = check(agentproc.Attachment{Kind: "file", URL: data(1), Filename: "e"})
	if want := "📎 e not sent: over the limit of 3 files per turn"; r.Line != want || r.Reason != ReasonTurnFiles {
		t.Errorf("over the turn's files: %q, want %q", r.Line, want)
	}
	// A flood says so a bounded number of times.
	lines := 0
	for range 100 {
		if r := turn.Check(agentproc.Attachment{Kind: "file", URL: data(1)}); r.Line != "" {
			lines++
		}
	}
	if lines > maxLines {
		t.Errorf("a flood of 100 refused files made %d lines", lines)
	}
}

// TestCheckIsolated: an agent that does not run on the bridge's host
// names paths in its container; file:// is refused, data: still goes.
func TestCheckIsolated(t *testing.T) {
	turn, cwd, _ := setup(t, Policy{})
	turn.p.HostFiles = false
	r := turn.Check(agentproc.Attachment{Kind: "file", URL: fileURL(filepath.Join(cwd, "notes.txt"))})
	if r.Reason != ReasonOutside || !strings.Contains(r.Line, "data: URL") {
		t.Errorf("file:// from an isolated agent: %q %q", r.Reason, r.Line)
	}
	if r := turn.Check(agentproc.Attachment{Kind: "file", URL: "data:,x"}); r.File == nil {
		t.Errorf("data: from an isolated agent: %q", r.Line)
	}
}

func TestName(t *testing.T) {
	for in, want := range map[string]string{
		"report.pdf":                     "report.pdf",
		"../../etc/passwd":               "passwd",
		`C:\Users\x\a.txt`:               "a.txt",
		"evil\u202Etxt.exe":              "eviltxt.exe",
		"a\x00b\nc.txt":                  "abc.txt",
		"..":                             "",
		" .hidden":                       "hidden",
		strings.Repeat("é", 80) + ".png": strings.Repeat("é", 48) + ".png",
	} {
		if got := Name(in); got != want {
			t.Errorf("Name(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSaveNeverOverwrites: a second file of a name gets -1, a third -2;
// the first keeps its bytes, and a name with a path stays in the dir.
func TestSaveNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(t.TempDir(), "src")
	var paths []string
	for _, data := range []string{"one", "two", "three"} {
		if err := os.WriteFile(src, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := Save(dir, core.File{Name: "../chart.png", Path: src})
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	for i, want := range []string{"chart.png", "chart-1.png", "chart-2.png"} {
		if paths[i] != filepath.Join(dir, want) {
			t.Errorf("save %d went to %s, want %s", i, paths[i], want)
		}
	}
	if b, _ := os.ReadFile(paths[0]); string(b) != "one" {
		t.Errorf("the first file now holds %q", b)
	}
}

// TestCheckAgentAccount: an agent that runs as another account (a
// profile's user:) gets no file:// file that account could not read
// itself, though the bridge could.
func TestCheckAgentAccount(t *testing.T) {
	turn, cwd, _ := setup(t, Policy{})
	me := uint32(os.Getuid())
	other := &Account{UID: me + 1000, GID: uint32(os.Getgid()) + 1000}
	private := filepath.Join(cwd, "private.txt")
	if err := os.WriteFile(private, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	turn.p.Agent = other
	if r := turn.Check(agentproc.Attachment{Kind: "file", URL: fileURL(private)}); r.Reason != ReasonUnreadable {
		t.Errorf("a 0600 file of the bridge's sent for another account: %q %q", r.Reason, r.Line)
	}
	turn.p.Agent = &Account{UID: me, GID: uint32(os.Getgid())}
	if r := turn.Check(agentproc.Attachment{Kind: "file", URL: fileURL(private)}); r.File == nil {
		t.Errorf("the agent's own file: %q", r.Line)
	}
}
