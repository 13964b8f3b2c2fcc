// Package profiles loads the agent profiles a bridge configuration names:
// profile files, and the profiles compiled into the bridge ("builtin:demo").
package profiles

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/internal/isolate"
	"github.com/agentbridge/agentbridge/profiles/demo"
)

// DemoCommand is the hidden agentbridge subcommand that runs the built-in
// demo agent; the demo profile runs this very binary with it.
const DemoCommand = "demo-agent"

// StateDir is where the terminal chat keeps its store and the demo agent's
// memory: $XDG_STATE_HOME/agentbridge, or ~/.local/state/agentbridge.
func StateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "agentbridge"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find a state directory: %w (set XDG_STATE_HOME or pass --store)", err)
	}
	return filepath.Join(home, ".local", "state", "agentbridge"), nil
}

// Demo runs this very binary as the built-in demo agent, so the demo needs
// nothing installed. The agent keeps its memory under state.
func Demo(state string) (*agentproc.Profile, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("locate the agentbridge binary for the demo agent: %w", err)
	}
	env := map[string]string{demo.StateDirEnv: filepath.Join(state, "demo")}
	if d := os.Getenv(demo.DelayEnv); d != "" {
		env[demo.DelayEnv] = d
	}
	return &agentproc.Profile{
		Name:              "demo",
		Command:           exe,
		Args:              []string{DemoCommand},
		Env:               env,
		Timeout:           10 * time.Minute,
		KillGrace:         2 * time.Second,
		Streaming:         true,
		Permission:        true,
		PermissionTimeout: 5 * time.Minute,
	}, nil
}

// Load loads every profile cfg names. It loads all it can and reports each
// one it cannot, as a *config.FieldError at the line of the config that
// names it, joined with errors.Join.
func Load(cfg *config.Config) (map[string]*agentproc.Profile, error) {
	profiles := map[string]*agentproc.Profile{}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(cfg.Profiles)) {
		ref := cfg.Profiles[name]
		if ref == "" {
			continue // the config reports it
		}
		p, err := Open(ref, filepath.Join(filepath.Dir(cfg.Store), "demo-state"))
		if err != nil {
			errs = append(errs, cfg.Problem("profiles."+name, "%v", indent(err)))
			continue
		}
		if p.Name == "" {
			p.Name = name
		}
		profiles[name] = p
	}
	return profiles, errors.Join(errs...)
}

// SelfCommand is the command by which a profile runs agentbridge itself (a
// shim, the demo agent): the running binary, wherever it is, not whatever
// PATH holds. So the ready profiles work straight after go build or go run,
// and a bridge never runs another version's shims.
const SelfCommand = "agentbridge"

// Open loads the profile ref names: "builtin:demo" (the demo agent keeping
// its memory under demoState) or a profile file. A profile file whose
// command is SelfCommand runs the running binary.
func Open(ref, demoState string) (*agentproc.Profile, error) {
	switch {
	case ref == config.BuiltinPrefix+"demo":
		return Demo(demoState)
	case strings.HasPrefix(ref, config.BuiltinPrefix):
		return nil, fmt.Errorf("unknown built-in profile %q (known: builtin:demo)", ref)
	}
	p, err := agentproc.LoadProfile(ref)
	if err != nil {
		return nil, err
	}
	if p.Command == SelfCommand {
		if exe, err := os.Executable(); err == nil {
			p.Command = exe
		}
	}
	return p, nil
}

// indent puts each line of a multi-line error on its own indented line
// under the config line that names the profile.
func indent(err error) string {
	msg := err.Error()
	if !strings.Contains(msg, "\n") {
		return msg
	}
	return "\n    " + strings.ReplaceAll(msg, "\n", "\n    ")
}

// Unstartable checks that each profile's agent could start on this machine
// (its command found, its working directory there; for a profile that runs
// an agentbridge shim or isolate, the CLI or container client behind it
// too) and returns, by profile name,
// why each one that could not, could not. It is for warnings, not errors:
// the config may be checked on another machine than the one that serves it.
func Unstartable(profiles map[string]*agentproc.Profile) map[string]error {
	out := map[string]error{}
	for name, p := range profiles {
		err := p.Check(nil)
		if cli := shimCLI(p); err == nil && cli != "" {
			if err = checkBehind(p, cli); err != nil {
				err = fmt.Errorf("its shim runs %s: %w", cli, err)
			}
		}
		if err == nil {
			err = IsolateProblem(p)
		}
		if err != nil {
			out[name] = err
		}
	}
	return out
}

// IsolateProblem checks, for a profile that runs agentbridge isolate, that
// its container client is on the agent's PATH and that the image is
// configured and (for docker and podman) on this host, and says what is
// wrong; nil for any other profile.
func IsolateProblem(p *agentproc.Profile) error {
	client := isolateClient(p)
	if client == "" {
		return nil
	}
	err := checkBehind(p, client)
	if err == nil {
		err = isolate.CheckImage(context.Background(), p.Args, p.Environ(nil))
	}
	if err != nil {
		return fmt.Errorf("it runs its agent through %s: %w", client, err)
	}
	return nil
}

// checkBehind checks that command, which p's agentbridge runs in turn (a
// shim's CLI, an isolate's container client), could start as p's agent
// would: Check with command in its place, on the agent's PATH.
func checkBehind(p *agentproc.Profile, command string) error {
	q := *p
	q.Command, q.Args = command, nil
	return q.Check(nil)
}

// isolateClient returns the container client a profile such as
// `command: agentbridge` / `args: [isolate, docker, ...]` runs (docker,
// podman or kubectl: agentbridge isolate runs the runtime by that name), or
// "" for a profile that runs no isolate.
func isolateClient(p *agentproc.Profile) string {
	args, ok := runsSelf(p, "isolate")
	if !ok {
		return ""
	}
	return args[0]
}

// runsSelf reports whether p runs this binary's subcommand sub with at
// least one argument, and returns those arguments: p's command is
// SelfCommand (Open makes it the running binary), the running binary by
// path, or an agentbridge elsewhere.
func runsSelf(p *agentproc.Profile, sub string) (args []string, ok bool) {
	exe, _ := os.Executable()
	self := p.Command == SelfCommand || p.Command == exe || filepath.Base(p.Command) == SelfCommand
	if !self || len(p.Args) < 2 || p.Args[0] != sub {
		return nil, false
	}
	return p.Args[1:], true
}

// Warning is how serve and validate word Unstartable's finding about a
// profile.
func Warning(name string, err error) string {
	return fmt.Sprintf("profile %s: %v; its turns will fail until that is fixed", name, err)
}

// Warnings returns Unstartable's findings as warnings, in name order.
func Warnings(profiles map[string]*agentproc.Profile) []string {
	bad := Unstartable(profiles)
	var out []string
	for _, name := range slices.Sorted(maps.Keys(bad)) {
		out = append(out, Warning(name, bad[name]))
	}
	return out
}

// shimCLI returns the command the shim of a profile such as
// `command: agentbridge` / `args: [shim, claude]` runs: the shim's name,
// which is its CLI's (claude, codex, gemini, qwen), unless --bin names
// another. It returns "" for a profile that runs no shim.
func shimCLI(p *agentproc.Profile) string {
	args, ok := runsSelf(p, "shim")
	if !ok {
		return ""
	}
	bin := args[0]
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return bin // what follows is the CLI's own arguments
		case (a == "--bin" || a == "-bin") && i+1 < len(args):
			i++
			bin = args[i]
		case strings.HasPrefix(a, "--bin="), strings.HasPrefix(a, "-bin="):
			_, bin, _ = strings.Cut(a, "=")
		}
	}
	return bin
}
