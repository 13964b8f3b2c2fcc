// This file: files in a reply (spec/protocol.md X-FILE-1). A file shows
// where the agent sent it: the text before it is delivered first and
// closed as messages of their own, the file follows in the same thread
// or reply chain, and the text after it starts a new message. The
// presenter sends it like any of the turn's writes — one at a time, a
// rate limit waited out however often it comes, other failures retried
// a few times and then said in a line.

package stream

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/pause"
	"github.com/agentbridge/agentbridge/core/render"
)

// pendingFile is a file waiting for the text before it.
type pendingFile struct {
	at int // the output offset it came at
	f  core.File
}

// File adds a file to the reply, after the text added so far. f.Path
// must stay readable until Finish returns. Options.OnFile hears how it
// went.
func (s *Presenter) File(f core.File) {
	s.mu.Lock()
	s.files = append(s.files, pendingFile{at: s.output.Len(), f: f})
	s.mu.Unlock()
	s.poke()
}

// nextFile returns the first file not yet sent.
func (s *Presenter) nextFile() (pendingFile, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.files) == 0 {
		return pendingFile{}, false
	}
	return s.files[0], true
}

// takeFiles removes and returns the files that came at offset at.
func (s *Presenter) takeFiles(at int) []pendingFile {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for n < len(s.files) && s.files[n].at <= at {
		n++
	}
	taken := s.files[:n:n]
	s.files = s.files[n:]
	return taken
}

// fileStep makes room for the next file in r, the reply's open group: it
// closes the group where the file came (decide then delivers the text
// before it as final pieces), or, when the group shows nothing before the
// file, sends the file and opens the next group after it. It reports
// whether it sent files.
func (s *Presenter) fileStep(ctx context.Context, r *reply) bool {
	if r.win.to >= 0 {
		return false // the group closes already; the file waits for the next
	}
	pf, ok := s.nextFile()
	if !ok {
		return false
	}
	if pf.at > r.win.from || r.win.notes != "" || r.win.from == 0 && !r.win.later && s.opts.ShowThinking && s.view(time.Now()).thinking != "" {
		r.win.to, r.win.beforeFile = pf.at, true
		return false
	}
	files := s.takeFiles(pf.at)
	if r.placeholder && len(r.sent) > 0 {
		// Only the placeholder shows: it names the files that follow it
		// rather than stay "thinking…" above them.
		names := make([]string, len(files))
		for i, p := range files {
			names[i] = p.f.Name
		}
		ref := r.sent[0].ref
		err := deliver(ctx, true, func() error {
			s.writing.Lock()
			defer s.writing.Unlock()
			return s.plat.Edit(ctx, ref, core.Post{Text: "📎 " + strings.Join(names, ", "), Plain: true, Priority: core.PriorityFinal})
		})
		if err != nil {
			s.log.LogAttrs(ctx, slog.LevelWarn, "editing the placeholder before a file failed", slog.Any("err", err))
		}
	}
	s.finalize(ctx, r.sent[r.finalized:])
	var notes []string
	for _, p := range files {
		if line := s.sendFile(ctx, p.f); line != "" {
			notes = append(notes, line)
		}
	}
	out := s.view(time.Now()).output
	*r = reply{plain: r.plain, maxText: r.maxText, replied: true,
		win: window{from: pf.at, to: -1, lead: fenceAt(out, pf.at), later: true, afterFile: true, notes: strings.Join(notes, "\n\n")}}
	return true
}

// sendFile sends f and returns "" when the platform took it, else the
// line to show in its place.
func (s *Presenter) sendFile(ctx context.Context, f core.File) string {
	fs, ok := s.plat.(core.FileSender)
	if !ok {
		err := ErrNoFiles
		s.onFile(f, err)
		return "📎 " + render.EscapeMarkdown(f.Name) + " not sent: this platform does not take files"
	}
	f.ReplyTo = s.opts.ReplyTo
	err := deliverFile(ctx, func() error {
		s.writing.Lock()
		defer s.writing.Unlock()
		_, err := fs.SendFile(ctx, s.conv, f)
		return err
	})
	s.onFile(f, err)
	if err == nil {
		return ""
	}
	// Never the bytes, nor the spool path: the name and the error.
	s.log.LogAttrs(ctx, slog.LevelWarn, "sending a file failed", slog.String("file", f.Name), slog.Int64("bytes", f.Size), slog.Any("err", err))
	return "📎 " + render.EscapeMarkdown(f.Name) + " could not be sent: " + render.EscapeMarkdown(clipErr(err))
}

// ErrNoFiles is what Options.OnFile hears for a file on a platform that
// does not take files (no core.FileSender).
var ErrNoFiles = errors.New("the platform does not take files")

func (s *Presenter) onFile(f core.File, err error) {
	if s.opts.OnFile != nil {
		s.opts.OnFile(f, err)
	}
}

// clipErr is an error's text short enough for a line in the reply.
func clipErr(err error) string {
	msg := err.Error()
	if r := []rune(msg); len(r) > 200 {
		msg = string(r[:200]) + "…"
	}
	return msg
}

// deliverFile runs write, the upload of a file, until the platform takes
// it, ctx ends, or it failed oneOffTries times: a rate limit is waited
// out however often it comes (it is no failure; ctx bounds the waiting),
// other failures are retried after the pacer's backoff, except a file the
// platform refused as too large, or a conversation gone, which no retry
// mends.
func deliverFile(ctx context.Context, write func() error) error {
	pace := newPacer(0)
	fails := 0
	for {
		err := write()
		o := classify(err, attempt{plain: true}, ctx.Err())
		now := time.Now()
		pace.record(now, o)
		switch {
		case o.kind == shown:
			return nil
		case o.kind == wait:
		case o.kind == failed && !errors.Is(err, core.ErrNotFound) && !errors.Is(err, core.ErrFileTooLarge) && fails < oneOffTries-1:
			fails++
		default:
			return err
		}
		if pause.Sleep(ctx, pace.next(true).Sub(now)) != nil {
			return err
		}
	}
}
