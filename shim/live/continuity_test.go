package live

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Continuity with the real CLIs (issue 10): a session the CLI no longer
// has starts a new one in the same turn with one notice; tool calls show
// as thinking partials; an unreachable API is an error within about a
// minute with the shipped profiles; a CLI without credentials says what to
// do on the bridge's host.

const (
	resumeNotice = "↻ The previous agent session could not be resumed; starting a new one.\n\n"
	forgottenID  = "11111111-2222-4333-8444-555555555555" // a UUID no CLI has a session for
	// deadAPIBound bounds a turn against an unreachable API: "within about
	// a minute" with the profiles' defaults (the retry bound tests set a
	// shorter one).
	deadAPIBound = 75 * time.Second
)

// closedURL is the URL of a local port nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close()
	return url
}

// with returns e with more variables for the bridge.
func (e liveEnv) with(env ...string) liveEnv {
	e.env = append(append([]string{}, e.env...), env...)
	return e
}

// checkFresh checks a turn that could not resume its session: it succeeded,
// the notice came first and once, and the session reported is a new one.
func checkFresh(t *testing.T, r turnResult, old, reply string) {
	t.Helper()
	got := strings.Join(r.Partials, "")
	if r.ExitCode != 0 || r.SessionID == "" || r.SessionID == old {
		t.Fatalf("turn with a session the CLI does not have: exit %d, session %q (asked %q), error %q\nstderr:\n%s", r.ExitCode, r.SessionID, old, r.Error, r.Stderr)
	}
	if !strings.HasPrefix(got, resumeNotice) || strings.Count(got, resumeNotice) != 1 || !strings.Contains(got, reply) {
		t.Errorf("turn streamed %q, want the notice once, then %q", got, reply)
	}
}

// checkDead checks a turn against an unreachable API: an error, in time.
func checkDead(t *testing.T, r turnResult, took time.Duration, want string) {
	t.Helper()
	t.Logf("unreachable API: error after %v: %q", took.Round(100*time.Millisecond), r.Error)
	if r.ExitCode == 0 || !strings.Contains(r.Error, want) {
		t.Errorf("turn against an unreachable API: exit %d, error %q, want %q\nstderr:\n%s", r.ExitCode, r.Error, want, r.Stderr)
	}
	if took > deadAPIBound {
		t.Errorf("turn against an unreachable API took %v, want the error within %v", took, deadAPIBound)
	}
}

func timed(f func() turnResult) (turnResult, time.Duration) {
	start := time.Now()
	r := f()
	return r, time.Since(start)
}

func TestClaudeContinuityLive(t *testing.T) {
	t.Parallel() // own HOME, mock and working directory: CPU-bound CLI starts overlap with waits
	bin := cliDir(t, "claude", "@anthropic-ai/claude-code@2.1.197")
	mock := anthropicMock(t)
	home, work := t.TempDir(), t.TempDir()
	e := liveEnv{path: []string{agentbridge(t), bin}, dir: work,
		env: []string{"HOME=" + home, "ANTHROPIC_BASE_URL=" + mock.URL, "ANTHROPIC_API_KEY=sk-ant-live-test"}}

	// claude 2.1.197: "No conversation found with session ID: …".
	fresh := e.run(t, "claude-code", "deny", forgottenID, "say hello")
	checkFresh(t, fresh, forgottenID, "Hello from the mock.")
	again := e.run(t, "claude-code", "deny", fresh.SessionID, "and again")
	if again.ExitCode != 0 || again.SessionID != fresh.SessionID || strings.Contains(strings.Join(again.Partials, ""), resumeNotice) {
		t.Errorf("the new session does not resume: %+v", again)
	}
	// Another agent's id ("--resume requires a valid session ID" if
	// passed) is never handed to claude.
	checkFresh(t, e.run(t, "claude-code", "deny", "demo-485bc65220c3", "say hello"), "demo-485bc65220c3", "Hello from the mock.")

	tool := e.run(t, "claude-code", "allow", "", "please USE_TOOL now")
	if !strings.Contains(strings.Join(tool.Partials, ""), "🔧 Bash: touch touched.txt\n") {
		t.Errorf("tool turn streamed %q, want the Bash call as a line", tool.Partials)
	}

	// The profile's retry and timeout defaults, nothing set by the test.
	dead, took := timed(func() turnResult {
		return liveEnv{path: e.path, dir: work, env: []string{"HOME=" + home, "ANTHROPIC_BASE_URL=" + closedURL(t), "ANTHROPIC_API_KEY=sk-ant-live-test"}}.
			run(t, "claude-code", "deny", "", "hi")
	})
	checkDead(t, dead, took, "Unable to connect to API")

	// No key and no login: "Not logged in · Please run /login", plus what
	// to do on the bridge's host.
	nologin := liveEnv{path: e.path, dir: work, env: []string{"HOME=" + t.TempDir(), "ANTHROPIC_BASE_URL=" + mock.URL}}.run(t, "claude-code", "deny", "", "hi")
	if !strings.Contains(nologin.Error, "Not logged in") || !strings.Contains(nologin.Error, "ANTHROPIC_API_KEY") || !strings.Contains(nologin.Error, "bridge's") {
		t.Errorf("not logged in: error %q, want claude's message and the bridge-side hint", nologin.Error)
	}
}

func TestCodexContinuityLive(t *testing.T) {
	t.Parallel() // own HOME, mock and working directory: CPU-bound CLI starts overlap with waits
	bin := cliDir(t, "codex", "@openai/codex@0.171.0")
	mock := responsesMock(t)
	home, work := t.TempDir(), t.TempDir()
	e := liveEnv{path: []string{agentbridge(t), bin}, dir: work,
		env: []string{"HOME=" + home, "CODEX_HOME=" + codexHome(t, home, mock.URL), "OPENAI_API_KEY=sk-live-test"}}

	// The profile drives app-server (permission: true): "no rollout found
	// for thread id …".
	fresh := e.run(t, "codex", "deny", forgottenID, "say hi")
	checkFresh(t, fresh, forgottenID, "Hello from the responses mock.")
	again := e.run(t, "codex", "deny", fresh.SessionID, "second turn")
	if again.ExitCode != 0 || again.SessionID != fresh.SessionID || strings.Contains(strings.Join(again.Partials, ""), resumeNotice) {
		t.Errorf("the new thread does not resume: %+v", again)
	}

	// codex's built-in provider has no retry knob and waits "for network"
	// without end; the shim's bound (set short here) ends the turn.
	deadHome := filepath.Join(t.TempDir(), "codex")
	if err := os.MkdirAll(deadHome, 0o700); err != nil {
		t.Fatal(err)
	}
	config := "openai_base_url = \"" + closedURL(t) + "/v1\"\n[analytics]\nenabled = false\n[features]\nplugins = false\nremote_plugin = false\napps = false\n"
	if err := os.WriteFile(filepath.Join(deadHome, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	dead, took := timed(func() turnResult {
		return liveEnv{path: e.path, dir: work, env: []string{"HOME=" + home, "CODEX_HOME=" + deadHome, "OPENAI_API_KEY=sk-live-test", "AGENTBRIDGE_API_RETRY_SECS=5"}}.
			run(t, "codex", "deny", "", "hi")
	})
	checkDead(t, dead, took, "codex could not reach its model API for 5s")
}

func TestGeminiContinuityLive(t *testing.T) {
	t.Parallel() // own HOME, mock and working directory: CPU-bound CLI starts overlap with waits
	bin := cliDir(t, "gemini", "@google/gemini-cli@0.61.0")
	mock := geminiMock(t)
	e := geminiEnv(t, bin, mock.URL)

	// gemini 0.61.0 exits 42: "Error resuming session: …".
	fresh := e.run(t, "gemini-cli", "deny", forgottenID, "say hi")
	checkFresh(t, fresh, forgottenID, "Hello from the gemini mock.")
	again := e.run(t, "gemini-cli", "deny", fresh.SessionID, "second turn")
	if again.ExitCode != 0 || again.SessionID != fresh.SessionID || !strings.Contains(strings.Join(again.Partials, ""), "Request with 3 contents.") {
		t.Errorf("the new session does not resume: %+v", again)
	}

	// gemini retries for about five minutes and has no knob in the
	// environment; the shim's bound (set short here) ends the turn.
	dead, took := timed(func() turnResult {
		return e.with("GOOGLE_GEMINI_BASE_URL="+closedURL(t), "AGENTBRIDGE_API_RETRY_SECS=5").run(t, "gemini-cli", "deny", "", "hi")
	})
	checkDead(t, dead, took, "gemini could not reach its model API for 5s")
}

func TestQwenContinuityLive(t *testing.T) {
	t.Parallel() // own HOME, mock and working directory: CPU-bound CLI starts overlap with waits
	bin := cliDir(t, "qwen", "@qwen-code/qwen-code@0.15.10")
	mock := chatMock(t)
	e := qwenEnv(t, bin, mock.URL)

	// qwen 0.15.10: "No saved session found with ID …".
	fresh := e.run(t, "qwen-code", "deny", forgottenID, "say hi")
	checkFresh(t, fresh, forgottenID, "Hello from the chat mock.")
	again := e.run(t, "qwen-code", "deny", fresh.SessionID, "second turn")
	if again.ExitCode != 0 || again.SessionID != fresh.SessionID || strings.Contains(strings.Join(again.Partials, ""), resumeNotice) {
		t.Errorf("the new session does not resume: %+v", again)
	}

	// qwen reports the failure as a successful "[API Error: …]" reply; the
	// shim makes it the turn's error, and the reply does not repeat it.
	dead, took := timed(func() turnResult {
		return e.with("OPENAI_BASE_URL="+closedURL(t)+"/v1").run(t, "qwen-code", "deny", "", "hi")
	})
	checkDead(t, dead, took, "[API Error: Connection error.")
	if len(dead.Partials) != 0 {
		t.Errorf("unreachable API: partials %q, want none (the error is the error event)", dead.Partials)
	}
}
