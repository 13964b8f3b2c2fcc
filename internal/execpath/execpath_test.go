package execpath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestLook(t *testing.T) {
	dir := t.TempDir()
	noexec, bin, sub := filepath.Join(dir, "noexec"), filepath.Join(dir, "bin"), filepath.Join(dir, "sub")
	for _, d := range []string{noexec, bin, sub, filepath.Join(sub, "tool")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path string, mode os.FileMode) {
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(noexec, "tool"), 0o644)
	write(filepath.Join(bin, "tool"), 0o755)
	write(filepath.Join(noexec, "plain"), 0o644)

	// A directory and a non-executable file come first; the executable wins.
	path := sub + string(filepath.ListSeparator) + noexec + string(filepath.ListSeparator) + bin
	if got, err := Look("tool", path); err != nil || got != filepath.Join(bin, "tool") {
		t.Errorf("Look(tool) = %q, %v; want %q", got, err, filepath.Join(bin, "tool"))
	}
	// Only a non-executable file: permission denied, naming it.
	var pe *fs.PathError
	if _, err := Look("plain", path); !errors.Is(err, fs.ErrPermission) || !errors.As(err, &pe) || pe.Path != filepath.Join(noexec, "plain") {
		t.Errorf("Look(plain) error = %v, want permission denied on %s", err, filepath.Join(noexec, "plain"))
	}
	// Nowhere: not on PATH.
	if _, err := Look("missing", path); !errors.Is(err, ErrNotOnPath) {
		t.Errorf("Look(missing) error = %v, want ErrNotOnPath", err)
	}
	// Relative entries are skipped, even when the file is there.
	t.Chdir(bin)
	if _, err := Look("tool", "."+string(filepath.ListSeparator)+"bin"); !errors.Is(err, ErrNotOnPath) {
		t.Errorf("Look with a relative PATH error = %v, want ErrNotOnPath", err)
	}
	// A name with a slash is left to exec.
	if got, err := Look("./x/y", ""); err != nil || got != "./x/y" {
		t.Errorf("Look(./x/y) = %q, %v", got, err)
	}
}

func TestPathOf(t *testing.T) {
	if got := PathOf([]string{"HOME=/h", "PATH=/a", "PATHX=/no", "PATH=/b"}); got != "/b" {
		t.Errorf("PathOf = %q, want the last PATH", got)
	}
	if got := PathOf([]string{"HOME=/h"}); got != "" {
		t.Errorf("PathOf without PATH = %q", got)
	}
}
