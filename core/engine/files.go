package engine

import (
	"context"
	"errors"
	"os"
	"strings"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/core/outfile"
	"github.com/agentbridge/agentbridge/core/stream"
)

// Files an agent sends back (spec/protocol.md X-FILE-1): each is checked
// by core/outfile as it comes, spooled to a directory of the turn's own
// (removed when the turn ends), and handed to the presenter, which shows
// it where it came; what does not pass becomes a line in the reply.

// files checks the attachments of one of the agent's events and hands
// them to the reply, in order.
func (r *turnRun) files(ctx context.Context, atts []agentproc.Attachment) {
	if r.outfiles == nil {
		r.outfiles = r.filePolicy(ctx)
	}
	plat := r.t.plat.Name()
	for _, a := range atts {
		res := r.outfiles.Check(a)
		if res.File != nil {
			r.pres.File(*res.File)
			continue
		}
		r.e.opts.Observer.File(plat, res.Reason)
		r.log.InfoContext(ctx, "agent's file not sent", "reason", res.Reason, "file", outfile.Name(a.Filename))
		if res.Line != "" {
			// A paragraph of its own, wherever the agent's text stands.
			r.pres.Partial(core.RoleOutput, "\n\n"+res.Markdown()+"\n\n")
		}
	}
}

// filePolicy is the turn's outfile checker: the platform's limit for one
// file, the configured per-turn limits, and where a file:// URL may
// point — only for an agent that runs on the bridge's host.
func (r *turnRun) filePolicy(ctx context.Context) *outfile.Turn {
	e := r.e
	spool, err := os.MkdirTemp(e.opts.TempDir, "agentbridge-out-")
	if err != nil {
		r.log.ErrorContext(ctx, "could not make the turn's file spool", "err", err)
		spool = "" // every file then fails to spool, each with its line
	} else {
		r.undo = append(r.undo, func() { os.RemoveAll(spool) })
	}
	private := append([]string(nil), e.opts.Private...)
	for _, p := range r.s.Profiles {
		if p.Path != "" {
			private = append(private, p.Path)
		}
	}
	roots := []string{r.workDir}
	if r.inDir != "" {
		roots = append(roots, r.inDir)
	}
	name := r.t.plat.Name()
	return outfile.New(outfile.Policy{
		Agent:        outfile.AccountOf(r.prof),
		Platform:     platformTitle(name),
		MaxFileBytes: r.t.plat.Limits().MaxFileBytes,
		MaxFiles:     r.s.Files.PerTurn,
		MaxBytes:     r.s.Files.BytesPerTurn,
		HostFiles:    !r.prof.Isolated(),
		Roots:        roots,
		Private:      private,
		Spool:        spool,
	})
}

// fileSent counts a file the presenter sent, or could not send.
func (r *turnRun) fileSent(_ core.File, err error) {
	result := FileSent
	switch {
	case errors.Is(err, stream.ErrNoFiles):
		result = FileUnsupported
	case err != nil:
		result = outfile.ReasonFailed
	}
	r.e.opts.Observer.File(r.t.plat.Name(), result)
}

// platformTitle is a platform's name as a line in the reply says it.
func platformTitle(name string) string {
	if name == "" {
		return "the platform"
	}
	return strings.ToUpper(name[:1]) + name[1:]
}
