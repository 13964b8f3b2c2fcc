package live

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

var (
	buildDir  string // holds the agentbridge binary built for these tests
	buildOnce sync.Once
	buildErr  error
	repoRoot  string
)

func TestMain(m *testing.M) {
	_, file, _, _ := runtime.Caller(0)
	repoRoot = filepath.Join(filepath.Dir(file), "..", "..")
	dir, err := os.MkdirTemp("", "agentbridge-live-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildDir = dir
	code := 0
	func() {
		defer func() { _ = os.RemoveAll(dir) }()
		goleak.VerifyTestMain(exitRecorder{&code, m})
	}()
	os.Exit(code)
}

// exitRecorder lets TestMain clean up after goleak's run.
type exitRecorder struct {
	code *int
	m    *testing.M
}

func (e exitRecorder) Run() int { *e.code = e.m.Run(); return *e.code }

// agentbridge builds the binary the profiles run (command: agentbridge)
// once per test process and returns its directory.
func agentbridge(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		cmd := exec.Command("go", "build", "-o", filepath.Join(buildDir, "agentbridge"), "./cmd/agentbridge")
		cmd.Dir = repoRoot
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build ./cmd/agentbridge: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildDir
}

// cliDir finds the directory holding the named CLI, or skips the test
// loudly.
func cliDir(t *testing.T, name, pkg string) string {
	t.Helper()
	var dirs []string
	if d := os.Getenv("AGENTBRIDGE_CLI_BIN"); d != "" {
		dirs = append(dirs, d)
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, ".cache", "agentbridge-cli", "node_modules", ".bin"))
	}
	for _, d := range dirs {
		if fi, err := os.Stat(filepath.Join(d, name)); err == nil && !fi.IsDir() {
			return d
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return filepath.Dir(p)
	}
	t.Skipf("LIVE TEST SKIPPED: %s not found in $AGENTBRIDGE_CLI_BIN, ~/.cache/agentbridge-cli or PATH — .ci/run installs it with npm (npm install %s)", name, pkg)
	return ""
}

// turnResult is `agentbridge run --json` output plus its stderr.
type turnResult struct {
	Reply     string         `json:"reply"`
	SessionID string         `json:"session_id"`
	Error     string         `json:"error"`
	ExitCode  int            `json:"exit_code"`
	Partials  []string       `json:"partials"`
	Usage     map[string]any `json:"usage"`
	Stderr    string         `json:"-"`
}

// liveEnv is what a live turn runs with.
type liveEnv struct {
	path []string // PATH entries before the system ones
	env  []string // extra variables for the bridge (HOME, credentials, base URL)
	dir  string   // the bridge's working directory (the profiles have no cwd)
}

// run runs one turn through `agentbridge run --json`.
func (e liveEnv) run(t *testing.T, profile, permission, sessionID, message string) turnResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	args := []string{"run", "--json", "--profile", filepath.Join(repoRoot, "profiles", profile, "profile.yaml"), "--permission", permission}
	if sessionID != "" {
		args = append(args, "--session-id", sessionID)
	}
	args = append(args, message)
	cmd := exec.CommandContext(ctx, filepath.Join(buildDir, "agentbridge"), args...)
	cmd.Dir = e.dir
	path := append(append([]string{}, e.path...), filepath.Dir(nodePath()), "/usr/local/bin", "/usr/bin", "/bin")
	cmd.Env = append([]string{"PATH=" + strings.Join(path, ":"), "LANG=C.UTF-8"}, e.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	_ = cmd.Run() // the turn's status is in the JSON
	var r turnResult
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("agentbridge run printed no JSON (%v): %s\nstderr:\n%s", err, stdout.Bytes(), stderr.Bytes())
	}
	r.Stderr = stderr.String()
	t.Logf("turn %q (%s, permission %s) took %v", message, profile, permission, time.Since(start).Round(time.Millisecond))
	return r
}

func nodePath() string {
	if p, err := exec.LookPath("node"); err == nil {
		return p
	}
	return "/usr/bin/node"
}

// mockServer is an httptest server on 127.0.0.1 recording each request's
// decoded body.
type mockServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []map[string]any
	paths    []string
}

func newMock(t *testing.T, h func(m *mockServer, w http.ResponseWriter, r *http.Request, body map[string]any)) *mockServer {
	m := &mockServer{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		m.mu.Lock()
		m.paths = append(m.paths, r.Method+" "+r.URL.Path)
		if body != nil {
			m.requests = append(m.requests, body)
		}
		m.mu.Unlock()
		h(m, w, r, body)
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *mockServer) bodies() []map[string]any {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]map[string]any(nil), m.requests...)
}

// sse writes one server-sent event and flushes it.
func sse(w http.ResponseWriter, name string, data any) {
	b, _ := json.Marshal(data)
	if name != "" {
		fmt.Fprintf(w, "event: %s\n", name)
	}
	fmt.Fprintf(w, "data: %s\n\n", b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// words splits text into streamed chunks: "a b c" → "a", " b", " c".
func words(text string) []string {
	parts := strings.Split(text, " ")
	for i := 1; i < len(parts); i++ {
		parts[i] = " " + parts[i]
	}
	return parts
}

// textOf flattens message content (a string or a list of blocks) into the
// text a mock looks at, tool results included.
func textOf(content any) string {
	switch c := content.(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, blk := range c {
			m, _ := blk.(map[string]any)
			if m == nil {
				b.WriteString(textOf(blk))
				continue
			}
			for _, k := range []string{"text", "content", "output"} {
				if v, ok := m[k]; ok {
					b.WriteString(textOf(v))
					b.WriteString("\n")
				}
			}
		}
		return b.String()
	}
	return ""
}

func itoa(n int) string { return fmt.Sprint(n) }

func jsonString(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// settingsEnv is the bridge environment for a CLI that reads
// $HOME/DIR/settings.json: a fresh HOME holding settings, a fresh working
// directory, and env.
func settingsEnv(t *testing.T, bin, dir, settings string, env ...string) liveEnv {
	t.Helper()
	home, work := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, dir), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, dir, "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	return liveEnv{path: []string{agentbridge(t), bin}, dir: work, env: append([]string{"HOME=" + home}, env...)}
}

// geminiEnv runs gemini against the mock at mockURL with API-key auth and
// no telemetry or update checks (agents.md 3.4).
func geminiEnv(t *testing.T, bin, mockURL string) liveEnv {
	return settingsEnv(t, bin, ".gemini", `{"security":{"auth":{"selectedType":"gemini-api-key"}},"privacy":{"usageStatisticsEnabled":false},
"telemetry":{"enabled":false},"general":{"disableAutoUpdate":true,"disableUpdateNag":true}}`,
		"GEMINI_API_KEY=live-test", "GOOGLE_GEMINI_BASE_URL="+mockURL)
}

// qwenEnv runs qwen against the Chat Completions mock at mockURL, with no
// telemetry (agents.md 4.1).
func qwenEnv(t *testing.T, bin, mockURL string) liveEnv {
	return settingsEnv(t, bin, ".qwen", `{"security":{"auth":{"selectedType":"openai"}},"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false}}`,
		"OPENAI_API_KEY=sk-live-test", "OPENAI_BASE_URL="+mockURL+"/v1", "OPENAI_MODEL=gpt-mock")
}
