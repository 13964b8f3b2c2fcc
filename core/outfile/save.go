package outfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbridge/agentbridge/core"
)

// Save copies f's bytes into dir under its sanitised name, never over an
// existing file: chart.png, then chart-1.png, chart-2.png… It returns the
// path it wrote. The terminal's `chat` and `run` keep an agent's files
// this way.
func Save(dir string, f core.File) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("save %s: %w", f.Name, err)
	}
	name := Name(f.Name)
	if name == "" {
		name = "file"
	}
	ext := filepath.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	src, err := os.Open(f.Path)
	if err != nil {
		return "", fmt.Errorf("save %s: %w", name, err)
	}
	defer src.Close()
	for i := 0; i < 10000; i++ {
		candidate := name
		if i > 0 {
			candidate = fmt.Sprintf("%s-%d%s", stem, i, ext)
		}
		path := filepath.Join(dir, candidate)
		out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("save %s: %w", name, err)
		}
		_, err = io.Copy(out, src)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
			return "", fmt.Errorf("save %s: %w", name, err)
		}
		return path, nil
	}
	return "", fmt.Errorf("save %s: too many files of that name in %s", name, dir)
}
