package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/agentbridge/agentbridge/core/engine"
	"github.com/agentbridge/agentbridge/internal/isolate"
	"github.com/agentbridge/agentbridge/internal/isolate/enginetest"
)

// These tests run isolated turns through chat and run with a real Podman
// (enginetest): the profile runs `agentbridge isolate podman` (this test
// binary as agentbridge), which runs the scripted agent in a container.

// isolatedProfile writes a profile running the test agent's image through
// podman, with timeout_secs and image as given.
func isolatedProfile(t *testing.T, e enginetest.Engine, image string, timeout int) string {
	t.Helper()
	env := "  GORACE: atexit_sleep_ms=0\n"
	if e.Conf != "" {
		env += "  CONTAINERS_CONF: " + e.Conf + "\n"
	}
	// Every chat is the same console conversation: a workspace of the
	// test's own keeps parallel tests' volumes apart.
	var b [4]byte
	rand.Read(b[:])
	ws := "it-" + hex.EncodeToString(b[:])
	t.Cleanup(func() { e.RemoveVolume(isolate.VolumeName(ws)) })
	imageArg := ""
	if image != "" {
		imageArg = fmt.Sprintf("--image, %q, ", image)
	}
	body := fmt.Sprintf(`command: agentbridge
args: [isolate, podman, %s--workspace, %s, --grace, 1s, --, agent]
env:
%sstreaming: true
timeout_secs: %d
kill_grace_secs: 5
`, imageArg, ws, env, timeout)
	path := filepath.Join(t.TempDir(), "isolated.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// bridgeContainers lists the containers of the chat whose store is store.
func bridgeContainers(t *testing.T, e enginetest.Engine, store string) []string {
	return e.List(t, isolate.LabelBridge+"="+engine.BridgeID(store))
}

// split returns the conversation's named workspace volume among a
// container's mounts, and the others (anonymous).
func split(t *testing.T, mounts []string) (named string, anon []string) {
	t.Helper()
	for _, m := range mounts {
		if strings.HasPrefix(m, "agentbridge-") {
			named = m
		} else {
			anon = append(anon, m)
		}
	}
	if named == "" || len(anon) != 1 {
		t.Fatalf("mounts %q: want the workspace and one anonymous volume", mounts)
	}
	return named, anon
}

// TestIsolatedCrashThenRestart: /stop removes the turn's container; a
// bridge killed with SIGKILL mid-turn leaves its container running, and
// the next start removes it — with its anonymous volume, keeping the
// conversation's workspace, whose notes the next turn still reads.
func TestIsolatedCrashThenRestart(t *testing.T) {
	t.Parallel()
	e := enginetest.Podman(t)
	state := t.TempDir()
	store := filepath.Join(state, "chat.db")
	prof := isolatedProfile(t, e, e.Image, 120)
	c := startChat(t, state, "--profile", prof, "--store", store)
	c.say("note:one")
	c.waitFor("notes: one", 1)

	c.say("hang")
	c.waitFor("working", 1)
	running := bridgeContainers(t, e, store)
	if len(running) != 1 {
		t.Fatalf("containers of the bridge: %q, want the turn's", running)
	}
	workspace, _ := split(t, e.Mounts(t, running[0]))
	c.say("/stop")
	c.waitFor("Stopped.", 1)
	if left := bridgeContainers(t, e, store); len(left) != 0 {
		t.Errorf("after /stop the containers %q are left", left)
	}

	// The stopped reply may show "working" again with its notice: count
	// from here.
	seen := strings.Count(c.output(), "working")
	c.say("hang")
	c.waitFor("working", seen+1)
	running = bridgeContainers(t, e, store)
	if len(running) != 1 {
		t.Fatalf("containers of the bridge: %q, want the turn's", running)
	}
	_, anon := split(t, e.Mounts(t, running[0]))
	c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.ended
	c.cmd.Wait()
	if !e.Exists(t, running[0]) {
		t.Fatalf("container %s went with the killed bridge: this test no longer shows a crash", running[0])
	}

	// Recover removes it before it tells the chat the turn was interrupted.
	c2 := startChat(t, state, "--profile", prof, "--store", store)
	c2.waitFor("The bridge restarted", 1)
	if e.Exists(t, running[0]) {
		t.Errorf("container %s of the interrupted turn still there after the restart", running[0])
	}
	vols := e.Volumes(t)
	if slices.Contains(vols, anon[0]) {
		t.Errorf("its anonymous volume %s is left", anon[0])
	}
	if !slices.Contains(vols, workspace) {
		t.Fatalf("the conversation's workspace %s is gone", workspace)
	}
	c2.say("note:two")
	c2.waitFor("notes: one two", 1)
	c2.quit()
	if left := bridgeContainers(t, e, store); len(left) != 0 {
		t.Errorf("containers %q left after the chat ended", left)
	}
}

// TestIsolatedTimeoutAndShutdown: the turn's timeout, and the bridge
// stopping (SIGTERM), each stop and remove the container.
func TestIsolatedTimeoutAndShutdown(t *testing.T) {
	t.Parallel()
	e := enginetest.Podman(t)
	for _, how := range []string{"timeout", "shutdown"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			state := t.TempDir()
			store := filepath.Join(state, "chat.db")
			timeout := 120
			if how == "timeout" {
				timeout = 3
			}
			c := startChat(t, state, "--profile", isolatedProfile(t, e, e.Image, timeout), "--store", store)
			c.say("ignore-term")
			c.waitFor("working", 1)
			running := bridgeContainers(t, e, store)
			if len(running) != 1 {
				t.Fatalf("containers of the bridge: %q, want the turn's", running)
			}
			split(t, e.Mounts(t, running[0]))
			if how == "timeout" {
				c.waitFor("timed out", 1)
				c.quit()
			} else {
				c.cmd.Process.Signal(syscall.SIGTERM)
				<-c.ended
				c.cmd.Wait()
			}
			if e.Exists(t, running[0]) {
				t.Errorf("container %s still there after the %s", running[0], how)
			}
		})
	}
}

// TestIsolatedStartFailures: each way an isolated agent cannot start reaches
// run --json's error field (and the chat) as one line saying the bridge is
// misconfigured, not as an exit status.
func TestIsolatedStartFailures(t *testing.T) {
	t.Parallel()
	noEngine := t.TempDir() // a PATH without podman
	for _, tc := range []struct {
		name, image, path, want string
		engine                  bool
	}{
		{"no image", "", "", "The bridge is misconfigured: no image is set for the agent's container (the operator has been told)", false},
		{"no engine", "img:1", noEngine, "The bridge is misconfigured: podman is not on PATH (the operator has been told)", false},
		{"image missing", "localhost/agentbridge-no-such-image:0", "",
			`The bridge is misconfigured: the agent image "localhost/agentbridge-no-such-image:0" is not available to podman (the operator has been told)`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var e enginetest.Engine
			if tc.engine {
				e = enginetest.Podman(t)
			}
			cmd := agentbridgeCommand("run", "--profile", isolatedProfile(t, e, tc.image, 60), "--json", "hello")
			cmd.Env = append(cmd.Env, isolate.ImageEnv+"=")
			if tc.path != "" {
				cmd.Env = append(cmd.Env, "PATH="+tc.path)
			}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			_ = cmd.Run()
			var got runJSON
			if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
				t.Fatalf("run --json printed %q (%v); stderr %q", stdout.String(), err, stderr.String())
			}
			if got.Error != tc.want {
				t.Errorf("error %q, want %q", got.Error, tc.want)
			}
		})
	}
	t.Run("chat", func(t *testing.T) {
		t.Parallel()
		e := enginetest.Podman(t)
		state := t.TempDir()
		c := startChat(t, state, "--profile", isolatedProfile(t, e, "localhost/agentbridge-no-such-image:0", 60), "--store", filepath.Join(state, "chat.db"))
		c.say("hello")
		c.waitFor(`The bridge is misconfigured: the agent image "localhost/agentbridge-no-such-image:0" is not available to podman (the operator has been told)`, 1)
		c.quit()
	})
}

// TestIsolatedValidateAndCheck: validate names the isolated profile whose
// image is not configured or not on this host, and check refuses to probe
// it with the same words; a profile whose image is there passes both.
func TestIsolatedValidateAndCheck(t *testing.T) {
	t.Parallel()
	e := enginetest.Podman(t)
	dir := t.TempDir()
	profs := map[string]string{
		"good":    isolatedProfile(t, e, e.Image, 60),
		"missing": isolatedProfile(t, e, "localhost/agentbridge-no-such-image:0", 60),
		"unset":   isolatedProfile(t, e, "", 60),
	}
	cfg := filepath.Join(dir, "config.yaml")
	body := "default_profile: good\nprofiles:\n"
	for name, path := range profs {
		body += fmt.Sprintf("  %s: %s\n", name, path)
	}
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	_ = run(t.Context(), []string{"validate", cfg}, nil, &stdout, &stderr)
	want := map[string]string{
		"missing": `profile missing: it runs its agent through podman: podman has no image "localhost/agentbridge-no-such-image:0"`,
		"unset":   "profile unset: it runs its agent through podman: no image: set AGENTBRIDGE_AGENT_IMAGE or pass --image",
	}
	for _, w := range want {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("validate said:\n%s\nwant %q", stderr.String(), w)
		}
	}
	if strings.Contains(stderr.String(), "profile good") {
		t.Errorf("validate warns of the good profile:\n%s", stderr.String())
	}
	for name, path := range profs {
		if name == "good" {
			continue
		}
		var stdout, stderr bytes.Buffer
		err := run(t.Context(), []string{"check", path}, nil, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(want[name], "profile "+name+": ")) || !strings.Contains(err.Error(), path) {
			t.Errorf("check %s: %v; want %q naming the profile", name, err, want[name])
		}
	}
}
