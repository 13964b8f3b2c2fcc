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
	"unicode/utf8"

	"github.com/agentbridge/agentbridge/core"
)

// MaxName is the longest name Name returns, in bytes: well under the 255
// bytes file systems allow, which is where downloaded files end up.
const MaxName = 128

// maxExt is the longest extension Name keeps apart when it shortens a name.
const maxExt = 16

// Name returns f's name made safe to show and to save: the last element of
// a path only, without control or format characters (a right-to-left
// override could disguise the extension), without the characters Windows
// refuses in names, with no leading dot (a hidden file) or trailing dot or
// space, at most MaxName bytes with its extension kept. A name left empty
// becomes "file"; a name without an extension gets the one of its media
// type when it has a common one, so platforms that show images by their
// extension (Discord) show them.
func Name(f core.File) string {
	name := strings.ReplaceAll(f.Name, `\`, "/")
	name = name[strings.LastIndexByte(name, '/')+1:]
	name = strings.Map(func(r rune) rune {
		switch {
		case unicode.IsSpace(r): // a line break too
			return ' '
		case r == utf8.RuneError, unicode.IsControl(r), unicode.In(r, unicode.Cf):
			return -1
		case strings.ContainsRune(`:*?"<>|`, r):
			return '_'
		}
		return r
	}, name)
	name = strings.Trim(name, ". ")
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
	for len(stem)+len(ext) > MaxName {
		_, size := utf8.DecodeLastRuneInString(stem)
		stem = stem[:len(stem)-size]
	}
	return strings.TrimRight(stem, ". ") + ext
}

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
// refused before anything is sent.
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
		return nil, 0, fmt.Errorf("%s is %d bytes, over the platform's %d byte upload limit", Name(f), st.Size(), max)
	}
	return file, st.Size(), nil
}
