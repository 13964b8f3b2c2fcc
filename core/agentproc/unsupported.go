//go:build !linux

// This file: spec/protocol.md, "The shape of a turn" — the process layer
// exists for Linux only (process_linux.go: pidfd waits that do not reap,
// process-group signals, D-GROUP-1). Elsewhere the build stops with the one
// error "undefined: agentproc_runs_agents_on_linux_only"; the declarations
// below only keep the rest of the package from adding errors of its own.

package agentproc

import (
	"os"
	"os/exec"
	"syscall"
)

var _ = agentproc_runs_agents_on_linux_only

type proc struct {
	cmd                   *exec.Cmd
	pid                   int
	stdin, stdout, stderr *os.File
}

func startAgent(string, []string, []string, string, *syscall.Credential) (*proc, error) {
	panic("linux only")
}
func waitExited(int)                  { panic("linux only") }
func signalGroup(int, syscall.Signal) { panic("linux only") }
func (*proc) exitCode(error) int      { panic("linux only") }
func (*proc) wait() error             { panic("linux only") }
func (*proc) group() Group            { panic("linux only") }

// GroupOf is Linux only.
func GroupOf(int) Group { panic("linux only") }

// KillStale is Linux only.
func KillStale(Group) (int, error) { panic("linux only") }
