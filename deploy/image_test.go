// Package deploy_test checks the deployment files without a Docker daemon,
// a registry or systemd running: the binary is built the way the Dockerfile
// builds it (deploy/build-binary) and run as the images run it — a non-root
// user, the config read-only in etc/agentbridge, the store in the
// var/lib/agentbridge volume — and the Dockerfile, compose file and unit are
// read for what they must say.
package deploy_test

import (
	"bufio"
	"bytes"
	"context"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"gopkg.in/yaml.v3"

	"github.com/agentbridge/agentbridge/adapters/telegram/telegramtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// nobody is the uid and gid serve runs as in the test, as the images' own
// user would.
const nobody = 65534

// build runs deploy/build-binary, as the Dockerfile's build stage does.
func build(t *testing.T, out, version string) {
	t.Helper()
	cmd := exec.Command("./build-binary", out, version)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("deploy/build-binary: %v\n%s", err, b)
	}
}

// openDir makes a temporary directory every user can enter: t.TempDir's
// are the test's (root's) own.
func openDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// freePort is a loopback port nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// image is the images' file layout under a root: the binary, the config
// directory (root's, read-only to the service) holding the config and
// profiles/, the state volume and HOME (the service user's).
type image struct {
	root, bin, config, state, home string
}

func newImage(t *testing.T, config string) image {
	t.Helper()
	root := openDir(t)
	im := image{
		root:   root,
		bin:    filepath.Join(root, "usr/local/bin/agentbridge"),
		config: filepath.Join(root, "etc/agentbridge/config.yaml"),
		state:  filepath.Join(root, "var/lib/agentbridge"),
		home:   filepath.Join(root, "home/agent"),
	}
	for _, d := range []string{filepath.Dir(im.bin), filepath.Dir(im.config), im.state, im.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	build(t, im.bin, "v0.0.0-imagetest")
	if err := os.WriteFile(im.config, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	// COPY profiles/ /etc/agentbridge/profiles/
	if err := os.CopyFS(filepath.Join(filepath.Dir(im.config), "profiles"), os.DirFS("../profiles")); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{im.state, im.home} { // chown agent:agent
		if err := os.Chown(d, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(im.state, 0o750); err != nil {
		t.Fatal(err)
	}
	return im
}

// command runs the image's binary as its user, in its WORKDIR, with its ENV.
func (im image) command(env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(im.bin, args...)
	cmd.Dir = im.home
	cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + im.home}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	return cmd
}

// TestServeAsNonRootWithTheImagesPaths: the binary built like the images',
// run as a non-root user with the images' paths and deploy/config.yaml,
// answers /healthz through `agentbridge health` (the HEALTHCHECK), answers
// a chat message with its store in the volume, writes nothing beside the
// read-only config, and drains on SIGTERM. Without AGENTBRIDGE_STATE_DIR
// (the images set it) the same config fails as the issue saw: the store
// would go next to the config.
func TestServeAsNonRootWithTheImagesPaths(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run serve as another user")
	}
	const token = "123:IMAGE-TEST-SECRET"
	fake := telegramtest.NewServer(token)
	defer fake.Close()
	addr := freePort(t)

	base, err := os.ReadFile("config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	config := string(base)
	if !strings.Contains(config, `listen: ":9090"`) || !strings.HasSuffix(strings.TrimSpace(config), "# your id: send /whoami to the bot") {
		t.Fatal("deploy/config.yaml changed shape: update this test's edits")
	}
	// The only edits: a free loopback port, and the fake Telegram (its
	// block is the file's last, so the appended key lands in it).
	config = strings.Replace(config, `listen: ":9090"`, `listen: "`+addr+`"`, 1) + "  api_url: " + fake.URL + "\n"
	im := newImage(t, config)
	env := []string{"TELEGRAM_BOT_TOKEN=" + token, "AGENTBRIDGE_DEMO_DELAY=1ms"}

	// The bug the images fix: no state directory, the store beside the config.
	if out, err := im.command(env, "serve", "--config", im.config).CombinedOutput(); err == nil || !strings.Contains(string(out), "permission denied") {
		t.Fatalf("serve without AGENTBRIDGE_STATE_DIR: %v\n%s\nwant it refused a store in the read-only config directory", err, out)
	}

	env = append(env, "AGENTBRIDGE_STATE_DIR="+im.state)
	serve := im.command(env, "serve", "--config", im.config)
	stderr, err := serve.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer serve.Process.Kill()
	var log bytes.Buffer
	serving := make(chan struct{})
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "agentbridge serving") {
				close(serving)
			}
		}
	}()
	select {
	case <-serving:
	case <-time.After(60 * time.Second):
		serve.Process.Kill()
		<-scanned
		t.Fatalf("serve did not start:\n%s", log.String())
	}

	health := im.command(nil, "health", "http://"+addr+"/healthz")
	if out, err := health.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Errorf("agentbridge health: %v, %q", err, out)
	}

	alice := telegramtest.User(123456789, "Alice", "alice")
	fake.Push(telegramtest.PrivateMessage(1, alice, "hello"))
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	for replied := false; !replied; {
		ch := fake.Changed()
		for _, m := range fake.Messages(123456789) {
			replied = replied || strings.Contains(strings.ToLower(m.Text), "hello")
		}
		if !replied {
			select {
			case <-ch:
			case <-ctx.Done():
				t.Fatalf("no reply from the demo agent; messages %+v", fake.Messages(123456789))
			}
		}
	}

	if err := serve.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-scanned
	if err := serve.Wait(); err != nil {
		t.Errorf("serve after SIGTERM: %v\n%s", err, log.String())
	}
	if strings.Contains(log.String(), "IMAGE-TEST-SECRET") {
		t.Error("the token is in serve's log")
	}

	fi, err := os.Stat(filepath.Join(im.state, "agentbridge.db"))
	if err != nil {
		t.Fatalf("no store in the state volume: %v", err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != nobody {
		t.Errorf("the store is owned by uid %d, want %d", st.Uid, nobody)
	}
	entries, err := os.ReadDir(filepath.Dir(im.config))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"config.yaml", "profiles"}) {
		t.Errorf("the config directory holds %q; serve must write nothing there", names)
	}
}

// TestVersionIsStamped: `agentbridge version` of a binary built like the
// images' says the version it was given, and without one, built from a
// committed tree, the commit (never "dev").
func TestVersionIsStamped(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "agentbridge")
	build(t, bin, "v1.2.3")
	if out, err := exec.Command(bin, "version").Output(); err != nil || string(out) != "agentbridge v1.2.3\n" {
		t.Errorf("stamped: %q, %v", out, err)
	}

	build(t, bin, "")
	info, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	rev := regexp.MustCompile(`vcs\.revision=([0-9a-f]{12})`).FindSubmatch(info)
	if rev == nil {
		// Go records the commit only in a git checkout whose .git is a
		// directory: not in a git worktree, an unpacked archive or a
		// docker build (which is why the Dockerfile insists on VERSION).
		t.Skipf("this tree gives no VCS information to the go command:\n%s", info)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil || strings.Contains(string(out), "dev") || !strings.Contains(string(out), string(rev[1])) {
		t.Errorf("built from commit %s: version says %q (%v)", rev[1], out, err)
	}
}

// dockerfile is the Dockerfile split into its stages.
func dockerfile(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	stages := map[string]string{}
	var name string
	for _, line := range strings.Split(string(b), "\n") {
		if m := regexp.MustCompile(`^FROM \S+ AS (\S+)`).FindStringSubmatch(line); m != nil {
			name = m[1]
		}
		if name != "" {
			stages[name] += line + "\n"
		}
	}
	return stages
}

// TestDockerfile: the build stage builds with deploy/build-binary and
// insists on a version; each image pins the CLIs .ci/run installs (agents),
// runs as a non-root user, keeps the store in the volume, checks its health
// with the binary, carries OCI labels and starts under tini.
func TestDockerfile(t *testing.T) {
	stages := dockerfile(t)
	if b := stages["build"]; !strings.Contains(b, "RUN deploy/build-binary /out/agentbridge \"$VERSION\"") || !strings.Contains(b, `if [ -z "$VERSION" ]`) {
		t.Errorf("the build stage does not build with deploy/build-binary and a required VERSION:\n%s", b)
	}
	ci, err := os.ReadFile("../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	clis := regexp.MustCompile(`agentbridge_clis="([^"]+)"`).FindSubmatch(ci)
	if clis == nil {
		t.Fatal(".ci/run names no agentbridge_clis")
	}
	args := map[string]string{"@anthropic-ai/claude-code": "CLAUDE_CODE_VERSION", "@openai/codex": "CODEX_VERSION",
		"@google/gemini-cli": "GEMINI_CLI_VERSION", "@qwen-code/qwen-code": "QWEN_CODE_VERSION"}
	for _, pkg := range strings.Fields(string(clis[1])) {
		i := strings.LastIndexByte(pkg, '@')
		name, version := pkg[:i], pkg[i+1:]
		arg := args[name]
		if arg == "" {
			t.Errorf(".ci/run installs %s, which the agents image does not", name)
			continue
		}
		if want := "ARG " + arg + "=" + version + "\n"; !strings.Contains(stages["agents"], want) {
			t.Errorf("the agents image does not pin %s at .ci/run's %s (want %q)", name, version, strings.TrimSpace(want))
		}
		if !strings.Contains(stages["agents"], `"`+name+"@${"+arg+"}\"") {
			t.Errorf("the agents image does not install %s@${%s}", name, arg)
		}
	}
	for _, stage := range []string{"agents", "slim"} {
		s := stages[stage]
		for _, want := range []string{
			"USER 10001:10001",
			"AGENTBRIDGE_STATE_DIR=/var/lib/agentbridge",
			`VOLUME ["/var/lib/agentbridge", "/home/agent"`,
			`CMD ["agentbridge", "health"]`,
			`CMD ["serve", "--config", "/etc/agentbridge/config.yaml"]`,
			"COPY --from=build /out/agentbridge /usr/local/bin/agentbridge",
			"COPY profiles/ /etc/agentbridge/profiles/",
			"org.opencontainers.image.version=\"${VERSION}\"",
			"org.opencontainers.image.source=",
			"EXPOSE 9090",
		} {
			if !strings.Contains(s, want) {
				t.Errorf("stage %s lacks %q", stage, want)
			}
		}
		if !regexp.MustCompile(`ENTRYPOINT \["/(usr/bin|sbin)/tini", "--", "agentbridge"\]`).MatchString(s) {
			t.Errorf("stage %s does not start agentbridge under tini", stage)
		}
		if !strings.Contains(s, "chown agent:agent /var/lib/agentbridge") {
			t.Errorf("stage %s: the state volume is not the agent user's", stage)
		}
	}
	// The default target (the last stage) is the slim image.
	if !strings.HasSuffix(strings.TrimSpace(stages["slim"]), `CMD ["serve", "--config", "/etc/agentbridge/config.yaml"]`) {
		t.Error("slim is not the last stage, so not the default target")
	}
}

// TestDockerignore keeps history, local stores, test binaries and secrets
// out of the build context, and what the build needs in it.
func TestDockerignore(t *testing.T) {
	b, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for _, want := range []string{".git", "**/*.db", "**/*.test", "**/.env"} {
		if !slices.Contains(lines, want) {
			t.Errorf(".dockerignore lacks %s", want)
		}
	}
	for _, l := range lines {
		for _, needed := range []string{"deploy/build-binary", "profiles", "go.mod", "cmd"} {
			if l == needed || l == "/"+needed {
				t.Errorf(".dockerignore drops %s, which the build needs", needed)
			}
		}
	}
}

// TestSystemdUnit: the unit's restart policy matches serve's exit statuses,
// stopping it stops the agents, it runs unprivileged with its state
// directory, and systemd-analyze (where installed) finds nothing wrong.
func TestSystemdUnit(t *testing.T) {
	b, err := os.ReadFile("agentbridge.service")
	if err != nil {
		t.Fatal(err)
	}
	unit := string(b)
	for _, want := range []string{
		"User=agentbridge", "StateDirectory=agentbridge", "Environment=AGENTBRIDGE_STATE_DIR=/var/lib/agentbridge",
		"Restart=on-failure",
		"RestartPreventExitStatus=2 3", // serve: 2 invalid config, 3 every adapter stopped for good (cmd/agentbridge/serve.go)
		"KillMode=control-group", "ExecReload=/bin/kill -HUP $MAINPID", "NoNewPrivileges=yes",
		"ExecStart=/usr/local/bin/agentbridge serve --config /etc/agentbridge/config.yaml",
	} {
		if !strings.Contains(unit, "\n"+want+"\n") {
			t.Errorf("the unit lacks %q", want)
		}
	}
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("no systemd-analyze to verify the unit with")
	}
	// verify wants ExecStart to exist: point it at a binary that does.
	dir := t.TempDir()
	unit = strings.Replace(unit, "/usr/local/bin/agentbridge", "/bin/true", 1)
	path := filepath.Join(dir, "agentbridge.service")
	if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestComposeFile: tokens come from the environment (no values in the
// file), the config is mounted read-only where the images read it, the
// store is a volume, the metrics port is published on loopback, and the
// stop grace covers the drain.
func TestComposeFile(t *testing.T) {
	b, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Image           string         `yaml:"image"`
			Build           map[string]any `yaml:"build"`
			Environment     []string       `yaml:"environment"`
			Volumes         []string       `yaml:"volumes"`
			Ports           []string       `yaml:"ports"`
			StopGracePeriod string         `yaml:"stop_grace_period"`
			ReadOnly        bool           `yaml:"read_only"`
		} `yaml:"services"`
		Volumes map[string]any `yaml:"volumes"`
	}
	if err := yaml.Unmarshal(b, &compose); err != nil {
		t.Fatal(err)
	}
	s, ok := compose.Services["agentbridge"]
	if !ok {
		t.Fatal("no agentbridge service")
	}
	for _, e := range s.Environment {
		if strings.Contains(e, "=") {
			t.Errorf("environment entry %q has a value in the file; pass it from the environment", e)
		}
	}
	for _, want := range []string{"TELEGRAM_BOT_TOKEN", "SLACK_BOT_TOKEN", "DISCORD_BOT_TOKEN", "ANTHROPIC_API_KEY"} {
		if !slices.Contains(s.Environment, want) {
			t.Errorf("environment lacks %s", want)
		}
	}
	for _, want := range []string{"./config.local.yaml:/etc/agentbridge/config.yaml:ro", "state:/var/lib/agentbridge", "home:/home/agent"} {
		if !slices.Contains(s.Volumes, want) {
			t.Errorf("volumes lack %s", want)
		}
	}
	if !slices.Contains(s.Ports, "127.0.0.1:9090:9090") {
		t.Errorf("ports %q: want the metrics port on loopback", s.Ports)
	}
	if d, err := time.ParseDuration(s.StopGracePeriod); err != nil || d < 45*time.Second {
		t.Errorf("stop_grace_period %q: want at least shutdown_grace (30s) plus kill_grace_secs (15s)", s.StopGracePeriod)
	}
	if s.Build["target"] != "agents" || !strings.HasPrefix(s.Image, "agentbridge-agents:${AGENTBRIDGE_VERSION") {
		t.Errorf("image %q build %v: want the agents target tagged with the version", s.Image, s.Build)
	}
	if _, ok := compose.Volumes["state"]; !ok {
		t.Error("no state volume")
	}
}

// TestDeployFilesAreDocumented: the deployment guide (docs/deployment.md)
// names every file here.
func TestDeployFilesAreDocumented(t *testing.T) {
	readme, err := os.ReadFile("../docs/deployment.md")
	if err != nil {
		t.Fatal(err)
	}
	err = fs.WalkDir(os.DirFS("."), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, "_test.go") {
			return err
		}
		if !bytes.Contains(readme, []byte("deploy/"+p)) {
			t.Errorf("docs/deployment.md does not mention deploy/%s", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
