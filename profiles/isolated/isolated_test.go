package isolated_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/core/engine"
	"github.com/agentbridge/agentbridge/core/platformtest"
	"github.com/agentbridge/agentbridge/core/render"
	"github.com/agentbridge/agentbridge/internal/isolate/fakeruntime"
	"github.com/agentbridge/agentbridge/internal/testagent"
	"github.com/agentbridge/agentbridge/store"
)

const image = "agentbridge-agents:test"

// binDir holds the agentbridge binary the profiles run, built once.
var binDir string

// TestMain: the test binary is the fake docker, podman and kubectl (run
// under those names) and, inside the fake containers, the scripted agent;
// the profiles' own command is the real agentbridge binary.
func TestMain(m *testing.M) {
	fakeruntime.Main()
	if os.Getenv(testagent.Env) != "" {
		os.Exit(testagent.Run(os.Stdin, os.Stdout))
	}
	dir, err := os.MkdirTemp("", "agentbridge-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "agentbridge"), "../../cmd/agentbridge")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build agentbridge:", err)
		os.Exit(1)
	}
	binDir = dir
	code := 0
	func() {
		defer os.RemoveAll(dir)
		defer func() {
			if err := goleak.Find(); err != nil {
				fmt.Fprintln(os.Stderr, "goleak:", err)
				code = 1
			}
		}()
		code = m.Run()
	}()
	os.Exit(code)
}

// world is a fake runtime directory and the environment a bridge would
// give the profiles: the fakes and agentbridge on PATH, the image named,
// credentials set.
type world struct {
	dir     string
	environ []string
}

const apiKey = "sk-ant-SECRET-never-on-argv"

func newWorld(t *testing.T) world {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	fakeruntime.Install(t, dir, map[string]fakeruntime.Image{
		// The race detector sleeps 1s at exit by default; agents need not.
		image: {Entrypoint: []string{exe}, Env: []string{testagent.Env + "=1", "GORACE=atexit_sleep_ms=0"}},
	})
	return world{dir: dir, environ: []string{
		"PATH=" + strings.Join([]string{dir, binDir, "/usr/bin", "/bin"}, string(os.PathListSeparator)),
		"HOME=" + t.TempDir(),
		"AGENTBRIDGE_AGENT_IMAGE=" + image,
		"ANTHROPIC_API_KEY=" + apiKey,
		"OPENAI_API_KEY=" + apiKey,
		"GEMINI_API_KEY=" + apiKey,
	}}
}

// runCall is the fake's record of the turn's run (docker run / kubectl run).
func (w world) runCall(t *testing.T) []string {
	t.Helper()
	for _, c := range fakeruntime.Calls(t, w.dir) {
		if len(c) > 1 && c[1] == "run" {
			return c
		}
	}
	t.Fatalf("no run among the calls %q", fakeruntime.Calls(t, w.dir))
	return nil
}

// remoteName is the container's or pod's name in a run call.
func remoteName(call []string) string {
	if call[0] == "kubectl" {
		return call[2]
	}
	return call[slices.Index(call, "--name")+1]
}

// profiles lists the isolated profiles with the ready profile each wraps.
func profiles(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("*/*.yaml")
	if err != nil || len(files) != 8 {
		t.Fatalf("want 4 docker and 4 kubernetes profiles, got %q (%v)", files, err)
	}
	m := map[string]string{}
	for _, f := range files {
		m[f] = filepath.Join("..", strings.TrimSuffix(filepath.Base(f), ".yaml"), "profile.yaml")
	}
	return m
}

// TestProfilesRunTheReadyShimsInTheirWorkspace runs a real turn through each
// isolated profile — the agentbridge binary, the fake client, the agent in
// the "container" — and checks the argv: the same shim and arguments as the
// ready profile, the conversation's own workspace, limits, and no secret
// value on any command line.
func TestProfilesRunTheReadyShimsInTheirWorkspace(t *testing.T) {
	const ws = "slack-0123456789abcdef"
	for file, ready := range profiles(t) {
		t.Run(file, func(t *testing.T) {
			w := newWorld(t)
			p, err := agentproc.LoadProfile(file)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Check(w.environ); err != nil {
				t.Fatalf("the profile could not start: %v", err)
			}
			base, err := agentproc.LoadProfile(ready)
			if err != nil {
				t.Fatal(err)
			}
			if p.Streaming != base.Streaming || p.Permission != base.Permission || p.Timeout != base.Timeout {
				t.Errorf("streaming/permission/timeout %v/%v/%v differ from %s's %v/%v/%v",
					p.Streaming, p.Permission, p.Timeout, ready, base.Streaming, base.Permission, base.Timeout)
			}
			o, err := agentproc.Run(t.Context(), p, agentproc.Turn{Message: "hello from a container", ConversationID: ws},
				agentproc.Options{Environ: w.environ, CollectPartials: true})
			if err != nil || o.ExitCode != 0 || strings.Join(o.Partials, "")+o.Reply != "hello from a container" {
				t.Fatalf("turn: %v, outcome %+v", err, o)
			}
			call := w.runCall(t)
			joined := strings.Join(call, " ")
			if strings.Contains(joined, apiKey) {
				t.Errorf("a secret value is on the command line: %q", call)
			}
			var entry []string // what the container runs
			switch call[0] {
			case "docker":
				entry = call[slices.Index(call, image)+1:]
				for _, want := range []string{"-v agentbridge-" + ws + ":/workspace", "--cpus 2", "--memory 4g", "-w /workspace"} {
					if !strings.Contains(joined, want) {
						t.Errorf("docker run lacks %q: %q", want, call)
					}
				}
				if base.Env["ANTHROPIC_API_KEY"] != "" && !strings.Contains(joined, "-e ANTHROPIC_API_KEY ") {
					t.Errorf("the API key is not passed by name: %q", call)
				}
			case "kubectl":
				entry = call[slices.Index(call, "--")+1:]
				overrides := call[slices.Index(call, "--overrides")+1]
				for _, want := range []string{`"subPath":"` + ws + `"`, `"claimName":"agentbridge-workspaces"`,
					`"limits":{"cpu":"2","memory":"4Gi"}`, `"secretRef":{"name":"agentbridge-agent-keys"}`} {
					if !strings.Contains(overrides, want) {
						t.Errorf("pod overrides lack %s: %s", want, overrides)
					}
				}
				if !slices.Contains(call, "agentbridge-agents") {
					t.Errorf("no namespace: %q", call)
				}
			default:
				t.Fatalf("unexpected client %q", call[0])
			}
			if diff := cmp.Diff(base.Args, entry); diff != "" {
				t.Errorf("the container does not run %s's shim (-ready +isolated):\n%s", ready, diff)
			}
			if n := len(fakeruntime.Running(t, w.dir)); n != 0 {
				t.Errorf("%d remotes left after the turn", n)
			}
		})
	}
}

// TestPermissionRoundTripThroughTheContainer: a permission request comes
// out of the container and the bridge's answer goes back in on the same
// stdin, which stays open (P-STDIN-2), through docker and kubectl alike.
func TestPermissionRoundTripThroughTheContainer(t *testing.T) {
	for _, file := range []string{"docker/claude-code.yaml", "kubernetes/qwen-code.yaml"} {
		t.Run(file, func(t *testing.T) {
			w := newWorld(t)
			p, err := agentproc.LoadProfile(file)
			if err != nil {
				t.Fatal(err)
			}
			var asked []string
			o, err := agentproc.Run(t.Context(), p, agentproc.Turn{Message: "perm", ConversationID: "discord-00ff00ff00ff00ff"}, agentproc.Options{
				Environ:         w.environ,
				CollectPartials: true,
				OnEvent: func(ev agentproc.Event) {
					if ev.Kind == agentproc.EventPermission {
						asked = append(asked, ev.Request.Tool)
						_ = ev.Request.Respond(agentproc.Decision{Allow: true, Message: "from chat"})
					}
				},
			})
			if err != nil || o.ExitCode != 0 || !slices.Equal(asked, []string{"Bash"}) ||
				!strings.Contains(strings.Join(o.Partials, "")+o.Reply, "answer=allow:from chat") {
				t.Fatalf("asked %q, outcome %+v, %v; want the allow to reach the agent", asked, o, err)
			}
		})
	}
}

// harness is an engine with a fake platform and a real bbolt store whose
// one profile is an isolated one.
type harness struct {
	t    *testing.T
	w    world
	eng  *engine.Engine
	plat *platformtest.Platform
	st   *store.Store
	stop context.CancelFunc
	done chan struct{}
	n    atomic.Int64
}

var (
	conv  = core.ConversationKey{Platform: "fake", Workspace: "W1", Channel: "C1", Thread: "T1"}
	alice = core.User{ID: "alice", Name: "Alice"}
)

// newHarness loads file with the stop made quick to watch: a 1s --grace
// (the remote agent ignores SIGTERM, so only the stop's SIGKILL ends it)
// and timeout as the turn's limit.
func newHarness(t *testing.T, file string, timeout time.Duration) *harness {
	t.Helper()
	p, err := agentproc.LoadProfile(file)
	if err != nil {
		t.Fatal(err)
	}
	p.Args[slices.Index(p.Args, "--grace")+1] = "1s"
	p.Timeout = timeout
	h := &harness{t: t, w: newWorld(t), done: make(chan struct{})}
	h.st, err = store.Open(filepath.Join(t.TempDir(), "bridge.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lim := platformtest.DefaultLimits
	lim.EditInterval = 20 * time.Millisecond
	lim.Dialect = render.Plain
	h.plat = platformtest.New("fake", lim)
	h.eng = engine.New(h.st, &engine.Settings{
		Platforms:      map[string]engine.PlatformSettings{"fake": {AllowUsers: []string{"alice"}}},
		Profiles:       map[string]*agentproc.Profile{"isolated": p},
		DefaultProfile: "isolated",
		QueueDepth:     2,
	}, engine.Options{Environ: h.w.environ, TempDir: t.TempDir()})
	handler := h.eng.Handler(h.plat)
	if err := h.eng.Recover(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.stop = cancel
	go func() {
		defer close(h.done)
		_ = h.plat.Run(ctx, handler)
	}()
	<-h.plat.Running()
	t.Cleanup(h.close)
	return h
}

func (h *harness) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h.eng.Shutdown(ctx, 30*time.Second)
	h.stop()
	<-h.done
	h.st.Close()
}

func (h *harness) send(text string) {
	h.plat.Deliver(h.t.Context(), core.Message{Conv: conv, ID: fmt.Sprintf("m%d", h.n.Add(1)), From: alice, Text: text})
}

func (h *harness) waitText(want string) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(h.t.Context(), 60*time.Second)
	defer cancel()
	if !h.plat.Wait(ctx, func() bool { return strings.Contains(strings.Join(h.plat.Texts(conv), "\n"), want) }) {
		h.t.Fatalf("no message contains %q; messages: %q", want, h.plat.Texts(conv))
	}
}

// remote waits for the turn's container or pod and returns its name and
// the pid of the agent in it.
func (h *harness) remote() (string, int) {
	h.t.Helper()
	name := remoteName(h.w.runCall(h.t))
	pid, ok := fakeruntime.Started(h.w.dir, name)
	if !ok || fakeruntime.Gone(pid) {
		h.t.Fatalf("remote %s is not running", name)
	}
	return name, pid
}

// gone checks the remote agent has ended and the runtime's stop command ran.
func (h *harness) gone(name string, pid int) {
	h.t.Helper()
	// The engine posts "stopped" once agentproc.Run returned, which is after
	// the wrapper waited for the stop command: no waiting needed here.
	if !fakeruntime.Gone(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		h.t.Fatalf("the remote agent %d in %s still runs after the turn ended", pid, name)
	}
	if _, ok := fakeruntime.Running(h.t, h.w.dir)[name]; ok {
		h.t.Errorf("%s is still listed by the runtime", name)
	}
	for _, c := range fakeruntime.Calls(h.t, h.w.dir) {
		if (len(c) > 2 && c[1] == "stop" && c[len(c)-1] == name) || (len(c) > 3 && c[1] == "delete" && c[3] == name) {
			return
		}
	}
	h.t.Errorf("no stop or delete of %s among %q", name, fakeruntime.Calls(h.t, h.w.dir))
}

// TestStopTimeoutAndShutdownReachTheRemoteAgent: through the engine, /stop,
// the turn's timeout and bridge shutdown each end the agent inside the
// container or pod — one that ignores SIGTERM, so only the runtime's stop
// command (SIGKILL after --grace) can — and remove it. The run also carries
// the conversation's slug as its workspace.
func TestStopTimeoutAndShutdownReachTheRemoteAgent(t *testing.T) {
	for _, file := range []string{"docker/claude-code.yaml", "kubernetes/claude-code.yaml"} {
		t.Run(file+"/stop", func(t *testing.T) {
			h := newHarness(t, file, time.Minute)
			h.send("ignore-term")
			h.waitText("working")
			name, pid := h.remote()
			if !strings.Contains(name, conv.Slug()) || !strings.Contains(strings.Join(h.w.runCall(t), " "), conv.Slug()) {
				t.Errorf("the run %q does not use the conversation's workspace %s", h.w.runCall(t), conv.Slug())
			}
			h.send("/stop")
			h.waitText("⏹ Stopped.")
			h.gone(name, pid)
		})
		t.Run(file+"/timeout", func(t *testing.T) {
			h := newHarness(t, file, 3*time.Second)
			h.send("ignore-term")
			h.waitText("working")
			name, pid := h.remote()
			h.waitText("timed out")
			h.gone(name, pid)
		})
		t.Run(file+"/shutdown", func(t *testing.T) {
			h := newHarness(t, file, time.Minute)
			h.send("ignore-term")
			h.waitText("working")
			name, pid := h.remote()
			ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
			defer cancel()
			h.eng.Shutdown(ctx, 30*time.Second)
			h.waitText("shutting down")
			h.gone(name, pid)
		})
	}
}

// TestKilledKubectlAloneLeavesThePod is the control: a profile that runs
// kubectl run -i --rm itself, with no wrapper, loses track of the pod when
// the turn is stopped — the killed client deletes nothing. It shows what
// agentbridge isolate is for, and that the fake behaves like kubectl.
func TestKilledKubectlAloneLeavesThePod(t *testing.T) {
	w := newWorld(t)
	p := &agentproc.Profile{
		Command: "kubectl",
		Args:    []string{"run", "ab-bare", "--image", image, "--restart", "Never", "--rm", "-i", "--quiet"},
		Timeout: time.Minute, KillGrace: time.Second, Streaming: true,
	}
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	var pid int
	o, err := agentproc.Run(ctx, p, agentproc.Turn{Message: "ignore-term"}, agentproc.Options{
		Environ: w.environ,
		OnEvent: func(agentproc.Event) { // "working": the agent runs
			pid, _ = fakeruntime.Started(w.dir, "ab-bare")
			stop()
		},
	})
	if err != nil || o.Stopped == nil || pid == 0 {
		t.Fatalf("turn %+v, %v, pid %d; want it stopped while the agent ran", o, err, pid)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	if fakeruntime.Gone(pid) {
		t.Fatal("the remote agent ended with its kubectl: the fake is not like a cluster")
	}
	if _, ok := fakeruntime.Running(t, w.dir)["ab-bare"]; !ok {
		t.Error("the pod is not listed although its agent runs")
	}
	var calls []string
	for _, c := range fakeruntime.Calls(t, w.dir) {
		calls = append(calls, c[1])
	}
	if slices.Contains(calls, "delete") {
		t.Errorf("a delete ran without the wrapper: %q", calls)
	}
}

// TestIsolatedReadmeNamesEveryProfile keeps the README's table true.
func TestIsolatedReadmeNamesEveryProfile(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for file := range profiles(t) {
		if !strings.Contains(string(b), file) {
			t.Errorf("README.md does not mention %s", file)
		}
	}
}
