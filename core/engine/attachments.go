package engine

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
)

// A turn's attachments: downloaded from the platform into a directory of
// the turn's own before its agent starts, handed to the agent as file://
// URLs, and removed when the turn ends.

// download fetches the message's attachments into a fresh directory and
// returns them as file:// URLs, with a note for each one it could not use,
// and the local path of each attachment of the message ("" for one not
// downloaded).
// The directory and files are the bridge's alone (0700, 0600), given to the
// profile's user when it has one, so that its agent can read them.
func (e *Engine) download(ctx context.Context, t *turn, prof *agentproc.Profile, maxBytes int64) (atts []agentproc.Attachment, notes []string, dir string, paths []string) {
	if len(t.msg.Attachments) == 0 {
		return nil, nil, "", nil
	}
	paths = make([]string, len(t.msg.Attachments))
	dl, ok := t.plat.(core.Downloader)
	if !ok {
		return nil, []string{"attachments are not supported on this platform yet; they were not passed to the agent"}, "", paths
	}
	dir, err := os.MkdirTemp(e.opts.TempDir, "agentbridge-turn-")
	if err == nil {
		err = prof.Own(dir)
	}
	if err != nil {
		return nil, []string{"could not store attachments: " + err.Error()}, dir, paths
	}
	for i, a := range t.msg.Attachments {
		name := safeName(a.Name, i)
		if a.Size > maxBytes {
			notes = append(notes, fmt.Sprintf("%s is %d bytes, over the %d byte limit; not passed to the agent", name, a.Size, maxBytes))
			continue
		}
		path := filepath.Join(dir, name)
		size, err := fetch(ctx, dl, a, path, maxBytes)
		if err == nil {
			err = prof.Own(path)
		}
		if err != nil {
			notes = append(notes, fmt.Sprintf("could not download %s: %v", name, err))
			continue
		}
		paths[i] = path
		kind := a.Kind
		if kind == "" {
			kind = "file"
		}
		atts = append(atts, agentproc.Attachment{
			Kind: kind,
			URL:  (&url.URL{Scheme: "file", Path: path}).String(),
			Name: a.Name, MIME: a.MIME, Size: size,
		})
	}
	return atts, notes, dir, paths
}

func fetch(ctx context.Context, dl core.Downloader, a core.Attachment, path string, maxBytes int64) (int64, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, err
	}
	err = dl.Download(ctx, a, f, maxBytes)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return 0, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// safeName keeps a platform file name usable as one path element.
func safeName(name string, i int) string {
	name = filepath.Base(strings.ReplaceAll(name, "\\", "/"))
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, name)
	if name == "" || name == "." || name == ".." || name == "/" {
		name = "attachment"
	}
	if len(name) > 100 {
		name = name[len(name)-100:]
	}
	return fmt.Sprintf("%02d-%s", i+1, name)
}
