package main

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The chat tests drive the real binary as a user would: a process with
// piped stdin and stdout, the built-in demo agent, a bbolt file in a temp
// directory.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// agentbridgeCommand is `agentbridge args...`: this test binary re-executed
// as main (see TestMain), so no test waits for a go build of its own.
func agentbridgeCommand(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), mainEnv+"=1", "GORACE=atexit_sleep_ms=0")
	return cmd
}

// agentbridgeBinary builds cmd/agentbridge once per test run, for the
// start-up benchmark, which times the real binary.
func agentbridgeBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "agentbridge-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "agentbridge")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = err
			t.Logf("go build: %s", out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build agentbridge: %v", buildErr)
	}
	return binPath
}

// chatSession is a running `agentbridge chat`.
type chatSession struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	mu    sync.Mutex
	out   strings.Builder
	grew  chan struct{} // signalled on every read
	ended chan struct{}
}

func startChat(t *testing.T, state string, args ...string) *chatSession {
	t.Helper()
	cmd := agentbridgeCommand(append([]string{"chat"}, args...)...)
	cmd.Env = append(cmd.Env, "XDG_STATE_HOME="+state, "AGENTBRIDGE_DEMO_DELAY=1ms")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &chatSession{t: t, cmd: cmd, in: in, grew: make(chan struct{}, 1), ended: make(chan struct{})}
	go func() {
		defer close(c.ended)
		r := bufio.NewReader(stdout)
		buf := make([]byte, 4096)
		for {
			n, err := r.Read(buf)
			c.mu.Lock()
			c.out.Write(buf[:n])
			c.mu.Unlock()
			select {
			case c.grew <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-c.ended
		cmd.Wait()
	})
	return c
}

func (c *chatSession) say(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatalf("write %q: %v", line, err)
	}
}

func (c *chatSession) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

// waitFor waits until the output contains want n times in all.
func (c *chatSession) waitFor(want string, n int) {
	c.t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for strings.Count(c.output(), want) < n {
		select {
		case <-c.grew:
		case <-c.ended:
			if strings.Count(c.output(), want) >= n {
				return
			}
			c.t.Fatalf("chat exited before printing %q; output:\n%s", want, c.output())
		case <-deadline.C:
			c.t.Fatalf("no %q after 30s; output:\n%s", want, c.output())
		}
	}
}

// quit closes stdin (Ctrl-D) and waits for a clean exit.
func (c *chatSession) quit() {
	c.t.Helper()
	c.in.Close()
	select {
	case <-c.ended:
	case <-time.After(30 * time.Second):
		c.t.Fatalf("chat did not exit at end of input; output:\n%s", c.output())
	}
	if err := c.cmd.Wait(); err != nil {
		c.t.Fatalf("chat exited with %v; output:\n%s", err, c.output())
	}
}

func TestChatDemoRemembersAcrossRestart(t *testing.T) {
	state := t.TempDir()
	c := startChat(t, state)
	c.waitFor("Type /help", 1)
	c.say("my name is Ada")
	c.waitFor("Nice to meet you, Ada", 1)
	c.waitFor("tokens", 1) // the usage footer ends the reply
	c.say("what is my name?")
	c.waitFor("Your name is Ada.", 1)
	c.waitFor("tokens", 2)
	c.quit()
	if _, err := os.Stat(filepath.Join(state, "agentbridge", "chat.db")); err != nil {
		t.Fatalf("no session store: %v", err)
	}

	// A new bridge process resumes the same agent session from the store.
	c2 := startChat(t, state)
	c2.say("what is my name?")
	c2.waitFor("Your name is Ada.", 1)
	c2.waitFor("tokens", 1)
	c2.say("/new")
	c2.waitFor("Fresh session started", 1)
	c2.say("what is my name?")
	c2.waitFor("tokens", 2)
	if strings.Count(c2.output(), "Your name is Ada.") != 1 {
		t.Errorf("after /new the agent still knows the name:\n%s", c2.output())
	}
	c2.quit()
}

func TestChatPermissionPrompt(t *testing.T) {
	c := startChat(t, t.TempDir())
	c.say("please write a file")
	c.waitFor("[A]llow / [D]eny / Allow for this [s]ession", 1)
	c.say("a")
	c.waitFor("Allowed by", 1)
	c.waitFor("wrote notes.txt", 1)
	c.waitFor("tokens", 1)
	c.say("write another file")
	c.waitFor("[A]llow / [D]eny / Allow for this [s]ession", 2)
	c.say("d")
	c.waitFor("Denied by", 1)
	c.waitFor("tokens", 2)
	c.quit()
}

// Issue 27, item 5: a request allowed by an earlier "allow for this
// session" runs without a prompt, and the reply says so.
func TestChatSessionGrantShownInReply(t *testing.T) {
	c := startChat(t, t.TempDir())
	c.say("please write a file")
	c.waitFor("[A]llow / [D]eny / Allow for this [s]ession", 1)
	c.say("s")
	c.waitFor("Allowed for this session by", 1)
	c.waitFor("tokens", 1)
	c.say("write another file")
	c.waitFor("✅ write_file — allowed for this session by ", 1)
	c.waitFor("tokens", 2)
	c.quit()
	if n := strings.Count(c.output(), "[A]llow / [D]eny / Allow for this [s]ession"); n != 1 {
		t.Errorf("%d prompts; the second request should have run on the grant:\n%s", n, c.output())
	}
}

func TestChatStopAndRestartAfterKill(t *testing.T) {
	state := t.TempDir()
	c := startChat(t, state)
	c.say("slow")
	c.waitFor("taking my time", 1)
	c.say("/stop")
	c.waitFor("Stopped.", 1)

	// Kill the bridge in the middle of a turn, as a crash would.
	c.say("slow")
	c.waitFor("taking my time", 2)
	c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.ended
	c.cmd.Wait()

	// The next start tells the user the turn was interrupted and does not
	// run it again.
	c2 := startChat(t, state)
	c2.waitFor("The bridge restarted", 1)
	c2.quit()
	if strings.Contains(c2.output(), "taking my time") {
		t.Errorf("the interrupted turn ran again:\n%s", c2.output())
	}
}

func TestChatRefusesBadProfile(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("command: x\ntimeout_secs: -1\nbogus: 1\n"), 0o600)
	cmd := agentbridgeCommand("chat", "--profile", bad)
	cmd.Env = append(cmd.Env, "XDG_STATE_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("exit = %v, want status 2; output:\n%s", err, out)
	}
	for _, want := range []string{"bad.yaml:2", "timeout_secs", "bad.yaml:3", "bogus"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("error output lacks %q:\n%s", want, out)
		}
	}
}

func TestChatEndOfInputDeniesAPendingPrompt(t *testing.T) {
	c := startChat(t, t.TempDir())
	c.say("please write a file")
	c.waitFor("[A]llow / [D]eny / Allow for this [s]ession", 1)
	start := time.Now()
	c.quit() // Ctrl-D while the agent waits for an answer
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("chat took %v to exit; the pending prompt should be denied at once, not time out", d)
	}
	out := c.output()
	if !strings.Contains(out, "end of input") || !strings.Contains(out, "will not write") {
		t.Errorf("the prompt was not denied for the end of input:\n%s", out)
	}
}

func TestChatCtrlCStopsTheRunningTurn(t *testing.T) {
	c := startChat(t, t.TempDir())
	c.waitFor("Ctrl-C when idle (or twice quickly) or Ctrl-D quits", 1)
	c.say("slow")
	c.waitFor("taking my time", 1)
	c.cmd.Process.Signal(os.Interrupt)
	c.waitFor("⏹ Stopped.", 1)
	// The chat goes on after Ctrl-C stopped the turn.
	c.say("what is my name?")
	c.waitFor("tokens", 1) // a stopped turn has no usage footer
	// Ctrl-C with nothing running quits, and the output ends its last line.
	c.cmd.Process.Signal(os.Interrupt)
	select {
	case <-c.ended:
	case <-time.After(60 * time.Second):
		t.Fatalf("chat did not exit after Ctrl-C when idle; output:\n%s", c.output())
	}
	if err := c.cmd.Wait(); err != nil {
		t.Errorf("chat exited with %v after Ctrl-C when idle", err)
	}
	out := c.output()
	if strings.Contains(out, "shutting down") || !strings.HasSuffix(out, "\n") {
		t.Errorf("after Ctrl-C the reply should say it was stopped, and the output end a line:\n%q", out)
	}
}

func TestChatCtrlCTwiceQuits(t *testing.T) {
	c := startChat(t, t.TempDir())
	c.say("slow")
	c.waitFor("taking my time", 1)
	c.cmd.Process.Signal(os.Interrupt)
	// A second press right after the first quits (signals sent at once
	// would merge into one).
	c.waitFor("⏹ Stopped.", 1)
	c.cmd.Process.Signal(os.Interrupt)
	select {
	case <-c.ended:
	case <-time.After(60 * time.Second):
		t.Fatalf("chat did not exit after Ctrl-C twice; output:\n%s", c.output())
	}
	c.cmd.Wait()
	if !strings.Contains(c.output(), "⏹ Stopped.") {
		t.Errorf("the running turn was not stopped:\n%s", c.output())
	}
}

func TestChatPermissionWords(t *testing.T) {
	c := startChat(t, t.TempDir())
	c.say("please write a file")
	c.waitFor("[A]llow / [D]eny / Allow for this [s]ession", 1)
	c.say("maybe")
	c.waitFor("Please answer [A]llow / [D]eny / Allow for this [s]ession (or y / n)", 1)
	c.say("yes")
	c.waitFor("Allowed by", 1)
	c.waitFor("tokens", 1)
	c.say("write another file")
	c.waitFor("[A]llow / [D]eny / Allow for this [s]ession", 3) // the prompt, asking again, the new prompt
	c.say("no")
	c.waitFor("Denied by", 1)
	c.waitFor("tokens", 2)
	c.quit()
	if strings.Contains(c.output(), "You said: maybe") {
		t.Errorf("a stray line at the prompt went to the agent:\n%s", c.output())
	}
	if !strings.HasSuffix(c.output(), "\n") {
		t.Errorf("the output does not end its last line: %q", c.output())
	}
}

// TestChatSecondOnSameStore: two chats cannot share a store; the second
// says so and how to give it its own.
func TestChatSecondOnSameStore(t *testing.T) {
	state := t.TempDir()
	c := startChat(t, state)
	c.waitFor("Type /help", 1)
	cmd := agentbridgeCommand("chat")
	cmd.Env = append(cmd.Env, "XDG_STATE_HOME="+state)
	cmd.Stdin = strings.NewReader("hello\n")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(string(out), "in use by another process") || !strings.Contains(string(out), "--store PATH") {
		t.Errorf("second chat: %v, output %q; want exit 1 naming --store", err, out)
	}
	c.quit()
}

// TestChatWarnsAboutEmptyStore: a 0-byte store file (truncated by a full
// disk or a bad copy) still opens, but the operator is told its sessions
// are gone instead of the chat quietly starting afresh.
func TestChatWarnsAboutEmptyStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chat.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c := startChat(t, t.TempDir(), "--store", path)
	c.waitFor("Type /help", 1)
	if out := c.output(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "store file was empty (0 bytes)") {
		t.Errorf("no warning about the empty store file:\n%s", out)
	}
	c.say("hello")
	c.waitFor("tokens", 1)
	c.quit()
}

// TestChatSavesAgentFiles: a file the agent sends is saved under the
// state directory (files/, next to the store), the path printed where it
// came in the reply (X-FILE-1).
func TestChatSavesAgentFiles(t *testing.T) {
	state := t.TempDir()
	c := startChat(t, state)
	c.say("draw a chart")
	c.waitFor("tokens", 1)
	c.quit()
	dir := filepath.Join(state, "agentbridge", "files")
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		t.Fatalf("no files saved in %s (%v); output:\n%s", dir, err, c.output())
	}
	path := filepath.Join(dir, entries[0].Name())
	if !strings.Contains(c.output(), "saved: "+path) {
		t.Errorf("the output does not name %s:\n%s", path, c.output())
	}
	if b, _ := os.ReadFile(path); !strings.HasPrefix(string(b), "\x89PNG") {
		t.Errorf("%s is not the PNG: %q", path, b[:min(len(b), 16)])
	}
}
