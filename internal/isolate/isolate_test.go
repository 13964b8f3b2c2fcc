package isolate_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge/internal/isolate"
	"github.com/agentbridge/agentbridge/internal/isolate/fakeruntime"
	"github.com/agentbridge/agentbridge/internal/testagent"
)

const image = "agentbridge-agents:test"

// fakeDir installs the fake runtimes first on PATH; the image runs the
// test binary as the scripted agent, "cat" runs /bin/cat.
func fakeDir(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	fakeruntime.Install(t, dir, map[string]fakeruntime.Image{
		image: {Entrypoint: []string{exe}, Env: []string{testagent.Env + "=1"}},
		"cat": {Entrypoint: []string{"cat"}},
	})
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return dir
}

func parse(t *testing.T, args ...string) isolate.Spec {
	t.Helper()
	s, err := isolate.Parse(args, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestDockerArgv pins what a docker or podman turn runs: the limits, the
// conversation's volume, only the names of the variables (docker reads
// their values), and the stop command.
func TestDockerArgv(t *testing.T) {
	for _, rt := range []string{isolate.Docker, isolate.Podman} {
		s := parse(t, rt, "--image", "img:1", "--workspace", "slack-0123456789abcdef", "--cpus", "1.5", "--memory", "2g",
			"--env", "ANTHROPIC_API_KEY", "--env", "UNSET_ONE", "--grace", "7s", "--", "shim", "claude")
		if !strings.HasPrefix(s.Name, "ab-slack-0123456789abcdef-") || len(s.Name) != len("ab-slack-0123456789abcdef-")+16 {
			t.Errorf("name %q", s.Name)
		}
		want := []string{"run", "-i", "--rm", "--name", s.Name, "--label", "io.agentbridge.workspace=slack-0123456789abcdef",
			"--cpus", "1.5", "--memory", "2g", "--pids-limit", "1024", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
			"-w", "/workspace", "-e", "HOME=/workspace", "-v", "agentbridge-slack-0123456789abcdef:/workspace",
			"-e", "ANTHROPIC_API_KEY", "img:1", "shim", "claude"}
		got := s.RunArgv(env(map[string]string{"ANTHROPIC_API_KEY": "sk-secret"}))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s run argv (-want +got):\n%s", rt, diff)
		}
		if strings.Contains(strings.Join(got, " "), "sk-secret") {
			t.Errorf("a secret value is on the command line: %q", got)
		}
		if diff := cmp.Diff([]string{"stop", "--time", "7", s.Name}, s.StopArgv()); diff != "" {
			t.Errorf("%s stop argv (-want +got):\n%s", rt, diff)
		}
	}
	t.Setenv(isolate.ImageEnv, "img:from-env")
	s := parse(t, "docker", "--", "shim", "codex")
	if s.Image != "img:from-env" {
		t.Errorf("image %q, want $%s", s.Image, isolate.ImageEnv)
	}
	if got := s.RunArgv(env(nil)); !strings.HasPrefix(s.Name, "ab-scratch-") || !contains(got, "-v", "/workspace") {
		t.Errorf("without a workspace: name %q argv %q; want a scratch anonymous volume", s.Name, got)
	}
}

// TestPlan: the bridge names a turn's container before it starts, from the
// profile's args and the turn, and the wrapper it runs with Plan's
// environment uses that name and labels the container with the bridge and
// the turn; the stop and the removal after a crash name it too.
func TestPlan(t *testing.T) {
	args := []string{"isolate", "podman", "--image", "img:1", "--workspace", "{{AGENTBRIDGE_CONVERSATION_ID}}", "--grace", "7s", "--", "shim", "claude"}
	r, planEnv, ok := isolate.Plan(args, "slack-0123456789abcdef", "00ff00ff00ff00ff", "a1b2c3d4e5f6")
	wantR := isolate.Remote{Runtime: "podman", Name: "ab-slack-0123456789abcdef-00ff00ff00ff00ff"}
	wantEnv := []string{"AGENTBRIDGE_ISOLATE_NAME=" + wantR.Name, "AGENTBRIDGE_BRIDGE_ID=a1b2c3d4e5f6", "AGENTBRIDGE_TURN_ID=00ff00ff00ff00ff"}
	if !ok || r != wantR || !cmp.Equal(planEnv, wantEnv) {
		t.Fatalf("Plan = %+v, %q, %v; want %+v, %q", r, planEnv, ok, wantR, wantEnv)
	}
	for _, kv := range planEnv {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	s := parse(t, "podman", "--image", "img:1", "--workspace", "slack-0123456789abcdef", "--grace", "7s", "--", "shim", "claude")
	if s.Name != r.Name {
		t.Errorf("the wrapper names its container %q, want the bridge's %q", s.Name, r.Name)
	}
	got := strings.Join(s.RunArgv(env(nil)), " ")
	for _, l := range []string{"--label io.agentbridge.workspace=slack-0123456789abcdef", "--label io.agentbridge.bridge=a1b2c3d4e5f6",
		"--label io.agentbridge.turn=00ff00ff00ff00ff"} {
		if !strings.Contains(got, l) {
			t.Errorf("run argv %q lacks %q", got, l)
		}
	}
	if diff := cmp.Diff([]string{"rm", "--force", "--volumes", "--time", "0", r.Name}, r.RemoveArgv()); diff != "" {
		t.Errorf("podman removal (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"rm", "--force", "--volumes", r.Name}, isolate.Remote{Runtime: "docker", Name: r.Name}.RemoveArgv()); diff != "" {
		t.Errorf("docker removal (-want +got):\n%s", diff)
	}
	k, _, ok := isolate.Plan([]string{"isolate", "kubectl", "--namespace", "agents", "--", "shim", "gemini"}, "", "00ff00ff00ff00ff", "a1b2c3d4e5f6")
	if want := (isolate.Remote{Runtime: "kubectl", Name: "ab-scratch-00ff00ff00ff00ff", Namespace: "agents"}); !ok || k != want {
		t.Errorf("kubectl Plan = %+v, %v; want %+v", k, ok, want)
	}
	if diff := cmp.Diff([]string{"delete", "pod", k.Name, "--namespace", "agents", "--ignore-not-found", "--grace-period", "0", "--force", "--wait=false"}, k.RemoveArgv()); diff != "" {
		t.Errorf("kubectl removal (-want +got):\n%s", diff)
	}
	for _, a := range [][]string{{"shim", "claude"}, {"isolate", "lxc"}, {"isolate", "docker", "--bogus"}} {
		if _, _, ok := isolate.Plan(a, "", "00ff00ff00ff00ff", "a1b2c3d4e5f6"); ok {
			t.Errorf("Plan(%q) planned a container", a)
		}
	}
}

// TestKubectlArgv pins the pod a turn runs in: limits, the workspace as a
// sub-directory of the shared claim, credentials from Secrets, a deadline
// and grace, no service-account token, and the delete that stops it.
func TestKubectlArgv(t *testing.T) {
	s := parse(t, "kubectl", "--image", "img:1", "--workspace", "discord-00ff00ff00ff00ff", "--namespace", "agents",
		"--cpus", "2", "--memory", "3Gi", "--env", "DISABLE_TELEMETRY", "--env-secret", "agent-keys",
		"--claim", "ws", "--deadline", "45m", "--grace", "10s", "--", "shim", "gemini")
	got := s.RunArgv(env(map[string]string{"DISABLE_TELEMETRY": "1"}))
	i := indexOf(got, "--overrides")
	if i < 0 {
		t.Fatalf("no --overrides in %q", got)
	}
	overrides := got[i+1]
	got[i+1] = "JSON"
	want := []string{"run", s.Name, "--namespace", "agents", "--image", "img:1", "--restart", "Never", "--rm", "-i", "--quiet",
		"--labels", "app.kubernetes.io/name=agentbridge-agent,io.agentbridge/workspace=discord-00ff00ff00ff00ff",
		"--pod-running-timeout", "5m", "--override-type", "strategic", "--overrides", "JSON", "--", "shim", "gemini"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("run argv (-want +got):\n%s", diff)
	}
	var pod map[string]any
	if err := json.Unmarshal([]byte(overrides), &pod); err != nil {
		t.Fatal(err)
	}
	wantPod := map[string]any{
		"apiVersion": "v1",
		"spec": map[string]any{
			"activeDeadlineSeconds": 2700.0, "terminationGracePeriodSeconds": 10.0,
			"automountServiceAccountToken": false, "enableServiceLinks": false,
			"securityContext": map[string]any{"runAsNonRoot": true, "fsGroup": 10001.0,
				"seccompProfile": map[string]any{"type": "RuntimeDefault"}},
			"containers": []any{map[string]any{
				"name": s.Name, "stdin": true, "stdinOnce": true, "tty": false, "workingDir": "/workspace",
				"env": []any{
					map[string]any{"name": "HOME", "value": "/workspace"},
					map[string]any{"name": "DISABLE_TELEMETRY", "value": "1"},
				},
				"envFrom": []any{map[string]any{"secretRef": map[string]any{"name": "agent-keys"}}},
				"resources": map[string]any{
					"requests": map[string]any{"cpu": "2", "memory": "3Gi"},
					"limits":   map[string]any{"cpu": "2", "memory": "3Gi"},
				},
				"volumeMounts":    []any{map[string]any{"name": "workspace", "mountPath": "/workspace", "subPath": "discord-00ff00ff00ff00ff"}},
				"securityContext": map[string]any{"allowPrivilegeEscalation": false, "capabilities": map[string]any{"drop": []any{"ALL"}}},
			}},
			"volumes": []any{map[string]any{"name": "workspace", "persistentVolumeClaim": map[string]any{"claimName": "ws"}}},
		},
	}
	if diff := cmp.Diff(wantPod, pod); diff != "" {
		t.Errorf("pod overrides (-want +got):\n%s", diff)
	}
	wantStop := []string{"delete", "pod", s.Name, "--namespace", "agents", "--grace-period", "10", "--ignore-not-found", "--wait"}
	if diff := cmp.Diff(wantStop, s.StopArgv()); diff != "" {
		t.Errorf("stop argv (-want +got):\n%s", diff)
	}
}

func TestParseRefuses(t *testing.T) {
	t.Setenv(isolate.ImageEnv, "")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "want a runtime first"},
		{[]string{"lxc", "--image", "i"}, `unknown runtime "lxc"`},
		{[]string{"docker", "--", "shim"}, "no image: set AGENTBRIDGE_AGENT_IMAGE or pass --image"},
		{[]string{"docker", "--image", "i", "--workspace", "{{AGENTBRIDGE_CONVERSATION_ID}}"}, "not a conversation id"},
		{[]string{"docker", "--image", "i", "--workspace", "Has_Upper"}, "not a conversation id"},
		{[]string{"docker", "--image", "i", "--env-secret", "s"}, "--env-secret is for kubectl"},
		{[]string{"kubectl", "--image", "i", "--grace", "0s"}, "--grace must be at least 1s"},
	} {
		_, err := isolate.Parse(tt.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q) = %v, want %q", tt.args, err, tt.want)
		}
	}
	var stderr bytes.Buffer
	if code := isolate.Main(t.Context(), []string{"docker", "--bogus"}, nil, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), "bogus") {
		t.Errorf("bad flag: exit %d, %q", code, stderr.String())
	}
	if code := isolate.Main(t.Context(), []string{"docker", "-h"}, nil, io.Discard, &stderr); code != 0 || !strings.Contains(stderr.String(), "usage: agentbridge isolate") {
		t.Errorf("-h: exit %d, %q", code, stderr.String())
	}
}

// TestRelayIsByteExact: the client gets the wrapper's stdin and stdout, so
// NDJSON (long lines, non-ASCII, a line without its newline) arrives as
// written, and the remote's exit status is the wrapper's.
func TestRelayIsByteExact(t *testing.T) {
	dir := fakeDir(t)
	in := `{"type":"turn","message":"héllo ✓","session_id":"","protocol_version":"0.4"}` + "\n" +
		`{"type":"partial","text":"` + strings.Repeat("x", 200000) + `"}` + "\n" + `{"type":"result","text":"no newline"}`
	for _, rt := range []string{"docker", "kubectl"} {
		s := parse(t, rt, "--image", "cat", "--workspace", "telegram-0123456789abcdef")
		var out bytes.Buffer
		if code := isolate.Run(t.Context(), s, strings.NewReader(in), &out, io.Discard); code != 0 {
			t.Fatalf("%s: exit %d", rt, code)
		}
		if out.String() != in {
			t.Errorf("%s: relayed %d bytes, want the %d written, unchanged", rt, out.Len(), len(in))
		}
	}
	if n := len(fakeruntime.Running(t, dir)); n != 0 {
		t.Errorf("%d remotes left after their turns ended", n)
	}
}

// TestAgentTurnAndExitStatus: a real agent turn through each client, and a
// failing agent's status comes back.
func TestAgentTurnAndExitStatus(t *testing.T) {
	fakeDir(t)
	for _, rt := range []string{"docker", "podman", "kubectl"} {
		for _, tc := range []struct {
			msg, want string
			code      int
		}{{"hello there", `" there"`, 0}, {"fail", "partial before failing", 1}} {
			s := parse(t, rt, "--image", image, "--workspace", "slack-0123456789abcdef", "--", "shim", "claude")
			var out bytes.Buffer
			turn := `{"type":"turn","message":"` + tc.msg + `","session_id":"","protocol_version":"0.4"}` + "\n"
			code := isolate.Run(t.Context(), s, strings.NewReader(turn), &out, io.Discard)
			if code != tc.code || !strings.Contains(out.String(), tc.want) {
				t.Errorf("%s %q: exit %d, output %q; want %d with %s", rt, tc.msg, code, out.String(), tc.code, tc.want)
			}
		}
	}
}

// TestStopReachesRemote: when the wrapper's ctx ends (SIGTERM in the
// binary) it runs the runtime's stop command, and the remote agent is gone
// before Run returns — also one that ignores SIGTERM, which only the stop
// command's SIGKILL after --grace ends.
func TestStopReachesRemote(t *testing.T) {
	dir := fakeDir(t)
	for _, rt := range []string{"docker", "podman", "kubectl"} {
		for _, verb := range []string{"hang", "ignore-term"} {
			t.Run(rt+"/"+verb, func(t *testing.T) {
				s := parse(t, rt, "--image", image, "--workspace", "slack-0123456789abcdef", "--grace", "1s", "--", "shim", "claude")
				// Files, as the bridge hands the agent: the client gets them as they are.
				stdinR, stdinW, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				defer stdinW.Close()
				defer stdinR.Close()
				outR, outW, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				defer outR.Close()
				ctx, stop := context.WithCancel(t.Context())
				defer stop()
				done := make(chan int, 1)
				go func() {
					done <- isolate.Run(ctx, s, stdinR, outW, io.Discard)
					outW.Close()
				}()
				if _, err := stdinW.Write([]byte(`{"type":"turn","message":"` + verb + `","session_id":"","protocol_version":"0.4"}` + "\n")); err != nil {
					t.Fatal(err)
				}
				// "working" means the agent runs and handles SIGTERM.
				if err := outR.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
					t.Fatal(err)
				}
				if line, err := bufio.NewReader(outR).ReadString('\n'); err != nil || !strings.Contains(line, "working") {
					t.Fatalf("first line %q, %v; want the agent working", line, err)
				}
				pid, ok := fakeruntime.Started(dir, s.Name)
				if !ok || fakeruntime.Gone(pid) {
					t.Fatalf("remote %s not running (pid %d)", s.Name, pid)
				}
				stop()
				select {
				case code := <-done:
					if code != 143 {
						t.Errorf("exit %d, want 143", code)
					}
				case <-time.After(60 * time.Second):
					t.Fatal("Run did not return after the stop")
				}
				if !fakeruntime.Gone(pid) {
					t.Errorf("remote agent %d still runs after Run returned", pid)
				}
				if _, ok := fakeruntime.Running(t, dir)[s.Name]; ok {
					t.Errorf("remote %s still listed", s.Name)
				}
				if !called(fakeruntime.Calls(t, dir), append([]string{rt}, s.StopArgv()...)) {
					t.Errorf("no %s %q among the calls", rt, s.StopArgv())
				}
			})
		}
	}
}

// TestMissingRuntime: without the client on PATH the turn fails to start
// (127) with a plain reason.
func TestMissingRuntime(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	var stderr bytes.Buffer
	code := isolate.Main(t.Context(), []string{"kubectl", "--image", "i", "--", "shim", "claude"}, nil, io.Discard, &stderr)
	if code != 127 || !strings.Contains(stderr.String(), "kubectl is not on PATH") {
		t.Errorf("exit %d, %q", code, stderr.String())
	}
}

// TestRealDockerAcceptsTheArgv: the real docker client, where installed,
// parses the argv (it fails only for want of a daemon, not for a flag).
func TestRealDockerAcceptsTheArgv(t *testing.T) {
	path, err := exec.LookPath("docker")
	if err != nil {
		t.Skip("no docker client installed")
	}
	s := parse(t, "docker", "--image", "agentbridge-agents:test", "--workspace", "slack-0123456789abcdef", "--env", "HOME", "--", "shim", "claude")
	sock := filepath.Join(t.TempDir(), "no-daemon.sock")
	for _, argv := range [][]string{s.RunArgv(os.Getenv), s.StopArgv()} {
		cmd := exec.Command(path, argv...)
		cmd.Env = append(os.Environ(), "DOCKER_HOST=unix://"+sock, "DOCKER_CONFIG="+t.TempDir())
		out, _ := cmd.CombinedOutput()
		msg := strings.ToLower(string(out))
		if strings.Contains(msg, "unknown flag") || strings.Contains(msg, "invalid") || strings.Contains(msg, "usage:") ||
			!strings.Contains(msg, "daemon") {
			t.Errorf("docker %q:\n%s\nwant only the missing daemon refused", argv[0], out)
		}
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func contains(s []string, a, b string) bool {
	i := indexOf(s, a)
	for i >= 0 && i+1 < len(s) {
		if s[i+1] == b {
			return true
		}
		j := indexOf(s[i+1:], a)
		if j < 0 {
			return false
		}
		i += 1 + j
	}
	return false
}

func called(calls [][]string, want []string) bool {
	for _, c := range calls {
		if cmp.Equal(c, want) {
			return true
		}
	}
	return false
}

// TestStartFailuresAreErrorEvents: no image configured and no engine on
// PATH reach the chat as the turn's error event (P-ERR-1) in one line,
// not as an exit status; the detail is on stderr, the bridge's log.
func TestStartFailuresAreErrorEvents(t *testing.T) {
	t.Setenv(isolate.ImageEnv, "")
	t.Setenv("PATH", t.TempDir())
	for _, tc := range []struct {
		args         []string
		code         int
		want, detail string
	}{
		{[]string{"podman", "--", "shim", "claude"}, 2,
			"The bridge is misconfigured: no image is set for the agent's container (the operator has been told)", "no image: set AGENTBRIDGE_AGENT_IMAGE or pass --image"},
		{[]string{"podman", "--image", "img:1", "--", "shim", "claude"}, 127,
			"The bridge is misconfigured: podman is not on PATH (the operator has been told)", "isolate: podman is not on PATH"},
	} {
		var out, errb bytes.Buffer
		code := isolate.Main(t.Context(), tc.args, strings.NewReader(turnLine("hello")), &out, &errb)
		if msg := errorEvent(t, out.String()); code != tc.code || msg != tc.want {
			t.Errorf("%q: exit %d, error %q; want %d, %q", tc.args, code, msg, tc.code, tc.want)
		}
		if !strings.Contains(errb.String(), tc.detail) {
			t.Errorf("%q: stderr %q, want %q", tc.args, errb.String(), tc.detail)
		}
	}
}
