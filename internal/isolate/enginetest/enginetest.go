// Package enginetest gives tests a real container engine: Podman, set up
// as on the project's machines (runc, cgroupfs, explicit ulimits; see
// Conf), and a tiny image built from a local root file system — no
// registry is reached — holding one static binary, the scripted test
// agent (internal/testagent), as its entrypoint. Tests that need it skip,
// loudly, only where no engine can run a container here.
package enginetest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Conf is the containers.conf that lets Debian's podman run containers
// where its defaults cannot: crun fails on these hosts' cgroups, and runc
// cannot raise the default nofile limit without CAP_SYS_RESOURCE.
const Conf = `[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
`

// Engine is a container engine that runs containers here.
type Engine struct {
	Runtime string // the client: "podman"
	// Image runs the test agent: USER 10001, WORKDIR /workspace, an
	// anonymous VOLUME /cache (so a leaked anonymous volume shows).
	Image string
	// Conf is the CONTAINERS_CONF the engine needs here, "" when the
	// host's own settings do; Podman sets it in this process's
	// environment, and a profile must pass it on to its agent.
	Conf string
}

var setup = sync.OnceValues(build)

// Podman returns the engine, set up once per test binary (the image is
// kept between runs, tagged by the agent binary's hash), or skips t with
// the reason no container can run here.
func Podman(t testing.TB) Engine {
	t.Helper()
	e, err := setup()
	if err != nil {
		t.Skipf("SKIPPED: no container engine can run a container here: %v", err)
	}
	return e
}

func build() (Engine, error) {
	e := Engine{Runtime: "podman"}
	if _, err := exec.LookPath(e.Runtime); err != nil {
		return e, fmt.Errorf("podman is not installed (apt-get install podman runc): %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "agentbridge-enginetest-")
	if err != nil {
		return e, err
	}
	defer os.RemoveAll(dir)
	agent := filepath.Join(dir, "agent")
	gobuild := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", agent, "github.com/agentbridge/agentbridge/internal/isolate/testdata/agent")
	gobuild.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := gobuild.CombinedOutput(); err != nil {
		return e, fmt.Errorf("build the static test agent: %v: %s", err, out)
	}
	bin, err := os.ReadFile(agent)
	if err != nil {
		return e, err
	}
	sum := sha256.Sum256(bin)
	e.Image = "localhost/agentbridge-testagent:" + hex.EncodeToString(sum[:6])

	// The host's settings first; this machine's kind needs Conf.
	probe := func() error {
		if exec.CommandContext(ctx, e.Runtime, "image", "exists", e.Image).Run() != nil {
			if err := importImage(ctx, e.Runtime, e.Image, bin); err != nil {
				return err
			}
		}
		run := exec.CommandContext(ctx, e.Runtime, "run", "--rm", "-i", e.Image)
		run.Stdin = strings.NewReader(`{"type":"turn","message":"probe","session_id":"","protocol_version":"0.4"}` + "\n")
		out, err := run.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("probe")) {
			return fmt.Errorf("%s run: %v: %s", e.Runtime, err, lastLine(string(out)))
		}
		return nil
	}
	first := probe()
	if first == nil {
		return e, nil
	}
	conf := filepath.Join(os.TempDir(), "agentbridge-enginetest-containers.conf")
	if err := os.WriteFile(conf, []byte(Conf), 0o644); err != nil {
		return e, err
	}
	prev, had := os.LookupEnv("CONTAINERS_CONF")
	os.Setenv("CONTAINERS_CONF", conf)
	if err := probe(); err != nil {
		if had {
			os.Setenv("CONTAINERS_CONF", prev)
		} else {
			os.Unsetenv("CONTAINERS_CONF")
		}
		return e, fmt.Errorf("with the host's settings: %v; with %s: %w", first, conf, err)
	}
	e.Conf = conf
	return e, nil
}

// importImage makes image from a root file system of one file, /agent.
func importImage(ctx context.Context, runtime, image string, agent []byte) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Unix(0, 0)
	for _, d := range []string{"workspace/", "cache/", "tmp/"} {
		mode := int64(0o755)
		if d == "tmp/" {
			mode = 0o1777
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: mode, Uid: 10001, Gid: 10001, ModTime: mtime}); err != nil {
			return err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "agent", Mode: 0o755, Size: int64(len(agent)), ModTime: mtime}); err != nil {
		return err
	}
	if _, err := tw.Write(agent); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	imp := exec.CommandContext(ctx, runtime, "import",
		"--change", "USER 10001:10001", "--change", "WORKDIR /workspace", "--change", "ENV HOME=/workspace",
		"--change", `ENTRYPOINT ["/agent"]`, "--change", "VOLUME /cache", "-", image)
	imp.Stdin = &buf
	if out, err := imp.CombinedOutput(); err != nil {
		return fmt.Errorf("%s import: %v: %s", runtime, err, lastLine(string(out)))
	}
	return nil
}

// Exists reports whether the engine holds a container named name, running
// or not.
func (e Engine) Exists(t testing.TB, name string) bool {
	t.Helper()
	err := exec.Command(e.Runtime, "container", "exists", name).Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return true
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		return false
	}
	t.Fatalf("%s container exists %s: %v", e.Runtime, name, err)
	return false
}

// List returns the names of the containers (running or not) carrying
// label (KEY=VALUE).
func (e Engine) List(t testing.TB, label string) []string {
	t.Helper()
	out, err := exec.Command(e.Runtime, "ps", "-a", "--filter", "label="+label, "--format", "{{.Names}}").Output()
	if err != nil {
		t.Fatalf("%s ps: %v", e.Runtime, err)
	}
	return strings.Fields(string(out))
}

// Volumes returns the names of the volumes whose name starts with prefix.
func (e Engine) Volumes(t testing.TB) []string {
	t.Helper()
	out, err := exec.Command(e.Runtime, "volume", "ls", "--format", "{{.Name}}").Output()
	if err != nil {
		t.Fatalf("%s volume ls: %v", e.Runtime, err)
	}
	return strings.Fields(string(out))
}

// Mounts returns the volumes a container mounts (named and anonymous).
func (e Engine) Mounts(t testing.TB, name string) []string {
	t.Helper()
	out, err := exec.Command(e.Runtime, "inspect", "--format", "{{range .Mounts}}{{.Name}} {{end}}", name).Output()
	if err != nil {
		t.Fatalf("%s inspect %s: %v", e.Runtime, name, err)
	}
	return strings.Fields(string(out))
}

// RemoveVolume removes a test's named volume (a cleanup).
func (e Engine) RemoveVolume(name string) {
	_ = exec.Command(e.Runtime, "volume", "rm", "--force", name).Run()
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}
