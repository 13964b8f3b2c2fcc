package main

import (
	"context"
	"io"

	"github.com/agentbridge/agentbridge/internal/isolate"
)

// cmdIsolate runs one turn's agent in a container or pod (profiles/isolated).
func cmdIsolate(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if code := isolate.Main(ctx, args, stdin, stdout, stderr); code != 0 {
		return exitCode(code)
	}
	return nil
}
