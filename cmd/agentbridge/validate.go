package main

import (
	"context"
	"fmt"
	"io"

	"github.com/agentbridge/agentbridge/config"
)

// cmdValidate checks a config file and every profile it names, reporting
// every problem at once, like nginx -t.
func cmdValidate(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) != 1 || args[0] == "-h" || args[0] == "--help" {
		return usageErrorf("usage: agentbridge validate CONFIG")
	}
	cfg, err := config.Load(args[0], nil)
	if err != nil {
		fmt.Fprintf(stderr, "%s is invalid:\n%v\n", args[0], err)
		return exitCode(1)
	}
	profiles, err := loadProfiles(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "%s: a profile is invalid:\n%v\n", args[0], err)
		return exitCode(1)
	}
	for _, w := range cfg.Warnings() {
		fmt.Fprintln(stderr, "warning:", w)
	}
	for _, w := range profileWarnings(profiles) {
		fmt.Fprintln(stderr, "warning:", w)
	}
	fmt.Fprintf(stdout, "%s is valid: %d profile(s), platforms enabled: %v\n", args[0], len(cfg.Profiles), enabledPlatforms(cfg))
	return nil
}
