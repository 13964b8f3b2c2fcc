// Package outfile holds what every adapter does with a file an agent
// sends (core.File) before uploading it: a name that is safe to show on a
// chat platform, and the bytes opened within the platform's upload limit.
// The bytes are only ever streamed to the platform, never logged.
package outfile

import (
	"fmt"
	"mime"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/agentbridge/agentbridge/core"
	coreoutfile "github.com/agentbridge/agentbridge/core/outfile"
)

// Name returns f's name made safe to show and to save: core's rules
// (core/outfile.Name: the last element of a path only, no control or
// format characters, no leading dot, at most 100 bytes with the extension
// kept), and for every platform the characters Windows refuses in names
// replaced, line breaks made spaces and no trailing dot or space (which
// would hide the extension once saved). A name left empty becomes "file";
// a name without an extension gets the one of its media type when it has
// a common one, so platforms that show images by their extension
// (Discord) show them.
func Name(f core.File) string {
	name := strings.Map(func(r rune) rune {
		switch {
		case unicode.IsSpace(r):
			return ' '
		case strings.ContainsRune(`:*?"<>|`, r):
			return '_'
		}
		return r
	}, f.Name)
	name = strings.TrimRight(coreoutfile.Name(name), ". ")
	ext := filepath.Ext(name)
	if len(ext) > maxExt || strings.ContainsRune(ext, ' ') || ext == name {
		ext = ""
	}
	stem := strings.TrimRight(strings.TrimSuffix(name, ext), ". ")
	if stem == "" {
		stem = "file"
	}
	if ext == "" {
		ext = extension(f.MIME)
	}
	return stem + ext
}

// maxExt is the longest extension Name treats as one.
const maxExt = 16

// common are the extensions of the media types agents send most, where
// mime.ExtensionsByType's first answer is not the usual one (".jfif").
var common = map[string]string{
	"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp",
	"application/pdf": ".pdf", "text/plain": ".txt", "text/markdown": ".md", "text/csv": ".csv",
	"application/json": ".json", "audio/mpeg": ".mp3", "audio/ogg": ".ogg", "video/mp4": ".mp4",
}

// extension returns the usual extension of media type typ, or "".
func extension(typ string) string {
	typ, _, _ = mime.ParseMediaType(typ)
	if ext, ok := common[typ]; ok {
		return ext
	}
	if typ == "" || typ == "application/octet-stream" {
		return ""
	}
	if exts, _ := mime.ExtensionsByType(typ); len(exts) > 0 {
		return exts[0]
	}
	return ""
}

// Open opens f's bytes for an upload of at most max bytes (the platform's
// limit) and returns the file and its size, measured on the file itself:
// f.Size is what core read, the file is what is sent. A file over max is
// refused before anything is sent (core.ErrFileTooLarge).
func Open(f core.File, max int64) (*os.File, int64, error) {
	file, err := os.Open(f.Path)
	if err != nil {
		return nil, 0, fmt.Errorf("open %s: %w", Name(f), err)
	}
	st, err := file.Stat()
	switch {
	case err != nil:
		file.Close()
		return nil, 0, fmt.Errorf("open %s: %w", Name(f), err)
	case !st.Mode().IsRegular():
		file.Close()
		return nil, 0, fmt.Errorf("open %s: not a regular file", Name(f))
	case max > 0 && st.Size() > max:
		file.Close()
		return nil, 0, fmt.Errorf("%s is %d bytes, over the platform's %d byte upload limit: %w", Name(f), st.Size(), max, core.ErrFileTooLarge)
	}
	return file, st.Size(), nil
}
