package main

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// closeToAgents makes this process not dumpable (PR_SET_DUMPABLE 0), so an
// agent running as the same user cannot read /proc/<bridge>/environ or
// /proc/<bridge>/mem, nor ptrace the bridge: the tokens in the bridge's
// environment and memory stay the bridge's. Commands that hold tokens and
// start agents (serve, chat, run, check) call it first. The kernel resets
// the flag only on execve of this process or a change of its credentials,
// and agentbridge does neither; agents are exec'd children with their own
// flag.
func closeToAgents() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("close the process to its agents (PR_SET_DUMPABLE): %w", err)
	}
	return nil
}
