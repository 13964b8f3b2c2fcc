// This file: spec/protocol.md, "The profile" (argv, cwd) — how the command
// is found before it starts and the plain diagnosis (status 127) when it
// cannot be.

package agentproc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/agentbridge/agentbridge/internal/execpath"
)

// expand substitutes the placeholders in the command, its arguments and
// the working directory; a relative cwd is resolved against the profile's
// directory (P-PROF-4).
func (p *Profile) expand(ph placeholders) (argv []string, cwd string) {
	px := expander{ph: ph}
	argv = make([]string, 0, 1+len(p.Args))
	argv = append(argv, px.expand(p.Command))
	for _, a := range p.Args {
		argv = append(argv, px.expand(a))
	}
	cwd = px.expand(p.Cwd)
	if cwd != "" && !filepath.IsAbs(cwd) && p.Dir() != "" {
		cwd = filepath.Join(p.Dir(), cwd)
	}
	return argv, cwd
}

// locate checks the working directory and finds the command the way the
// child will (a bare name on the agent's PATH), so a failure can be told
// apart: the child's chdir failure would surface as a bare ENOENT, as if
// the command were missing.
func locate(command, cwd string, env []string) (string, error) {
	if cwd != "" {
		if _, err := os.Stat(cwd); err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = &fs.PathError{Op: "chdir", Path: cwd, Err: pe.Err}
			}
			return "", err
		}
	}
	return execpath.Look(command, environMap(env)["PATH"])
}

// Check reports whether the profile's agent could start here, without
// starting it: its working directory exists and its command is found (a
// bare name on the agent's PATH, which the profile's env may set) and is
// an executable file. The error is the diagnosis a turn would show. environ
// is the bridge's environment; nil means os.Environ().
func (p *Profile) Check(environ []string) error {
	if environ == nil {
		environ = os.Environ()
	}
	ph := placeholders{profileDir: p.Dir(), sessionName: "default"}
	argv, cwd := p.expand(ph)
	command := argv[0]
	env := childEnv(p, environMap(environ), ph, cwd, slog.New(slog.DiscardHandler))
	path, err := locate(command, cwd, env)
	if err == nil {
		var fi fs.FileInfo
		if fi, err = os.Stat(path); err == nil && (fi.IsDir() || fi.Mode()&0o111 == 0) {
			err = &fs.PathError{Op: "exec", Path: path, Err: fs.ErrPermission}
		}
	}
	if err != nil {
		return errors.New(diagnose(command, err))
	}
	return nil
}

// Environ returns the agent's environment as a turn's agent gets it
// (F-ENV-1), less the per-run extras: for checks that run what the agent
// runs (a container client) the way it would. environ is the bridge's
// environment; nil means os.Environ().
func (p *Profile) Environ(environ []string) []string {
	if environ == nil {
		environ = os.Environ()
	}
	ph := placeholders{profileDir: p.Dir(), sessionName: "default"}
	_, cwd := p.expand(ph)
	return childEnv(p, environMap(environ), ph, cwd, slog.New(slog.DiscardHandler))
}

// startFailed fills the outcome of an agent that could not be started.
func startFailed(out Outcome, command string, err error, start time.Time, log *slog.Logger) Outcome {
	out.ExitCode = 127
	out.StartError = err
	out.Duration = time.Since(start)
	out.Diagnosis = diagnose(command, err)
	log.LogAttrs(context.Background(), slog.LevelWarn, "agent did not start",
		slog.String("command", command), slog.String("diagnosis", out.Diagnosis))
	return out
}

// diagnose says in plain words why command could not start.
func diagnose(command string, err error) string {
	var pe *fs.PathError
	var ud *userDenied
	switch {
	case errors.As(err, &ud):
		return ud.diagnosis(command)
	case errors.Is(err, execpath.ErrNotOnPath):
		return fmt.Sprintf("agent command %q not found on PATH", command)
	case errors.As(err, &pe) && pe.Op == "chdir":
		return fmt.Sprintf("agent working directory %q cannot be used: %v", pe.Path, pe.Err)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("agent command %q not found", command)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Sprintf("agent command %q is not executable (permission denied)", command)
	case errors.Is(err, syscall.ENOEXEC):
		return fmt.Sprintf("agent command %q is not an executable this system can run (a script without a #! line?)", command)
	}
	return fmt.Sprintf("agent command %q could not start: %v", command, err)
}
