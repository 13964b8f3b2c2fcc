package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/agentbridge/agentbridge/profiles"
	"github.com/agentbridge/agentbridge/profiles/demo"
)

// cmdDemoAgent runs the built-in demo agent (profiles.DemoCommand): the
// demo profile points at this binary with it.
func cmdDemoAgent(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		if args[0] == "-h" || args[0] == "--help" {
			fmt.Fprint(stderr, "usage: agentbridge demo-agent\n\n"+
				"The built-in demo agent: one AgentProc 0.4 turn, the turn line on stdin, events on stdout.\n"+
				"Profiles start it (builtin:demo, profiles/demo/profile.yaml).\n")
			return nil
		}
		return usageErrorf("demo-agent takes no arguments")
	}
	state := os.Getenv(demo.StateDirEnv)
	if state == "" {
		state = filepath.Join(demoState(), "demo")
	}
	delay := demo.DefaultDelay
	if d, err := time.ParseDuration(os.Getenv(demo.DelayEnv)); err == nil {
		delay = d
	}
	return demo.Run(ctx, stdin, stdout, state, delay)
}

// demoState is where the demo agent keeps its memory when nothing says
// otherwise: beside the terminal chat's store, never in the checkout.
func demoState() string {
	if d, err := profiles.StateDir(); err == nil {
		return d
	}
	return filepath.Join(os.TempDir(), "agentbridge")
}
