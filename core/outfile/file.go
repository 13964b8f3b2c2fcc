package outfile

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// fileSource is a file:// attachment opened for reading.
type fileSource struct {
	*os.File
	size int64
}

func (f *fileSource) Stat() (sourceStat, error) { return sourceStat{size: f.size}, nil }

// openFile opens the file a file:// URL names, when it lies inside one of
// the policy's roots and not in a private place. The path is resolved
// (symlinks followed), checked, opened without following a symlink at
// its end, and the open file's own path checked again (/proc/self/fd):
// a component swapped for a symlink between the check and the open is
// caught by the second check.
func (t *Turn) openFile(raw string, limit int64, over func(int64) *refusal) (source, string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" || u.Host != "" && u.Host != "localhost" || !filepath.IsAbs(u.Path) {
		return nil, "", refuse(ReasonMalformed, "refused: not a valid file:// URL (file:///absolute/path)")
	}
	resolved, err := filepath.EvalSymlinks(filepath.Clean(u.Path))
	if err != nil {
		return nil, "", refuse(ReasonUnreadable, "refused: no such file")
	}
	if err := t.allowed(resolved); err != nil {
		return nil, "", err
	}
	f, err := os.OpenFile(resolved, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", refuse(ReasonUnreadable, "refused: it could not be opened")
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
		}
	}()
	real, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	if err != nil {
		return nil, "", t.outside()
	}
	if err := t.allowed(real); err != nil {
		return nil, "", err
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil, "", refuse(ReasonUnreadable, "refused: not a regular file")
	}
	if a := t.p.Agent; a != nil && !a.canRead(real, st) {
		return nil, "", refuse(ReasonUnreadable, "refused: the agent's own account may not read it")
	}
	if st.Size() > limit {
		return nil, "", over(st.Size())
	}
	ok = true
	return &fileSource{File: f, size: st.Size()}, "", nil
}

func (t *Turn) outside() *refusal {
	return refuse(ReasonOutside, "refused: a file:// URL must name a file in the agent's working directory or the turn's attachment directory")
}

// allowed refuses path, resolved, unless it lies inside a root and
// outside every private place. Roots and private places are resolved
// too, so a root reached through a symlink still matches.
func (t *Turn) allowed(path string) *refusal {
	path = filepath.Clean(path)
	inRoot := false
	for _, r := range t.p.Roots {
		if r != "" && within(path, resolve(r)) {
			inRoot = true
			break
		}
	}
	if !inRoot {
		return t.outside()
	}
	for _, p := range t.p.Private {
		if p != "" && within(path, resolve(p)) {
			return refuse(ReasonOutside, "refused: the bridge's own files (its config, store and profiles) are never sent")
		}
	}
	return nil
}

// resolve is path with its symlinks followed, or cleaned when it does
// not exist.
func resolve(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return filepath.Clean(path)
}

// within reports whether path is dir or lies under it (both clean).
func within(path, dir string) bool {
	if path == dir {
		return true
	}
	if !strings.HasSuffix(dir, string(filepath.Separator)) {
		dir += string(filepath.Separator)
	}
	return strings.HasPrefix(path, dir)
}

// canRead reports whether the account may read the file at path (st its
// open file's): read permission on it, search permission on every
// directory above it. Root may.
func (a *Account) canRead(path string, st os.FileInfo) bool {
	if a.UID == 0 {
		return true
	}
	if !a.may(st, 4) {
		return false
	}
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		dst, err := os.Stat(dir)
		if err != nil || !a.may(dst, 1) {
			return false
		}
		if dir == filepath.Dir(dir) {
			return true
		}
	}
}

// may reports whether the account has permission bit want (4 read, 1
// search) on the file st describes.
func (a *Account) may(st os.FileInfo, want os.FileMode) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	mode := st.Mode().Perm()
	switch {
	case sys.Uid == a.UID:
		return mode>>6&want != 0
	case sys.Gid == a.GID || slices.Contains(a.Groups, sys.Gid):
		return mode>>3&want != 0
	}
	return mode&want != 0
}
