// Package isolate runs one turn's agent somewhere else — a Docker or Podman
// container, or a Kubernetes pod — as if it ran here: the client (docker,
// podman or kubectl) inherits the turn's stdin and stdout, so the AgentProc
// NDJSON passes through untouched, and its exit status becomes the turn's.
//
// What a killed client cannot do is stop the remote process: a container or
// pod outlives its docker or kubectl. So when the bridge stops the turn
// (/stop, the turn's timeout, shutdown: SIGTERM to the agent's process
// group), Run runs the runtime's own stop command for the container or pod
// it named, in a process group of its own so the bridge's SIGKILL after
// kill_grace cannot cut it short, and waits for it.
//
// Each conversation gets its own workspace, mounted at /workspace (also the
// agent's HOME, so CLI sessions resume across turns): a Docker volume named
// after the conversation, or a sub-directory of one shared
// ReadWriteMany claim on Kubernetes.
package isolate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentbridge/agentbridge/internal/tail"
)

// The runtimes Run knows; each is also the client command it runs.
const (
	Docker  = "docker"
	Podman  = "podman"
	Kubectl = "kubectl"
)

// WorkspaceDir is where the conversation's workspace is mounted in the
// container; it is also the agent's working directory and HOME.
const WorkspaceDir = "/workspace"

// ImageEnv names the variable holding the default --image, so an operator
// names the agents image once (in the bridge's environment, passed on by
// the isolated profiles) rather than in every profile.
const ImageEnv = "AGENTBRIDGE_AGENT_IMAGE"

// What the bridge tells the wrapper about the turn it runs (Plan): the
// container's or pod's name, which the bridge journals before the turn
// starts, and the values of its labels. They reach the wrapper only: the
// container gets none of them.
const (
	NameEnv   = "AGENTBRIDGE_ISOLATE_NAME"
	BridgeEnv = "AGENTBRIDGE_BRIDGE_ID"
	TurnEnv   = "AGENTBRIDGE_TURN_ID"
)

// Labels on every container (Docker, Podman) the wrapper starts; pods carry
// the same with "io.agentbridge/" instead of "io.agentbridge.". Bridge and
// turn are set when the bridge ran the wrapper.
const (
	LabelBridge    = "io.agentbridge.bridge"
	LabelWorkspace = "io.agentbridge.workspace"
	LabelTurn      = "io.agentbridge.turn"
)

// AgentUID is the user the agents image runs as; the pod's fsGroup, so a
// fresh workspace directory is writable by it.
const AgentUID = 10001

// Spec is one turn's remote agent.
type Spec struct {
	Runtime   string        // Docker, Podman or Kubectl
	Image     string        // the image holding the agent (the agents image)
	Workspace string        // conversation slug; "" = a scratch workspace that goes with the turn
	CPUs      string        // CPU limit, e.g. "2"
	Memory    string        // memory limit, e.g. "4g" (docker, podman) or "4Gi" (kubectl)
	Env       []string      // variables passed from this process's environment when non-empty
	EnvSecret []string      // kubectl: Secrets whose keys become the agent's environment
	Namespace string        // kubectl: the namespace; "" = the context's
	Claim     string        // kubectl: the ReadWriteMany PersistentVolumeClaim holding the workspaces
	Deadline  time.Duration // kubectl: activeDeadlineSeconds, so a pod whose bridge died still ends
	Grace     time.Duration // SIGTERM → SIGKILL for the remote agent when the turn is stopped
	Args      []string      // arguments of the image's entrypoint, e.g. [shim, claude]
	Name      string        // the container's or pod's name: the bridge's ($NameEnv) or a fresh one
	Bridge    string        // the bridge that started the turn ($BridgeEnv); "" when run by hand
	Turn      string        // the turn's id ($TurnEnv); "" when run by hand
}

// slug is what a workspace name must look like: core.ConversationKey.Slug's
// form, an RFC 1123 label short enough to name volumes and pods after.
var slug = sync.OnceValue(func() *regexp.Regexp { // compiled on first use: start-up stays lean
	return regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$`)
})

const usage = `usage: agentbridge isolate docker|podman|kubectl [--image IMAGE]
         [--workspace {{AGENTBRIDGE_CONVERSATION_ID}}] [flags] -- ENTRYPOINT-ARGS...

Runs one turn's agent in a container (docker run -i --rm, podman run -i --rm)
or a Kubernetes pod (kubectl run -i --rm), with the turn's stdin and stdout
passed straight through. When the turn is stopped (SIGTERM or SIGINT) it
stops the container or deletes the pod, and waits for that. See
profiles/isolated/README.md.

flags:
`

// flagSet defines the flags of agentbridge isolate RUNTIME on s;
// getenv is where the --image default comes from.
func flagSet(s *Spec, stderr io.Writer, getenv func(string) string) *flag.FlagSet {
	fs := flag.NewFlagSet("isolate "+s.Runtime, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	defMemory := "4g"
	if s.Runtime == Kubectl {
		defMemory = "4Gi"
	}
	fs.StringVar(&s.Image, "image", getenv(ImageEnv), "the `image` holding the agent (default $"+ImageEnv+")")
	fs.StringVar(&s.Workspace, "workspace", "", "the conversation's workspace `id`: {{AGENTBRIDGE_CONVERSATION_ID}}; empty = a scratch workspace")
	fs.StringVar(&s.CPUs, "cpus", "2", "CPU `limit`")
	fs.StringVar(&s.Memory, "memory", defMemory, "memory `limit`")
	fs.Func("env", "pass the `NAME`d variable from this environment when it is non-empty (repeatable)", func(v string) error {
		if !envName().MatchString(v) {
			return fmt.Errorf("not a variable name: %q", v)
		}
		s.Env = append(s.Env, v)
		return nil
	})
	fs.Func("env-secret", "kubectl: a Secret `name` whose keys become the agent's environment (repeatable)", func(v string) error {
		s.EnvSecret = append(s.EnvSecret, v)
		return nil
	})
	fs.StringVar(&s.Namespace, "namespace", "", "kubectl: the `namespace` (default: the context's)")
	fs.StringVar(&s.Claim, "claim", "agentbridge-workspaces", "kubectl: the ReadWriteMany PersistentVolumeClaim `name` holding the workspaces")
	fs.DurationVar(&s.Deadline, "deadline", 2*time.Hour, "kubectl: the pod's activeDeadlineSeconds, a backstop should the bridge die")
	fs.DurationVar(&s.Grace, "grace", 10*time.Second, "how long the stopped agent may take to exit before SIGKILL; keep it under the profile's kill_grace_secs")
	return fs
}

// runtime checks the runtime word of the command line.
func runtime(args []string) (string, error) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return "", errors.New("isolate: want a runtime first: docker, podman or kubectl")
	}
	switch args[0] {
	case Docker, Podman, Kubectl:
		return args[0], nil
	}
	return "", fmt.Errorf("isolate: unknown runtime %q: want docker, podman or kubectl", args[0])
}

// Parse reads the command line of agentbridge isolate and names the remote
// container or pod: the name the bridge chose for the turn ($NameEnv, see
// Plan), else a fresh one.
func Parse(args []string, stderr io.Writer) (Spec, error) {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		// The flags are the same for every runtime: show them with docker's defaults.
		args = []string{Docker, args[0]}
	}
	rt, err := runtime(args)
	if err != nil {
		return Spec{}, err
	}
	s := Spec{Runtime: rt}
	fs := flagSet(&s, stderr, os.Getenv)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return Spec{}, err
		}
		return Spec{}, errPrinted
	}
	s.Args = fs.Args()
	var problems []string
	if s.Image == "" {
		problems = append(problems, "no image: set "+ImageEnv+" or pass --image")
	}
	if s.Workspace != "" && !slug().MatchString(s.Workspace) {
		problems = append(problems, fmt.Sprintf("--workspace %q is not a conversation id (lowercase letters, digits and '-', at most 40): "+
			"use {{AGENTBRIDGE_CONVERSATION_ID}}, which only agentbridge expands", s.Workspace))
	}
	if len(s.EnvSecret) > 0 && s.Runtime != Kubectl {
		problems = append(problems, "--env-secret is for kubectl; docker and podman take --env")
	}
	if s.Grace < time.Second || s.Deadline < time.Minute {
		problems = append(problems, "--grace must be at least 1s and --deadline at least 1m")
	}
	if len(problems) > 0 {
		return Spec{}, fmt.Errorf("isolate: %s", strings.Join(problems, "; "))
	}
	s.Name, s.Bridge, s.Turn = os.Getenv(NameEnv), os.Getenv(BridgeEnv), os.Getenv(TurnEnv)
	if !remoteName().MatchString(s.Name) || !labelValue().MatchString(s.Bridge) || !labelValue().MatchString(s.Turn) {
		s.Name, s.Bridge, s.Turn = freshName(s.Workspace), "", ""
	}
	return s, nil
}

// errPrinted is a command-line mistake the flag package has already printed.
var errPrinted = errors.New("isolate: bad flags")

var envName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
})

// freshName is a container or pod name for a turn the bridge did not name
// (agentbridge run, or isolate run by hand): unique per turn, so the stop
// command can never hit another turn's, and showing the workspace so an
// operator can tell whose it is.
func freshName(workspace string) string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return name(workspace, hex.EncodeToString(b[:]))
}

// name is ab-WORKSPACE-TURN: at most 60 characters, an RFC 1123 label.
func name(workspace, turn string) string {
	if workspace == "" {
		workspace = "scratch"
	}
	return "ab-" + workspace + "-" + turn
}

var (
	remoteName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^ab-[a-z0-9-]{1,59}$`) })
	labelValue = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]{1,40}$`) })
)

// RunArgv is the client's argv (without the command) that starts the agent
// attached to stdin and stdout. environ is where --env values come from.
func (s Spec) RunArgv(environ func(string) string) []string {
	if s.Runtime == Kubectl {
		return s.kubectlRun(environ)
	}
	argv := []string{"run", "-i", "--rm", "--name", s.Name}
	for _, l := range s.labels() {
		argv = append(argv, "--label", l)
	}
	argv = append(argv,
		"--cpus", s.CPUs, "--memory", s.Memory, "--pids-limit", "1024",
		"--cap-drop", "ALL", "--security-opt", "no-new-privileges",
		"-w", WorkspaceDir, "-e", "HOME="+WorkspaceDir,
	)
	if s.Workspace != "" {
		argv = append(argv, "-v", VolumeName(s.Workspace)+":"+WorkspaceDir)
	} else {
		argv = append(argv, "-v", WorkspaceDir) // anonymous: --rm removes it
	}
	for _, name := range s.Env {
		if environ(name) != "" {
			argv = append(argv, "-e", name) // the client reads the value: it never appears in argv
		}
	}
	argv = append(argv, s.Image)
	return append(argv, s.Args...)
}

// VolumeName is the Docker or Podman volume holding a conversation's
// workspace.
func VolumeName(workspace string) string { return "agentbridge-" + workspace }

// labels are the container's labels, KEY=VALUE.
func (s Spec) labels() []string {
	ws := s.Workspace
	if ws == "" {
		ws = "scratch"
	}
	l := []string{LabelWorkspace + "=" + ws}
	if s.Bridge != "" {
		l = append(l, LabelBridge+"="+s.Bridge, LabelTurn+"="+s.Turn)
	}
	return l
}

// kubectlRun starts a pod per turn. kubectl run has no flags for limits,
// volumes or security settings, so they go in --overrides, merged into the
// generated pod by container name.
func (s Spec) kubectlRun(environ func(string) string) []string {
	env := []map[string]string{{"name": "HOME", "value": WorkspaceDir}}
	for _, name := range s.Env {
		if v := environ(name); v != "" {
			env = append(env, map[string]string{"name": name, "value": v})
		}
	}
	var envFrom []any
	for _, sec := range s.EnvSecret {
		envFrom = append(envFrom, map[string]any{"secretRef": map[string]string{"name": sec}})
	}
	mount := map[string]any{"name": "workspace", "mountPath": WorkspaceDir}
	volume := map[string]any{"name": "workspace", "emptyDir": map[string]any{}}
	if s.Workspace != "" {
		mount["subPath"] = s.Workspace
		volume = map[string]any{"name": "workspace", "persistentVolumeClaim": map[string]string{"claimName": s.Claim}}
	}
	limits := map[string]string{"cpu": s.CPUs, "memory": s.Memory}
	container := map[string]any{
		"name":  s.Name,
		"stdin": true, "stdinOnce": true, "tty": false,
		"workingDir":   WorkspaceDir,
		"env":          env,
		"resources":    map[string]any{"requests": limits, "limits": limits},
		"volumeMounts": []any{mount},
		"securityContext": map[string]any{
			"allowPrivilegeEscalation": false,
			"capabilities":             map[string]any{"drop": []string{"ALL"}},
		},
	}
	if envFrom != nil {
		container["envFrom"] = envFrom
	}
	pod := map[string]any{
		"apiVersion": "v1",
		"spec": map[string]any{
			"activeDeadlineSeconds":         int(s.Deadline.Seconds()),
			"terminationGracePeriodSeconds": int(s.Grace.Seconds()),
			"automountServiceAccountToken":  false,
			"enableServiceLinks":            false,
			"securityContext": map[string]any{
				"runAsNonRoot": true, "fsGroup": AgentUID,
				"seccompProfile": map[string]string{"type": "RuntimeDefault"},
			},
			"containers": []any{container},
			"volumes":    []any{volume},
		},
	}
	overrides, err := json.Marshal(pod)
	if err != nil {
		panic(err) // maps of strings and numbers always marshal
	}
	argv := []string{"run", s.Name}
	argv = append(argv, s.namespaceArgs()...)
	argv = append(argv, "--image", s.Image, "--restart", "Never", "--rm", "-i", "--quiet",
		"--labels", "app.kubernetes.io/name=agentbridge-agent,"+strings.ReplaceAll(strings.Join(s.labels(), ","), "io.agentbridge.", "io.agentbridge/"),
		"--pod-running-timeout", "5m",
		"--override-type", "strategic", "--overrides", string(overrides), "--")
	return append(argv, s.Args...)
}

func (s Spec) namespaceArgs() []string {
	if s.Namespace == "" {
		return nil
	}
	return []string{"--namespace", s.Namespace}
}

// StopArgv is the client's argv that stops the remote agent — SIGTERM,
// Grace, SIGKILL — and removes it; it succeeds or fails harmlessly when the
// container or pod is already gone.
func (s Spec) StopArgv() []string {
	grace := strconv.Itoa(int(s.Grace.Seconds()))
	if s.Runtime == Kubectl {
		argv := []string{"delete", "pod", s.Name}
		argv = append(argv, s.namespaceArgs()...)
		return append(argv, "--grace-period", grace, "--ignore-not-found", "--wait")
	}
	return []string{"stop", "--time", grace, s.Name}
}

// Run starts the remote agent and relays until it ends, returning the
// client's exit status (the agent's, for docker run and kubectl run). When
// ctx ends first — the agentbridge command's ctx ends on SIGTERM or SIGINT —
// it stops the remote agent and returns 143.
func Run(ctx context.Context, s Spec, stdin io.Reader, stdout, stderr io.Writer) int {
	if ctx.Err() != nil {
		return 143 // stopped before anything started
	}
	client := exec.Command(s.Runtime, s.RunArgv(os.Getenv)...)
	// *os.File values are handed to the client as they are: no copy, no
	// re-framing of the NDJSON. Its stderr is copied, and its end kept to
	// tell a failed start from a failed agent.
	errTail := &tail.Buffer{Max: 4096}
	client.Stdin, client.Stdout, client.Stderr = stdin, stdout, io.MultiWriter(stderr, errTail)
	// With anything else (tests) exec copies, and Wait must not wait on a
	// stdin nobody closes once the client has exited.
	client.WaitDelay = time.Second
	if err := client.Start(); err != nil {
		startFailure{
			user:   fmt.Sprintf("%s, which runs the agent's container, could not start", s.Runtime),
			detail: fmt.Sprintf("isolate: start %s: %v", s.Runtime, err),
		}.report(stdout, stderr)
		return 127
	}
	done := make(chan error, 1)
	go func() { done <- client.Wait() }()
	select {
	case err := <-done:
		// The client shares the agent's process group, so the bridge's
		// SIGTERM may end it before this process sees its own: a client
		// killed by a signal means the turn is being stopped, and the
		// remote agent, which no signal reached, must be stopped too.
		var ee *exec.ExitError
		if ctx.Err() == nil && !(errors.As(err, &ee) && signaled(ee)) {
			code := exitStatus(err)
			if f, ok := s.classify(code, errTail.String()); ok {
				f.report(stdout, stderr)
			}
			return code
		}
		s.stop(stderr)
		return 143
	case <-ctx.Done():
	}

	// Stopped. kubectl has had the same SIGTERM and dies, leaving the pod;
	// docker relays it but does not wait for the agent to obey.
	s.stop(stderr)
	// With the remote gone the client ends by itself; if it does not, it
	// is only a client.
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = client.Process.Kill()
		<-done
	}
	return 143
}

func signaled(ee *exec.ExitError) bool {
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}

// stop runs the runtime's stop command for the remote agent and waits for
// it, bounded. It runs in a process group of its own: the bridge's SIGKILL
// to the agent's group after kill_grace must not cut it short.
func (s Spec) stop(stderr io.Writer) {
	fmt.Fprintf(stderr, "isolate: stopping %s: %s %s\n", s.Name, s.Runtime, strings.Join(s.StopArgv(), " "))
	stop := exec.Command(s.Runtime, s.StopArgv()...)
	stop.Stdout, stop.Stderr = stderr, stderr // docker stop prints the name: not on the agent's stdout
	stop.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := stop.Start(); err != nil {
		fmt.Fprintf(stderr, "isolate: could not stop %s: %v\n", s.Name, err)
	} else {
		stopped := make(chan error, 1)
		go func() { stopped <- stop.Wait() }()
		select {
		case err := <-stopped:
			if err != nil {
				fmt.Fprintf(stderr, "isolate: %s %s: %v\n", s.Runtime, s.StopArgv()[0], err)
			}
		case <-time.After(s.Grace + 30*time.Second):
			fmt.Fprintf(stderr, "isolate: %s %s did not finish; leaving it running\n", s.Runtime, s.StopArgv()[0])
		}
	}
	if s.Runtime == Kubectl {
		return // delete pod has removed it
	}
	// run --rm removes the stopped container only if its client is still
	// there to do it (the bridge's SIGTERM may have ended it), and then
	// after this returns: remove it, with its anonymous volumes, now.
	if _, err := Remove(context.Background(), s.remote()); err != nil {
		fmt.Fprintf(stderr, "isolate: could not remove %s: %v\n", s.Name, err)
	}
}

func (s Spec) remote() Remote {
	return Remote{Runtime: s.Runtime, Name: s.Name, Namespace: s.Namespace}
}

// exitStatus is the client's exit status the way a shell reports it.
func exitStatus(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if signaled(ee) {
			return 128 + int(ee.Sys().(syscall.WaitStatus).Signal())
		}
		return ee.ExitCode()
	}
	return 1
}

// Main is agentbridge isolate: Parse, then Run. It returns the exit status.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	s, err := Parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		f := startFailure{user: "the agent's container is not set up right", detail: err.Error()}
		switch {
		case err == errPrinted:
			f.detail = "isolate: bad flags (above)"
		case strings.Contains(err.Error(), "no image:"):
			f.user = "no image is set for the agent's container"
		}
		f.report(stdout, stderr)
		return 2
	}
	if _, err := exec.LookPath(s.Runtime); err != nil {
		startFailure{
			user:   s.Runtime + " is not on PATH",
			detail: fmt.Sprintf("isolate: %s is not on PATH (%s): install it on the bridge's host, or fix the profile's PATH", s.Runtime, filepath.SplitList(os.Getenv("PATH"))),
		}.report(stdout, stderr)
		return 127
	}
	return Run(ctx, s, stdin, stdout, stderr)
}
