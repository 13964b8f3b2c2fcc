// Package fakeruntime stands in for the docker, podman and kubectl clients
// in tests: no daemon or cluster exists on the machines they run on. A test
// binary becomes the fake when it is run under one of those names: Install
// links the names to the test binary in a directory the test puts first on
// PATH, and the package's TestMain calls Main, which returns only when the
// binary was not run as a fake.
//
// The fake behaves like the real clients where it matters for stopping a
// turn. `run` starts the image's entrypoint as the "remote" process in a
// session of its own — no child of the bridge's process group, so it
// outlives a killed client as a container or pod does — relays stdin (EOF
// included) and stdout to it, and exits with its status. docker and podman
// relay SIGTERM and SIGINT to it (sig-proxy); kubectl does not and just dies.
// `stop --time N NAME` and `delete pod NAME --grace-period N` send SIGTERM,
// wait N seconds, SIGKILL, and return once the remote is gone. Flags the
// real client would not take are refused with status 125, as docker does.
//
// Every invocation's argv is appended to calls.jsonl in the fake's
// directory; a running remote's pid is in remotes/NAME.pid.
package fakeruntime

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Names are the clients the fake answers to.
var Names = []string{"docker", "podman", "kubectl"}

// Image is what the fake runs for an image: its entrypoint, to which the
// run's arguments are appended, and environment added to the remote's.
type Image struct {
	Entrypoint []string
	Env        []string
}

// Install makes dir a fake runtime directory: docker, podman and kubectl
// linking to the running test binary, and the images it knows. Put dir
// first on PATH.
func Install(t testing.TB, dir string, images map[string]Image) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range Names {
		if err := os.Symlink(exe, filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	b, err := json.Marshal(images)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "images.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "remotes"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// Calls returns the argv of every invocation so far, the client's name
// first.
func Calls(t testing.TB, dir string) [][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "calls.jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var calls [][]string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var argv []string
		if err := json.Unmarshal(sc.Bytes(), &argv); err != nil {
			t.Fatalf("calls.jsonl: %v", err)
		}
		calls = append(calls, argv)
	}
	return calls
}

// Started returns the pid of the remote named name once its run has
// started it, and false if it has not (yet).
func Started(dir, name string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(dir, "remotes", name+".started"))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(string(b))
	return pid, err == nil
}

// Running lists the remotes the fake still holds (name → pid).
func Running(t testing.TB, dir string) map[string]int {
	t.Helper()
	m := map[string]int{}
	entries, err := os.ReadDir(filepath.Join(dir, "remotes"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".pid"); ok {
			if pid, err := readPid(filepath.Join(dir, "remotes", e.Name())); err == nil {
				m[name] = pid
			}
		}
	}
	return m
}

// Gone reports whether the process pid has ended (a zombie has).
func Gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	// pid (comm) STATE ...: comm may hold spaces, so read after the last ')'.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}

// Main runs the fake and exits when the binary was started as docker,
// podman or kubectl; otherwise it returns at once.
func Main() {
	name := filepath.Base(os.Args[0])
	if !slices.Contains(Names, name) {
		return
	}
	path, err := exec.LookPath(name)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fake %s: not on PATH: %v\n", name, err)
		os.Exit(125)
	}
	f := &fake{name: name, dir: filepath.Dir(path)}
	os.Exit(f.main(os.Args[1:]))
}

type fake struct {
	name, dir string
}

func (f *fake) main(args []string) int {
	f.record(args)
	if f.name == "kubectl" {
		switch {
		case len(args) > 0 && args[0] == "run":
			return f.kubectlRun(args[1:])
		case len(args) > 1 && args[0] == "delete" && args[1] == "pod":
			return f.kubectlDelete(args[2:])
		}
	} else {
		switch {
		case len(args) > 0 && args[0] == "run":
			return f.dockerRun(args[1:])
		case len(args) > 0 && args[0] == "stop":
			return f.dockerStop(args[1:])
		case len(args) > 0 && args[0] == "rm":
			return f.dockerRm(args[1:])
		}
	}
	fmt.Fprintf(os.Stderr, "fake %s: unsupported command %q\n", f.name, args)
	return 125
}

func (f *fake) record(args []string) {
	b, _ := json.Marshal(append([]string{f.name}, args...))
	fl, err := os.OpenFile(filepath.Join(f.dir, "calls.jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake:", err)
		os.Exit(125)
	}
	// One write per line: O_APPEND keeps concurrent clients' lines whole.
	_, _ = fl.Write(append(b, '\n'))
	_ = fl.Close()
}

// flags walks argv the way the real client parses it: value flags take the
// next word (or =value), booleans none; anything else starting with '-' is
// refused. It stops at the first positional word, or after "--".
func flags(argv []string, values, bools []string, set func(name, value string)) (rest []string, err error) {
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		if a == "--" {
			return argv[i+1:], nil
		}
		if !strings.HasPrefix(a, "-") {
			return argv[i:], nil
		}
		name, value, hasValue := strings.Cut(a, "=")
		switch {
		case slices.Contains(bools, name):
			set(name, "true")
		case slices.Contains(values, name):
			if !hasValue {
				if i+1 >= len(argv) {
					return nil, fmt.Errorf("flag needs an argument: %s", name)
				}
				i++
				value = argv[i]
			}
			set(name, value)
		default:
			return nil, fmt.Errorf("unknown flag: %s", name)
		}
	}
	return nil, nil
}

// remote is a started run: what the fake needs to know to run the image.
type remote struct {
	name    string
	image   string
	args    []string
	env     []string
	workdir string            // in the container
	mounts  map[string]string // container path → directory here
	sigs    bool              // relay SIGTERM/SIGINT (docker's sig-proxy)
}

func (f *fake) dockerRun(argv []string) int {
	r := remote{mounts: map[string]string{}, sigs: true}
	var interactive, rm bool
	rest, err := flags(argv,
		[]string{"--name", "--label", "--cpus", "--memory", "--pids-limit", "--cap-drop", "--security-opt", "-w", "-e", "-v"},
		[]string{"-i", "--rm"},
		func(n, v string) {
			switch n {
			case "--name":
				r.name = v
			case "-w":
				r.workdir = v
			case "-e":
				if !strings.Contains(v, "=") {
					v += "=" + os.Getenv(v) // as docker does: the value from the client's environment
				}
				r.env = append(r.env, v)
			case "-v":
				src, dst, ok := strings.Cut(v, ":")
				if !ok { // anonymous volume
					src, dst = "anon-"+strconv.Itoa(os.Getpid()), v
				}
				r.mounts[dst] = filepath.Join(f.dir, "volumes", src)
			case "-i":
				interactive = true
			case "--rm":
				rm = true
			}
		})
	if err != nil || len(rest) == 0 || r.name == "" || !interactive || !rm {
		fmt.Fprintf(os.Stderr, "fake docker run: %v (want -i --rm --name NAME ... IMAGE, got %q)\n", err, argv)
		return 125
	}
	r.image, r.args = rest[0], rest[1:]
	return f.run(r)
}

func (f *fake) kubectlRun(argv []string) int {
	if len(argv) == 0 || strings.HasPrefix(argv[0], "-") {
		fmt.Fprintln(os.Stderr, "fake kubectl run: NAME is required")
		return 1
	}
	r := remote{name: argv[0], mounts: map[string]string{}}
	var overrides, restart string
	var stdin, rm bool
	rest, err := flags(argv[1:],
		[]string{"--namespace", "--image", "--restart", "--labels", "--pod-running-timeout", "--override-type", "--overrides"},
		[]string{"--rm", "-i", "--quiet"},
		func(n, v string) {
			switch n {
			case "--image":
				r.image = v
			case "--restart":
				restart = v
			case "--overrides":
				overrides = v
			case "-i":
				stdin = true
			case "--rm":
				rm = true
			}
		})
	if err != nil || r.image == "" || restart != "Never" || !stdin || !rm {
		fmt.Fprintf(os.Stderr, "fake kubectl run: %v (want NAME --image I --restart Never --rm -i, got %q)\n", err, argv)
		return 1
	}
	r.args = rest
	if overrides != "" {
		var pod struct {
			Spec struct {
				Containers []struct {
					Name       string `json:"name"`
					WorkingDir string `json:"workingDir"`
					Env        []struct {
						Name, Value string
					} `json:"env"`
					VolumeMounts []struct {
						Name      string `json:"name"`
						MountPath string `json:"mountPath"`
						SubPath   string `json:"subPath"`
					} `json:"volumeMounts"`
				} `json:"containers"`
				Volumes []struct {
					Name string `json:"name"`
					PVC  *struct {
						ClaimName string `json:"claimName"`
					} `json:"persistentVolumeClaim"`
				} `json:"volumes"`
			} `json:"spec"`
		}
		if err := json.Unmarshal([]byte(overrides), &pod); err != nil {
			fmt.Fprintf(os.Stderr, "fake kubectl run: --overrides: %v\n", err)
			return 1
		}
		for _, c := range pod.Spec.Containers {
			if c.Name != r.name { // strategic merge matches containers by name
				fmt.Fprintf(os.Stderr, "fake kubectl run: override container %q is not the pod's %q\n", c.Name, r.name)
				return 1
			}
			r.workdir = c.WorkingDir
			for _, e := range c.Env {
				r.env = append(r.env, e.Name+"="+e.Value)
			}
			for _, m := range c.VolumeMounts {
				src := "emptydir-" + r.name
				for _, v := range pod.Spec.Volumes {
					if v.Name == m.Name && v.PVC != nil {
						src = filepath.Join("claims", v.PVC.ClaimName, m.SubPath)
					}
				}
				r.mounts[m.MountPath] = filepath.Join(f.dir, "volumes", src)
			}
		}
	}
	return f.run(r)
}

// local maps a container path to the directory here that backs it.
func (r remote) local(p string) string {
	for dst, src := range r.mounts {
		if p == dst || strings.HasPrefix(p, dst+"/") {
			return src + strings.TrimPrefix(p, dst)
		}
	}
	return p
}

func (f *fake) run(r remote) int {
	var images map[string]Image
	b, err := os.ReadFile(filepath.Join(f.dir, "images.json"))
	if err == nil {
		err = json.Unmarshal(b, &images)
	}
	img, ok := images[r.image]
	if err != nil || !ok {
		fmt.Fprintf(os.Stderr, "fake %s: Unable to find image %q (%v)\n", f.name, r.image, err)
		return 125
	}
	for _, dir := range r.mounts {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "fake:", err)
			return 125
		}
	}
	cmd := exec.Command(img.Entrypoint[0], append(slices.Clone(img.Entrypoint[1:]), r.args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	cmd.Env = append(cmd.Env, img.Env...)
	for _, kv := range r.env {
		k, v, _ := strings.Cut(kv, "=")
		cmd.Env = append(cmd.Env, k+"="+r.local(v))
	}
	if r.workdir != "" {
		cmd.Dir = r.local(r.workdir)
	}
	cmd.Stderr = os.Stderr
	// A session of its own: the bridge's signals to the agent's process
	// group do not reach it, as they do not reach a container.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		return 125
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 125
	}
	if r.sigs {
		sig := make(chan os.Signal, 2)
		signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
		go func() {
			for s := range sig {
				if cmd.Process != nil {
					_ = cmd.Process.Signal(s)
				}
			}
		}()
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "fake %s: start %s: %v\n", f.name, r.image, err)
		return 126
	}
	pidFile := filepath.Join(f.dir, "remotes", r.name+".pid")
	pid := []byte(strconv.Itoa(cmd.Process.Pid))
	_ = os.WriteFile(pidFile, pid, 0o644)
	_ = os.WriteFile(filepath.Join(f.dir, "remotes", r.name+".started"), pid, 0o644)
	go func() { // ends with the process if stdin never does
		_, _ = io.Copy(in, os.Stdin)
		_ = in.Close() // the client's stdin ended: so does the container's
	}()
	copied := make(chan struct{})
	go func() {
		_, _ = io.Copy(os.Stdout, out)
		close(copied)
	}()
	<-copied
	err = cmd.Wait()
	_ = os.Remove(pidFile) // --rm, which also takes anonymous volumes and emptyDirs
	for _, dir := range r.mounts {
		if b := filepath.Base(dir); strings.HasPrefix(b, "anon-") || strings.HasPrefix(b, "emptydir-") {
			_ = os.RemoveAll(dir)
		}
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		return 125
	}
	return 0
}

func (f *fake) dockerStop(argv []string) int {
	grace := 10
	rest, err := flags(argv, []string{"--time", "-t"}, nil, func(n, v string) {
		grace, _ = strconv.Atoi(v)
	})
	if err != nil || len(rest) != 1 {
		fmt.Fprintf(os.Stderr, "fake docker stop: %v (got %q)\n", err, argv)
		return 125
	}
	if !f.stop(rest[0], grace) {
		fmt.Fprintf(os.Stderr, "Error response from daemon: No such container: %s\n", rest[0])
		return 1
	}
	fmt.Println(rest[0])
	return 0
}

// dockerRm is rm --force [--volumes] [--time N] NAME: SIGKILL at once
// (docker's rm -f; podman's with --time 0).
func (f *fake) dockerRm(argv []string) int {
	var force bool
	rest, err := flags(argv, []string{"--time"}, []string{"--force", "-f", "--volumes", "-v"}, func(n, v string) {
		force = force || n == "--force" || n == "-f"
	})
	if err != nil || len(rest) != 1 || !force {
		fmt.Fprintf(os.Stderr, "fake %s rm: %v (want --force NAME, got %q)\n", f.name, err, argv)
		return 125
	}
	if !f.stop(rest[0], 0) {
		fmt.Fprintf(os.Stderr, "Error response from daemon: No such container: %s\n", rest[0])
		return 1
	}
	fmt.Println(rest[0])
	return 0
}

func (f *fake) kubectlDelete(argv []string) int {
	if len(argv) == 0 {
		return 1
	}
	name := argv[0]
	grace := 30
	var ignore bool
	_, err := flags(argv[1:], []string{"--namespace", "--grace-period"}, []string{"--ignore-not-found", "--wait", "--force"}, func(n, v string) {
		switch n {
		case "--grace-period":
			grace, _ = strconv.Atoi(v)
		case "--ignore-not-found":
			ignore = true
		}
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "fake kubectl delete: %v\n", err)
		return 1
	}
	if !f.stop(name, grace) {
		if ignore {
			return 0
		}
		fmt.Fprintf(os.Stderr, "Error from server (NotFound): pods %q not found\n", name)
		return 1
	}
	fmt.Printf("pod %q deleted\n", name)
	return 0
}

// stop ends the remote name: SIGTERM, grace seconds, SIGKILL, then waits
// until it is gone. It reports whether there was one.
func (f *fake) stop(name string, grace int) bool {
	pidFile := filepath.Join(f.dir, "remotes", name+".pid")
	pid, err := readPid(pidFile)
	if err != nil {
		return false
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(time.Duration(grace) * time.Second)
	for !Gone(pid) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !Gone(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	for end := time.Now().Add(30 * time.Second); !Gone(pid) && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	_ = os.Remove(pidFile)
	return true
}

func readPid(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}
