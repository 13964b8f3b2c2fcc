package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/agentbridge/agentbridge/adapters/platforms"
	"github.com/agentbridge/agentbridge/internal/preflight"
)

const validateUsage = `usage: agentbridge validate [--json] CONFIG

Checks a config file and every profile it names without starting anything,
reporting every problem at once. Exit status: 0 when serve would start
(warnings allowed), 1 when the config or a profile has errors (or the file
cannot be read), 2 for a usage mistake.

flags:
`

// cmdValidate checks a config file and every profile it names, reporting
// every problem at once, like nginx -t.
func cmdValidate(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("validate", validateUsage, stderr)
	asJSON := fs.Bool("json", false, "print the report as one JSON object on stdout")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErrorf("usage: agentbridge validate [--json] CONFIG")
	}
	path := fs.Arg(0)
	r := preflight.Check(path, platforms.All())
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("validate: write json: %w", err)
		}
	} else {
		if !r.Valid {
			fmt.Fprintf(stderr, "%s is invalid:\n", path)
			for _, p := range r.Errors {
				fmt.Fprintln(stderr, p.Message)
			}
		}
		for _, w := range r.Warnings {
			fmt.Fprintln(stderr, "warning:", w.Message)
		}
		if r.Valid {
			fmt.Fprintf(stdout, "%s is valid: %d profile(s), platforms enabled: [%s]\n", path, len(r.Profiles), strings.Join(r.Platforms, " "))
		}
	}
	if !r.Valid {
		return exitCode(1)
	}
	return nil
}
