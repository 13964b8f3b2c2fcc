package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/agentbridge/agentbridge/shim"
	"github.com/agentbridge/agentbridge/shim/claude"
	"github.com/agentbridge/agentbridge/shim/codex"
	"github.com/agentbridge/agentbridge/shim/gemini"
)

// shimRun is the entry point every shim package offers.
type shimRun func(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, args, environ []string) error

// shims maps `agentbridge shim NAME` to the shim that makes that agent CLI
// speak AgentProc 0.4.
var shims = map[string]shimRun{
	"claude": claude.Run,
	"qwen":   claude.RunQwen,
	"codex":  codex.Run,
	"gemini": gemini.Run,
}

// cmdShim runs a CLI shim: an adapter that makes an agent CLI speak
// AgentProc 0.4. Profiles run it as `agentbridge shim NAME [FLAGS] [-- CLI ARGS]`.
func cmdShim(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	names := make([]string, 0, len(shims))
	for n := range shims {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(args) == 0 {
		return usageErrorf("shim: want a shim name: %s", strings.Join(names, ", "))
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprintf(stderr, "usage: agentbridge shim NAME [--bin PATH] [-- CLI ARGS...]\n\nshims: %s\n", strings.Join(names, ", "))
		return nil
	}
	run, ok := shims[args[0]]
	if !ok {
		return usageErrorf("shim: unknown shim %q (have %s)", args[0], strings.Join(names, ", "))
	}
	err := run(ctx, stdin, stdout, stderr, args[1:], os.Environ())
	if errors.Is(err, flag.ErrHelp) {
		return nil // the shim printed its usage
	}
	switch {
	case errors.Is(err, shim.ErrCannotStart):
		// Like a shell for a command it cannot find; `agentbridge run`
		// passes it on.
		return exitCode(127)
	case errors.Is(err, shim.ErrTurnFailed):
		return exitCode(1) // the message is already on stdout
	}
	if err != nil && ctx.Err() != nil {
		return exitCode(143) // stopped by SIGTERM/SIGINT: the bridge reports the stop
	}
	return err
}
