// Package execpath finds a command on a PATH that is not the process's own:
// the one an agent or a wrapped CLI will run with. core/agentproc and the
// profile shims share its rule.
package execpath

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrNotOnPath marks a bare command name that is on no PATH directory.
var ErrNotOnPath = errors.New("not found on PATH")

// Look finds name on path (a PATH value) the way the child's exec will: a
// name with a slash is returned as it is; a bare name is the first
// executable regular file of that name in an absolute PATH directory.
// Relative entries are skipped, as os/exec does since Go 1.19, so "." on
// PATH cannot pick up a stray binary. When only non-executable files (or
// directories) of that name exist the error is the first one's
// fs.ErrPermission; when none exists it wraps ErrNotOnPath. Both are
// *fs.PathError with Op "exec".
func Look(name, path string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	var firstErr error
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		full := filepath.Join(dir, name)
		fi, err := os.Stat(full)
		if err != nil {
			continue
		}
		if fi.IsDir() || fi.Mode()&0o111 == 0 {
			if firstErr == nil {
				firstErr = &fs.PathError{Op: "exec", Path: full, Err: fs.ErrPermission}
			}
			continue
		}
		return full, nil
	}
	if firstErr != nil {
		return "", firstErr
	}
	return "", &fs.PathError{Op: "exec", Path: name, Err: ErrNotOnPath}
}

// PathOf returns the PATH of an environment list ("" when unset); the last
// setting wins, as in os/exec.
func PathOf(environ []string) string {
	path := ""
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	return path
}
