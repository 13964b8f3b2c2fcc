package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentbridge/agentbridge/core/agentproc/agentcheck"
	"github.com/agentbridge/agentbridge/internal/termtext"
	"github.com/agentbridge/agentbridge/profiles"
)

const checkUsage = `usage: agentbridge check PROFILE [--message TEXT]... [--timeout DURATION] [--json]

Runs the profile's agent through a series of probe turns and reports, rule by
rule of the AgentProc 0.4 spec (spec/protocol.md), pass, fail (a MUST broken),
warn (a SHOULD) or not exercised, with the evidence. PROFILE is a profile YAML
file or builtin:demo. Exit status 0 when no MUST is broken, 1 otherwise, 2 for
a usage error.

flags:
`

// checkMessages collects repeated --message flags.
type checkMessages []string

func (m *checkMessages) String() string { return strings.Join(*m, " | ") }

func (m *checkMessages) Set(v string) error {
	if v == "" {
		return errors.New("a message must not be empty (the checker sends the empty turn itself)")
	}
	*m = append(*m, v)
	return nil
}

// cmdCheck checks an agent profile against the protocol.
func cmdCheck(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	if err := closeToAgents(); err != nil {
		return err
	}
	fs := newFlagSet("check", checkUsage, stderr)
	var msgs checkMessages
	fs.Var(&msgs, "message", "`TEXT` of the probe turns (repeatable: the first is used for every ordinary turn, each other one once more, e.g. a prompt that makes the agent ask permission); default \""+agentcheck.DefaultMessage+"\"")
	timeout := fs.Duration("timeout", 0, "bound on each probe turn (default the profile's timeout_secs, at most "+agentcheck.DefaultTurnTimeout.String()+")")
	asJSON := fs.Bool("json", false, "print the report as one JSON object (see docs/check.md)")
	// The profile comes first, flags after it: accept both orders.
	var profile string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		profile, args = args[0], args[1:]
	}
	err := parseFlags(fs, args)
	if err == nil && profile == "" && fs.NArg() > 0 {
		profile = fs.Arg(0)
		err = parseFlags(fs, fs.Args()[1:])
	}
	switch {
	case err != nil:
		return err
	case fs.NArg() > 0:
		return usageErrorf("check: want one PROFILE, got also %q", fs.Args())
	}
	if profile == "" {
		return usageErrorf("check: a PROFILE is required (a profile YAML file or builtin:demo)")
	}
	if *timeout < 0 {
		return usageErrorf("check: --timeout must not be negative")
	}
	// The demo's memory lives only as long as the check.
	state, err := os.MkdirTemp("", "agentbridge-check-demo-")
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	defer os.RemoveAll(state)
	prof, err := profiles.Open(profile, state)
	if err != nil {
		return usageErrorf("check: %v", err)
	}
	label := profile
	if err := profiles.IsolateProblem(prof); err != nil {
		// Every probe turn would fail the same way: say why instead.
		return fmt.Errorf("check: profile %s: %w", label, err)
	}
	fmt.Fprintf(stderr, "agentbridge check: probing %s, each turn at most %s…\n", label, agentcheck.TurnBound(prof, *timeout))
	rep, err := agentcheck.Run(ctx, prof, agentcheck.Options{Messages: msgs, TurnTimeout: *timeout, Label: label})
	if err != nil {
		return err
	}
	if *asJSON {
		err = rep.WriteJSON(stdout)
	} else {
		// The report quotes the agent's lines: shown, never obeyed.
		var text strings.Builder
		if err = rep.WriteText(&text); err == nil {
			_, err = io.WriteString(stdout, termtext.Visible(text.String()))
		}
	}
	if err != nil {
		return fmt.Errorf("check: write the report: %w", err)
	}
	if !rep.OK {
		return exitCode(1)
	}
	return nil
}
