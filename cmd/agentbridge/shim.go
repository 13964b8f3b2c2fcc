package main

import (
	"context"
	"io"
)

// cmdShim runs a CLI shim: an adapter that makes an agent CLI speak
// AgentProc 0.4. None is built yet.
func cmdShim(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return usageErrorf("shim: no shims are built yet")
}
