// Package shim holds what every agent CLI shim (claude, codex, gemini, in
// the packages below it) tells its caller beyond the events it writes: the
// errors their Run functions return, so that `agentbridge shim` turns them
// into exit statuses in one place.
package shim

import "errors"

// ErrTurnFailed is returned by a shim's Run when the turn ended with an
// error event: the message was already written to stdout, so the caller
// only sets the exit status.
var ErrTurnFailed = errors.New("turn failed")

// ErrCannotStart marks a turn that failed because the CLI could not be
// started (missing from PATH, say): `agentbridge shim` exits 127 for it,
// as a shell does for a command it cannot find. Run returns it joined with
// ErrTurnFailed.
var ErrCannotStart = errors.New("the CLI could not start")
