// This file: spec/protocol.md, "The shape of a turn" step 1 — starting an
// agent exactly as Run would, for tools that drive it themselves
// (agentbridge check).

package agentproc

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"syscall"
)

// Process is an agent started the way Run starts one, with the bridge's ends
// of its pipes left to the caller. It is for tools that must see the agent's
// own behaviour rather than the runner's reading of it (agentbridge check):
// they write the turn line themselves, read raw stdout, and signal the
// process group.
type Process struct {
	PID    int
	Stdin  *os.File // write the turn line (and permission answers) here; close it for EOF
	Stdout *os.File
	Stderr *os.File

	pr *proc
}

// Start starts the profile's agent for turn t exactly as Run would — the
// same argv, working directory and environment after placeholder and ${VAR}
// expansion (F-PH-1, F-ENV-1), in its own process group (D-GROUP-1) — but
// writes nothing to it. The error is the diagnosis Run reports with status
// 127. Only t's session and conversation fields are used (for the
// placeholders). log receives env_allowlist warnings; nil discards them.
// environ is the bridge's environment; nil means os.Environ().
func (p *Profile) Start(t Turn, environ []string, log *slog.Logger) (*Process, error) {
	if p.Command == "" {
		return nil, errors.New("start agent: profile has no command")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	pr, command, err := launch(p, t, environ, nil, log)
	if err != nil {
		return nil, errors.New(diagnose(command, err))
	}
	return &Process{PID: pr.pid, Stdin: pr.stdin, Stdout: pr.stdout, Stderr: pr.stderr, pr: pr}, nil
}

// launch starts p's agent for turn t: argv, working directory and
// environment expanded for t, the command found on the agent's PATH. On
// failure it returns the expanded command name for the diagnosis.
func launch(p *Profile, t Turn, environ, extra []string, log *slog.Logger) (*proc, string, error) {
	if environ == nil {
		environ = os.Environ()
	}
	name := t.SessionName
	if name == "" {
		name = "default"
	}
	ph := placeholders{profileDir: p.Dir(), sessionID: t.SessionID, sessionName: name, conversationID: t.ConversationID}
	argv, cwd := p.expand(ph)
	env := append(childEnv(p, environMap(environ), ph, cwd, log), extra...)
	path, err := locate(argv[0], cwd, env)
	if err != nil {
		return nil, argv[0], err
	}
	pr, err := startAgent(path, argv, env, cwd, p.User.credential())
	if err != nil && p.User != nil && errors.Is(err, fs.ErrPermission) {
		// The bridge found both; the agent's user may not use them.
		err = &userDenied{user: p.User.Spec, cwd: cwd, err: err}
	}
	return pr, argv[0], err
}

// userDenied is a start refused to the profile's user: the working
// directory or the command is the bridge's account's only.
type userDenied struct {
	user, cwd string
	err       error
}

func (e *userDenied) Error() string { return e.err.Error() }
func (e *userDenied) Unwrap() error { return e.err }

// diagnosis says what the user must be allowed.
func (e *userDenied) diagnosis(command string) string {
	where := "the bridge's working directory"
	if e.cwd != "" {
		where = fmt.Sprintf("%q", e.cwd)
	}
	return fmt.Sprintf("agent command %q could not start as user %s (permission denied): that user must be able to enter %s and run the command", command, e.user, where)
}

// WaitExited blocks until the agent has exited, without reaping it, so its
// process group cannot be reused while the caller may still signal it.
func (pr *Process) WaitExited() { waitExited(pr.PID) }

// Signal sends sig to the agent's whole process group; a group that is
// already gone is not an error.
func (pr *Process) Signal(sig syscall.Signal) { signalGroup(pr.PID, sig) }

// Wait reaps the agent and returns how it ended. Call it after WaitExited
// and the last Signal; the caller still closes the three pipes.
func (pr *Process) Wait() (*os.ProcessState, error) {
	err := pr.pr.wait()
	return pr.pr.cmd.ProcessState, err
}
