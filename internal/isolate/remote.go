package isolate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/agentbridge/agentbridge/internal/execpath"
)

// Remote is a container or pod a turn starts, as the bridge journals it so
// that a restart after a crash can remove what is left of it (Remove).
type Remote struct {
	Runtime   string // Docker, Podman or Kubectl: also the client command
	Name      string // the container's or pod's name
	Namespace string // kubectl: the namespace; "" = the context's
}

// Plan reads the arguments of a profile that runs agentbridge isolate
// (args[0] is "isolate") and names the remote its turn will start, before
// it starts: the bridge journals the Remote first and passes env to the
// wrapper, which then uses that name and labels the container with bridge
// and turn. workspace is the conversation's id ({{AGENTBRIDGE_CONVERSATION_ID}}),
// turn the turn's id and bridge the bridge's (both lowercase hex). ok is
// false for a profile that runs no isolate, or whose flags isolate would
// refuse: it then starts nothing.
//
// The name comes from the bridge rather than from the wrapper reporting it
// because only this order is safe: the journal entry is on disk before the
// wrapper can start anything, so there is no moment in which a crash of the
// bridge leaves a container it has no record of.
func Plan(args []string, workspace, turn, bridge string) (r Remote, env []string, ok bool) {
	if len(args) < 2 || args[0] != "isolate" {
		return Remote{}, nil, false
	}
	rt, err := runtime(args[1:])
	if err != nil || !labelValue().MatchString(turn) || !labelValue().MatchString(bridge) ||
		(workspace != "" && !slug().MatchString(workspace)) {
		return Remote{}, nil, false
	}
	s := Spec{Runtime: rt}
	if err := flagSet(&s, io.Discard, os.Getenv).Parse(args[2:]); err != nil {
		return Remote{}, nil, false
	}
	r = Remote{Runtime: rt, Name: name(workspace, turn), Namespace: s.Namespace}
	return r, []string{NameEnv + "=" + r.Name, BridgeEnv + "=" + bridge, TurnEnv + "=" + turn}, true
}

// RemoveArgv is the client's argv that stops and removes r at once, with
// its anonymous volumes (never a named one: the conversation's workspace
// stays). It is for a turn that is over: no grace is given.
func (r Remote) RemoveArgv() []string {
	switch r.Runtime {
	case Kubectl:
		argv := []string{"delete", "pod", r.Name}
		if r.Namespace != "" {
			argv = append(argv, "--namespace", r.Namespace)
		}
		return append(argv, "--ignore-not-found", "--grace-period", "0", "--force", "--wait=false")
	case Podman:
		// --time 0: an agent that is pid 1 ignores SIGTERM; do not wait for it.
		return []string{"rm", "--force", "--volumes", "--time", "0", r.Name}
	}
	return []string{"rm", "--force", "--volumes", r.Name}
}

// removeBound bounds Remove when its ctx has no deadline.
const removeBound = 30 * time.Second

// Remove stops and removes r (RemoveArgv), bounded by ctx and at most
// removeBound; one already gone is no error. It reports whether anything
// was removed.
func Remove(ctx context.Context, r Remote) (removed bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, removeBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.Runtime, r.RemoveArgv()...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	text := strings.TrimSpace(out.String())
	low := strings.ToLower(text)
	switch {
	case err == nil:
		// docker and podman print the name of what they removed, kubectl
		// says "deleted"; nothing at all for what was not there.
		return strings.Contains(text, r.Name), nil
	case strings.Contains(low, "no such container") || strings.Contains(low, "no container with name") || strings.Contains(low, "not found"):
		return false, nil
	}
	return false, fmt.Errorf("%s %s: %w: %s", r.Runtime, strings.Join(r.RemoveArgv(), " "), err, lastLine(text))
}

// lastLine is the last non-empty line of s, at most 300 bytes.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}

// CheckImage checks, without starting anything, what the first turn of a
// profile that runs agentbridge isolate (args[0] is "isolate") would find
// wrong with its image: none configured, or — for docker and podman — one
// the engine does not have (it may still pull it at the turn: the error
// says so). env is the agent's environment (the image's default, the
// client's PATH, DOCKER_HOST, CONTAINERS_CONF …). It is bounded in time.
func CheckImage(ctx context.Context, args, env []string) error {
	if len(args) < 2 || args[0] != "isolate" {
		return nil
	}
	rt, err := runtime(args[1:])
	if err != nil {
		return err
	}
	vars := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	s := Spec{Runtime: rt}
	if err := flagSet(&s, io.Discard, func(k string) string { return vars[k] }).Parse(args[2:]); err != nil {
		return fmt.Errorf("isolate: %w", err)
	}
	if s.Image == "" {
		return errors.New("no image: set " + ImageEnv + " or pass --image")
	}
	if rt == Kubectl {
		return nil // the cluster's nodes pull it; nothing here can tell
	}
	path, err := execpath.Look(rt, vars["PATH"])
	if err != nil {
		return fmt.Errorf("%s is not on PATH", rt)
	}
	ctx, cancel := context.WithTimeout(ctx, removeBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "image", "inspect", "--format", "{{.Id}}", s.Image)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		text := strings.ToLower(out.String())
		if strings.Contains(text, "no such image") || strings.Contains(text, "image not known") || strings.Contains(text, "failed to find image") {
			return fmt.Errorf("%s has no image %q: build or load it on this host (a turn would try to pull it)", rt, s.Image)
		}
		return fmt.Errorf("could not ask %s about image %q: %v: %s", rt, s.Image, err, lastLine(out.String()))
	}
	return nil
}
