package main

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/agentbridge/agentbridge/profiles/demo"
)

// cmdDemoAgent runs the built-in demo agent (profiles.DemoCommand): the
// demo profile points at this binary with it.
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
