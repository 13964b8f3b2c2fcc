package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/platforms"
	"github.com/agentbridge/agentbridge/profiles"
)

// cmdValidate checks a config file and every profile it names, reporting
// every problem at once, like nginx -t.
func cmdValidate(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) != 1 || args[0] == "-h" || args[0] == "--help" {
		return usageErrorf("usage: agentbridge validate CONFIG")
	}
	cfg, err := config.Load(args[0], config.Options{Platforms: platforms.All()})
	if err != nil {
		fmt.Fprintf(stderr, "%s is invalid:\n%v\n", args[0], err)
		return exitCode(1)
	}
	profs, err := profiles.Load(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "%s: a profile is invalid:\n%v\n", args[0], err)
		return exitCode(1)
	}
	for _, w := range cfg.Warnings() {
		fmt.Fprintln(stderr, "warning:", w)
	}
	for _, w := range profiles.Warnings(profs) {
		fmt.Fprintln(stderr, "warning:", w)
	}
	var enabled []string
	for _, a := range cfg.Enabled() {
		enabled = append(enabled, a.Name)
	}
	fmt.Fprintf(stdout, "%s is valid: %d profile(s), platforms enabled: [%s]\n", args[0], len(cfg.Profiles), strings.Join(enabled, " "))
	return nil
}
