package agentcheck

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge/core/agentproc"
)

// DefaultMessage is the message of the ordinary probe turns when the caller
// gives none.
const DefaultMessage = "Say hello in one short sentence."

// DefaultTurnTimeout bounds each probe turn when the caller sets no bound
// and the profile's timeout_secs is longer.
const DefaultTurnTimeout = 30 * time.Second

// Probe timings. answerDelay is how long the first turn holds each
// permission answer back, to see whether the agent waits for it;
// minHoldStdin is the least time stdin stays open in the P-STDIN-1 probe
// (three times the first turn's duration when that is longer).
const (
	answerDelay  = time.Second
	minHoldStdin = 2 * time.Second
)

// unknownVersions are sent as protocol_version to see that the agent treats
// it as opaque (P-TURN-2): one that orders after "0.4" and one that orders
// before it, numerically and as a version, so an agent that compares
// either way fails one of them.
var unknownVersions = []string{"0.5", "0.3.99"}

// Options configure a check.
type Options struct {
	// Messages are the probe messages. The first is the message of every
	// ordinary turn; each further one is sent in one more turn, so an
	// author can add a prompt that makes the agent ask permission. None
	// means DefaultMessage.
	Messages []string
	// TurnTimeout bounds each probe turn; an agent still running then is
	// killed and the turn reported as hung. 0 means the profile's
	// timeout_secs, at most DefaultTurnTimeout.
	TurnTimeout time.Duration
	// Environ is the environment the agent's is built from, as the bridge's
	// is (F-ENV-1); nil means os.Environ().
	Environ []string
	// Label names the profile in the report; "" means its path.
	Label string

	// termAfter replaces the package's termAfter when positive: tests set
	// it past the turn bound so the SIGTERM probe always lands at the
	// first line, however slowly the agent starts.
	termAfter time.Duration
}

// Run checks the profile's agent and returns the report. It fails only
// when the agent cannot be started at all (the error is the diagnosis) or
// ctx ends; everything the agent does wrong is in the report.
func Run(ctx context.Context, p *agentproc.Profile, opts Options) (*Report, error) {
	if p == nil || p.Command == "" {
		return nil, errors.New("check: profile has no command")
	}
	started := time.Now()
	msgs := opts.Messages
	if len(msgs) == 0 {
		msgs = []string{DefaultMessage}
	}
	bound := TurnBound(p, opts.TurnTimeout)
	d := &driver{p: p, environ: opts.Environ, termAfter: cmp.Or(opts.termAfter, termAfter)}
	c := &checker{p: p, f: map[string][]finding{}}
	run := func(pl plan) *turn {
		pl.bound = bound
		t := d.run(ctx, pl)
		c.turns = append(c.turns, t)
		return t
	}

	c.first = run(plan{name: "first turn", message: msgs[0], answerDelay: answerDelay})
	if c.first.startErr != nil {
		return nil, fmt.Errorf("check: the agent could not start: %w", c.first.startErr)
	}
	c.asked = c.first
	if !c.first.hung {
		for i, m := range msgs[1:] {
			t := run(plan{name: fmt.Sprintf("message %d", i+2), message: m, answerDelay: answerDelay})
			if !c.asked.allowed() && t.allowed() {
				c.asked = t
			}
		}
		if sid := firstSessionID(c.first); sid != "" {
			c.resume = run(plan{name: "second turn", message: msgs[0], sessionID: sid})
		}
		if !p.Permission {
			hold := min(bound, max(minHoldStdin, 3*c.first.exitAt))
			c.stdin = run(plan{name: "stdin held open", message: msgs[0], holdStdin: hold})
		}
		if p.Permission && c.asked.allowed() {
			c.deny = run(plan{name: "deny", message: c.asked.plan.message, deny: true})
		}
		c.empty = run(plan{name: "empty turn"})
		dir, err := os.MkdirTemp("", "agentbridge-check-")
		if err != nil {
			return nil, fmt.Errorf("check: %w", err)
		}
		att, err := writeAttachment(dir)
		if err == nil {
			c.attach = run(plan{name: "attachment only", attachments: []agentproc.Attachment{att}})
		}
		_ = os.RemoveAll(dir)
		if err != nil {
			return nil, fmt.Errorf("check: %w", err)
		}
		for _, v := range unknownVersions {
			c.versions = append(c.versions, run(plan{name: "protocol_version " + v, message: msgs[0], version: v}))
		}
	}
	c.term = run(plan{name: "SIGTERM", message: msgs[0], sigterm: true})
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("check: %w", context.Cause(ctx))
	}

	c.evaluate()
	label := opts.Label
	if label == "" {
		label = p.Path
	}
	if label == "" {
		label = p.Name
	}
	rep := &Report{Profile: label, Command: append([]string{p.Command}, p.Args...), Messages: msgs}
	for _, r := range Rules {
		res := c.result(r)
		rep.Rules = append(rep.Rules, res)
		switch res.Status {
		case Pass:
			rep.Counts.Pass++
		case Fail:
			rep.Counts.Fail++
		case Warn:
			rep.Counts.Warn++
		default:
			rep.Counts.NotExercised++
		}
	}
	rep.OK = rep.Counts.Fail == 0
	for _, t := range c.turns {
		rep.Turns = append(rep.Turns, t.record())
	}
	rep.DurationMS = time.Since(started).Milliseconds()
	return rep, nil
}

// TurnBound is how long each probe turn of p may take: d when positive,
// else the profile's timeout_secs, at most DefaultTurnTimeout.
func TurnBound(p *agentproc.Profile, d time.Duration) time.Duration {
	switch {
	case d > 0:
		return d
	case p.Timeout > 0 && p.Timeout < DefaultTurnTimeout:
		return p.Timeout
	}
	return DefaultTurnTimeout
}

// writeAttachment writes the small image the attachment probe hands the
// agent, as the bridge hands downloaded files (D-ATT-1).
func writeAttachment(dir string) (agentproc.Attachment, error) {
	// A 1×1 transparent PNG.
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89" +
		"\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")
	path := filepath.Join(dir, "check.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		return agentproc.Attachment{}, fmt.Errorf("write the attachment: %w", err)
	}
	return agentproc.Attachment{Kind: "image", URL: "file://" + path, Name: "check.png", MIME: "image/png", Size: int64(len(png))}, nil
}

// record is the turn as the JSON report shows it.
func (t *turn) record() TurnRecord {
	r := TurnRecord{Name: t.plan.name, TurnLine: strings.TrimSuffix(string(t.turnLine), "\n"),
		DurationMS: t.exitAt.Milliseconds(), ExitCode: t.exitCode, Stderr: t.stderr, Lines: []string{}}
	if t.signal != 0 {
		r.Signal = t.signal.String()
	}
	switch {
	case t.hung:
		r.Killed = "still running at the turn bound"
	case t.termKilled:
		r.Killed = "still running kill_grace_secs after SIGTERM"
	case t.cancelled:
		r.Killed = "the check was stopped"
	}
	for i := range t.lines {
		r.Lines = append(r.Lines, t.describe(i))
	}
	for _, q := range t.requests {
		if q.answerAt >= 0 {
			r.Answers = append(r.Answers, fmt.Sprintf("+%dms %s %s", q.answerAt.Milliseconds(), q.behavior, q.id))
		}
	}
	return r
}
