package sendfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ReadFile reads the file at path for send_file: a path relative to root
// (the agent's working directory) or an absolute one, that must resolve
// (symlinks followed) inside root, name no hidden file or directory on the
// way (.env, .git, .claude: where tokens live, and in a container the
// working directory is also HOME), and be a regular file of at most max
// bytes. It returns the file's name and bytes. Its errors are messages for
// the agent, which shows them to the user.
func ReadFile(root, path string, max int64) (string, []byte, error) {
	if strings.TrimSpace(path) == "" {
		return "", nil, errors.New("path is empty: name the file to send, relative to the working directory")
	}
	rootReal, err := filepath.EvalSymlinks(root)
	if err == nil {
		rootReal, err = filepath.Abs(rootReal)
	}
	if err != nil {
		return "", nil, fmt.Errorf("the working directory %s cannot be read: %w", root, err)
	}
	p := path
	if !filepath.IsAbs(p) {
		p = filepath.Join(rootReal, p)
	}
	real, err := filepath.EvalSymlinks(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil, fmt.Errorf("%s does not exist", path)
	}
	if err != nil {
		return "", nil, fmt.Errorf("%s cannot be read: %w", path, err)
	}
	rel, err := filepath.Rel(rootReal, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", nil, fmt.Errorf("%s is outside the working directory %s: only files in it can be sent", path, rootReal)
	}
	if rel == "." {
		return "", nil, fmt.Errorf("%s is a directory, not a file", path)
	}
	for _, c := range strings.Split(rel, string(filepath.Separator)) {
		if strings.HasPrefix(c, ".") {
			return "", nil, fmt.Errorf("%s is or is inside a hidden file or directory (%s): those are never sent", path, c)
		}
	}
	fi, err := os.Stat(real)
	switch {
	case err != nil:
		return "", nil, fmt.Errorf("%s cannot be read: %w", path, err)
	case fi.IsDir():
		return "", nil, fmt.Errorf("%s is a directory, not a file", path)
	case !fi.Mode().IsRegular():
		return "", nil, fmt.Errorf("%s is not a regular file", path)
	case fi.Size() > max:
		return "", nil, fmt.Errorf("%s is %s, over the %s limit for a file sent to the chat", path, Bytes(fi.Size()), Bytes(max))
	}
	// Opened through the root, so a directory swapped for a symlink since
	// the check cannot lead outside it.
	r, err := os.OpenRoot(rootReal)
	if err != nil {
		return "", nil, fmt.Errorf("the working directory %s cannot be read: %w", rootReal, err)
	}
	defer r.Close()
	f, err := r.Open(rel)
	if err != nil {
		return "", nil, fmt.Errorf("%s cannot be read: %w", path, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return "", nil, fmt.Errorf("%s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return "", nil, fmt.Errorf("%s cannot be read: %w", path, err)
	}
	if int64(len(data)) > max {
		return "", nil, fmt.Errorf("%s is over the %s limit for a file sent to the chat", path, Bytes(max))
	}
	return filepath.Base(real), data, nil
}

// Bytes is n for people: "812 B", "3.4 KB", "6.2 MB".
func Bytes(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1000*1000:
		return fmt.Sprintf("%.1f KB", float64(n)/1000)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1000/1000)
}
