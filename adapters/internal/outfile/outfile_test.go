package outfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/core"
)

func TestName(t *testing.T) {
	long := strings.Repeat("é", 200)
	for _, tc := range []struct{ name, mime, want string }{
		{"chart.png", "image/png", "chart.png"},
		{"../../etc/passwd", "", "passwd"},
		{`C:\Users\me\report.pdf`, "", "report.pdf"},
		{".bashrc", "", "bashrc"},
		{"...", "text/plain", "file.txt"},
		{"", "image/png", "file.png"},
		{"chart", "image/jpeg", "chart.jpg"},
		{"invoice\u202efdp.exe", "", "invoicefdp.exe"},
		{"a\x1b[2Jb\x00c.txt", "", "a[2Jbc.txt"},
		{"line\nbreak.txt", "", "line break.txt"},
		{`what?<>|*:".txt`, "", "what_______.txt"},
		{"name. ", "", "name"},
		{"data.tar.gz", "", "data.tar.gz"},
		{long + ".txt", "", strings.Repeat("é", (100-4)/2) + ".txt"},
		{"x." + strings.Repeat("y", 40), "", "x." + strings.Repeat("y", 40)},
	} {
		got := Name(core.File{Name: tc.name, MIME: tc.mime})
		if got != tc.want {
			t.Errorf("Name(%q, %q) = %q, want %q", tc.name, tc.mime, got, tc.want)
		}
		if len(got) > 100+maxExt {
			t.Errorf("Name(%q) is %d bytes, over %d", tc.name, len(got), 100+maxExt)
		}
	}
}

func TestOpenRefusesOverLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := core.File{Name: "f.bin", Path: path, Size: 1} // Size understates it
	if _, _, err := Open(f, 9); !errors.Is(err, core.ErrFileTooLarge) || !strings.Contains(err.Error(), "over the platform's 9 byte upload limit") {
		t.Errorf("Open over the limit = %v, want a refusal", err)
	}
	file, n, err := Open(f, 10)
	if err != nil || n != 10 {
		t.Fatalf("Open at the limit = %d, %v", n, err)
	}
	file.Close()
	if _, _, err := Open(core.File{Name: "d", Path: t.TempDir()}, 10); err == nil {
		t.Error("Open of a directory succeeded")
	}
}
