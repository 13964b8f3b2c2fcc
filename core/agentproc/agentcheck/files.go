package agentcheck

import (
	"os"

	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/core/outfile"
)

// fileRules checks the files the agent sent back in any probe turn
// (agentbridge's extension, X-FILE-1..4) the way the bridge checks them
// for a chat: core/outfile with the per-turn defaults, file:// allowed
// inside the profile's cwd when the agent runs on this host. A turn that
// sends none leaves the rules not exercised.
func (c *checker) fileRules() {
	spool, err := os.MkdirTemp("", "agentbridge-check-files-")
	if err != nil {
		return
	}
	defer os.RemoveAll(spool)
	for _, t := range c.turns {
		check := outfile.New(outfile.Policy{
			Platform:  "the bridge",
			HostFiles: !c.p.Isolated(),
			Agent:     outfile.AccountOf(c.p),
			Roots:     []string{c.p.WorkDir(agentproc.Turn{SessionID: t.plan.sessionID})},
			Private:   []string{c.p.Path},
			Spool:     spool,
		})
		for _, e := range t.events() {
			if e.kind != agentproc.KindPartial && e.kind != agentproc.KindResult {
				continue
			}
			if _, ok := e.fields["attachments"]; !ok {
				continue
			}
			for _, a := range agentproc.Classify(t.lines[e.i].raw).Attachments {
				res := check.Check(a)
				if res.File != nil {
					os.Remove(res.File.Path)
				}
				id, status := fileRule(res.Reason)
				what := res.Line
				if what == "" {
					what = "📎 " + res.Reason
				}
				if status == Pass {
					what = "📎 " + outfile.Name(a.Filename) + " would be sent"
					if res.File != nil {
						what = "📎 " + res.File.Name + " would be sent (" + outfile.Size(res.File.Size) + ")"
					}
				}
				c.add(id, status, "%s", t.at("%s: %s", what, t.describe(e.i)))
			}
		}
	}
}

// fileRule is the rule a file's outcome speaks to (outfile's reason, ""
// when it would be sent) and its status.
func fileRule(reason string) (string, Status) {
	switch reason {
	case "", outfile.ReasonLink:
		return "X-FILE-1", Pass
	case outfile.ReasonMalformed, outfile.ReasonScheme:
		return "X-FILE-1", Fail
	case outfile.ReasonUndecodable:
		return "X-FILE-2", Fail
	case outfile.ReasonOutside, outfile.ReasonUnreadable:
		return "X-FILE-3", Fail
	}
	return "X-FILE-4", Fail // too_large, turn_files, turn_bytes
}
