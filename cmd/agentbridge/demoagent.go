package main

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/agentbridge/agentbridge/profiles/demo"
)

// demoAgentCommand is the hidden subcommand that runs the built-in demo
// agent; the demo profile points at this binary with it.
const demoAgentCommand = "demo-agent"

func cmdDemoAgent(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	state := os.Getenv(demo.StateDirEnv)
	if state == "" {
		state = os.TempDir() + "/agentbridge-demo"
	}
	delay := demo.DefaultDelay
	if d, err := time.ParseDuration(os.Getenv(demo.DelayEnv)); err == nil {
		delay = d
	}
	return demo.Run(ctx, stdin, stdout, state, delay)
}
