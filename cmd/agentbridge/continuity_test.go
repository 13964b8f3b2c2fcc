package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/telegram/telegramtest"
	"github.com/agentbridge/agentbridge/internal/testagent"
)

// continuityAgent is the test agent of the continuity tests. With
// AGENTBRIDGE_TEST_DIR set it writes its pid to DIR/MESSAGE.agent. By
// message:
//
//	stream  start a child (sleep) in its process group, as a shim starts a
//	        CLI, write its pid to DIR/stream.child, stream "half an answer"
//	        with session id crash-sess, then wait for ever
//	perm    ask permission for Bash, then wait for ever
//	silent  say nothing and wait for ever
//	echo    answer "echo MESSAGE END"
//	other   answer "new session" or "resumed ID" (the id it was given),
//	        with session id other-sess
func continuityAgent(line string) int {
	var turn struct {
		Message   string `json:"message"`
		SessionID string `json:"session_id"`
	}
	_ = json.Unmarshal([]byte(line), &turn)
	emit := func(v map[string]any) {
		b, _ := json.Marshal(v)
		os.Stdout.Write(append(b, '\n'))
	}
	dir := os.Getenv("AGENTBRIDGE_TEST_DIR")
	note := func(name string, pid int) {
		if dir != "" {
			os.WriteFile(filepath.Join(dir, name), []byte(strconv.Itoa(pid)), 0o600)
		}
	}
	msg := strings.Fields(turn.Message + " x")[0]
	note(msg+".agent", os.Getpid())
	switch msg {
	case "stream":
		child := exec.Command("sleep", "600")
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "agent: start child:", err)
			return 3
		}
		note("stream.child", child.Process.Pid)
		emit(map[string]any{"type": "partial", "text": "half an answer", "session_id": "crash-sess"})
		select {}
	case "perm":
		emit(map[string]any{"type": "permission_request", "request_id": "r1", "tool_name": "Bash", "input": map[string]any{"command": "ls"}})
		select {}
	case "silent":
		select {}
	case "echo":
		emit(map[string]any{"type": "result", "text": turn.Message + " END", "session_id": "other-sess"})
		return 0
	}
	reply := "new session"
	if turn.SessionID != "" {
		reply = "resumed " + turn.SessionID
	}
	emit(map[string]any{"type": "result", "text": reply + " END", "session_id": "other-sess"})
	return 0
}

// continuityProfile writes a profile named "agent" running
// continuityAgent, noting pids in dir.
func continuityProfile(t *testing.T, dir string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "agent.yaml")
	body := fmt.Sprintf("command: %q\nenv:\n  AGENTBRIDGE_TEST_AGENT: continuity\n  AGENTBRIDGE_TEST_DIR: %q\n  GORACE: atexit_sleep_ms=0\n"+
		"streaming: true\npermission: true\ntimeout_secs: 120\n", self, dir)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// pidIn waits for the pid a continuityAgent wrote to dir/name.
func pidIn(t *testing.T, dir, name string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if pid, perr := strconv.Atoi(string(b)); err == nil && perr == nil {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s", name)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitDead waits until none of pids runs and returns how long that took.
func waitDead(t *testing.T, what string, pids ...int) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		left := 0
		for _, pid := range pids {
			if testagent.Running(pid) {
				left++
			}
		}
		if left == 0 {
			return time.Since(start)
		}
		if time.Since(start) > 60*time.Second {
			t.Fatalf("%s: %d of %v still run", what, left, pids)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// bridge is `agentbridge serve` in a process of its own, so a test can
// kill it as a crash would.
type bridge struct {
	t    *testing.T
	cmd  *exec.Cmd
	mu   sync.Mutex
	log  strings.Builder
	grew chan struct{}
	done chan struct{}
}

func startBridge(t *testing.T, cfg string, env ...string) *bridge {
	t.Helper()
	b := &bridge{t: t, grew: make(chan struct{}, 1), done: make(chan struct{})}
	b.cmd = agentbridgeCommand("serve", "--config", cfg)
	b.cmd.Env = append(b.cmd.Env, env...)
	out, err := b.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(b.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			b.mu.Lock()
			b.log.WriteString(sc.Text() + "\n")
			b.mu.Unlock()
			select {
			case b.grew <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		b.cmd.Process.Kill()
		<-b.done
		b.cmd.Wait()
	})
	return b
}

func (b *bridge) logText() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.log.String()
}

// waitLog waits until the log has a line containing every one of parts
// (and none of the parts written "!part").
func (b *bridge) waitLog(parts ...string) {
	b.t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		for _, line := range strings.Split(b.logText(), "\n") {
			ok := true
			for _, p := range parts {
				if not, neg := strings.CutPrefix(p, "!"); neg {
					ok = ok && !strings.Contains(line, not)
				} else {
					ok = ok && strings.Contains(line, p)
				}
			}
			if ok {
				return
			}
		}
		select {
		case <-b.grew:
		case <-b.done:
			b.t.Fatalf("bridge exited before logging %q:\n%s", parts, b.logText())
		case <-deadline:
			b.t.Fatalf("no log line with %q:\n%s", parts, b.logText())
		}
	}
}

// kill SIGKILLs the bridge, as a crash would, and waits for it to be gone.
func (b *bridge) kill() {
	b.cmd.Process.Signal(syscall.SIGKILL)
	<-b.done
	b.cmd.Wait()
}

// waitMessage waits until a message to chat satisfies cond and returns it.
func waitMessage(t *testing.T, fake *telegramtest.Server, chat int64, what string, cond func(telegramtest.Message) bool) telegramtest.Message {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		ch := fake.Changed()
		for _, m := range fake.Messages(chat) {
			if cond(m) {
				return m
			}
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no message to %d %s; messages %+v", chat, what, fake.Messages(chat))
		}
	}
}

// TestServeRecoversFromKill9: `kill -9` of serve while one conversation
// streams (its agent running a child), one shows the placeholder and one
// has a permission prompt open. The agents die with the bridge
// (Pdeathsig); on restart the child is killed, the reply keeps its text
// and says it was interrupted, the placeholder says so too, the prompt
// loses its buttons, and the next message resumes the agent session the
// interrupted turn had started (saved mid-turn, P-SID-1).
func TestServeRecoversFromKill9(t *testing.T) {
	// With drafts (Telegram's default in private chats) the streamed reply
	// is a draft, which dies with the process: its text is posted again.
	for _, drafts := range []bool{false, true} {
		t.Run(fmt.Sprintf("drafts=%v", drafts), func(t *testing.T) { serveKill9(t, drafts) })
	}
}

func serveKill9(t *testing.T, drafts bool) {
	const token = "987654:CRASH-SECRET"
	fake := telegramtest.NewServer(token)
	defer fake.Close()
	pids := t.TempDir()
	cfg := writeConfig(t, fmt.Sprintf(`store: %s
profiles: {agent: %s}
default_profile: agent
log: {level: debug}
presenter: {placeholder_delay: 100ms}
telegram:
  enabled: true
  token: ${AGENTBRIDGE_TEST_TG_TOKEN}
  api_url: %s
  drafts: %v
  allow_users: ["1001", "1002", "1003"]
`, filepath.Join(t.TempDir(), "bridge.db"), continuityProfile(t, pids), fake.URL, drafts))
	env := "AGENTBRIDGE_TEST_TG_TOKEN=" + token

	b1 := startBridge(t, cfg, env)
	streamer, prompter, waiter := int64(1001), int64(1002), int64(1003)
	fake.Push(telegramtest.PrivateMessage(1, telegramtest.User(streamer, "Ann", "ann"), "stream"))
	fake.Push(telegramtest.PrivateMessage(1, telegramtest.User(prompter, "Bo", "bo"), "perm"))
	fake.Push(telegramtest.PrivateMessage(1, telegramtest.User(waiter, "Cy", "cy"), "silent"))
	if !drafts {
		waitMessage(t, fake, streamer, "streaming", func(m telegramtest.Message) bool { return strings.Contains(m.Text, "half an answer") })
	}
	waitMessage(t, fake, prompter, "with buttons", func(m telegramtest.Message) bool { return m.Markup != "" })
	placeholder := waitMessage(t, fake, waiter, "with the placeholder", func(m telegramtest.Message) bool { return strings.HasPrefix(m.Text, "thinking…") })
	// The journal has caught up with what the chats show.
	// The streamed reply: a draft, or a real message (one that began as the
	// placeholder when the agent was slower than placeholder_delay).
	b1.waitLog("journal updated", "conv.channel=1001", "reply=", "placeholder=false", "agent_pgid=", "!reply=\"\"")
	b1.waitLog("journal updated", "conv.channel=1002", "prompts=1", "agent_pgid=")
	b1.waitLog("journal updated", "conv.channel=1003", "reply="+strconv.Itoa(placeholder.ID), "placeholder=true", "agent_pgid=")
	b1.waitLog("agent session id saved", "agent_session=crash-sess", "turn_finished=false") // P-SID-1
	agents := []int{pidIn(t, pids, "stream.agent"), pidIn(t, pids, "perm.agent"), pidIn(t, pids, "silent.agent")}
	child := pidIn(t, pids, "stream.child")

	b1.kill()
	t.Logf("agents died %v after the bridge", waitDead(t, "agents after kill -9 of the bridge (Pdeathsig)", agents...))
	if !testagent.Running(child) {
		t.Fatal("the agent's child died with it; the restart has nothing to clean up and the test proves nothing")
	}

	b2 := startBridge(t, cfg, env)
	took := waitDead(t, "the interrupted agent's child after the restart", child)
	t.Logf("the stale child was gone %v after the restart", took)
	b2.waitLog("killed the agent of an interrupted turn", "processes=1")

	const interrupted = "⚠️ The bridge restarted, so this answer was interrupted. Press ↻ Retry to run your message again."
	waitMessage(t, fake, streamer, "edited to say it was interrupted", func(m telegramtest.Message) bool {
		return strings.HasPrefix(m.Text, "half an answer") && strings.HasSuffix(m.Text, interrupted)
	})
	waitMessage(t, fake, waiter, "with the placeholder replaced", func(m telegramtest.Message) bool { return m.Text == interrupted })
	waitMessage(t, fake, prompter, "with the prompt expired", func(m telegramtest.Message) bool {
		return m.Markup == "" && strings.Contains(m.Text, "Permission needed") &&
			strings.Contains(m.Text, "⌛ Expired: the bridge restarted before this request was answered.")
	})

	fake.Push(telegramtest.PrivateMessage(2, telegramtest.User(streamer, "Ann", "ann"), "again"))
	waitMessage(t, fake, streamer, "from the resumed session", func(m telegramtest.Message) bool {
		return strings.Contains(m.Text, "resumed crash-sess END")
	})
}

// TestServeRunsQueuedMessagesAfterKill9: `kill -9` of serve while one
// message's turn runs and two more wait behind it. After the restart the
// queued two run, in order, once each, their queued notices edited to say
// they are still queued; the running one is not run again, its reply says
// it was interrupted and offers ↻ Retry (issue 23).
func TestServeRunsQueuedMessagesAfterKill9(t *testing.T) {
	const token = "987654:QUEUE-SECRET"
	fake := telegramtest.NewServer(token)
	defer fake.Close()
	pids := t.TempDir()
	cfg := writeConfig(t, fmt.Sprintf(`store: %s
profiles: {agent: %s}
default_profile: agent
log: {level: debug}
telegram:
  enabled: true
  token: ${AGENTBRIDGE_TEST_TG_TOKEN}
  api_url: %s
  drafts: false
  allow_users: ["1001"]
`, filepath.Join(t.TempDir(), "bridge.db"), continuityProfile(t, pids), fake.URL))
	env := "AGENTBRIDGE_TEST_TG_TOKEN=" + token
	const ann = int64(1001)
	user := telegramtest.User(ann, "Ann", "ann")

	b1 := startBridge(t, cfg, env)
	fake.Push(telegramtest.PrivateMessage(1, user, "stream"))
	waitMessage(t, fake, ann, "streaming", func(m telegramtest.Message) bool { return strings.Contains(m.Text, "half an answer") })
	fake.Push(telegramtest.PrivateMessage(2, user, "echo first"))
	fake.Push(telegramtest.PrivateMessage(3, user, "echo second"))
	n1 := waitMessage(t, fake, ann, "the first queued notice", func(m telegramtest.Message) bool { return strings.Contains(m.Text, "Queued — position 1") })
	n2 := waitMessage(t, fake, ann, "the second queued notice", func(m telegramtest.Message) bool { return strings.Contains(m.Text, "Queued — position 2") })
	// What a crash now finds: the running turn marked running, both
	// queued notices journaled.
	b1.waitLog("journal updated", "running=true", "!agent_pgid=0")
	b1.waitLog("queued turn journaled", "notice="+strconv.Itoa(n1.ID))
	b1.waitLog("queued turn journaled", "notice="+strconv.Itoa(n2.ID))
	b1.kill()

	b2 := startBridge(t, cfg, env)
	waitMessage(t, fake, ann, "the second answer", func(m telegramtest.Message) bool { return m.Text == "echo second END" })
	b2.waitLog("queued message requeued after a restart", "position=1")
	var texts []string
	for _, m := range fake.Messages(ann) {
		texts = append(texts, m.Text)
	}
	want := []string{
		"half an answer\n\n⚠️ The bridge restarted, so this answer was interrupted. Press ↻ Retry to run your message again.",
		"⏳ Still queued after a restart — answering it now.",
		"⏳ Still queued after a restart — position 1. I'll answer when the turns before it are done.",
		"echo first END",
		"echo second END",
	}
	if strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Errorf("messages after the restart:\n%q\nwant\n%q\nlog:\n%s", texts, want, b2.logText())
	}
	if m := fake.Messages(ann)[0]; !strings.Contains(m.Markup, "Retry") {
		t.Errorf("the interrupted reply's buttons = %q, want ↻ Retry", m.Markup)
	}
	if b, err := os.ReadFile(filepath.Join(pids, "stream.agent")); err != nil || len(b) == 0 {
		t.Fatal("no pid of the first agent")
	}
}

// TestChatKeepsASessionPerProfile: demo → another profile → demo in one
// conversation of `chat`, as a user would try the README's path.
func TestChatKeepsASessionPerProfile(t *testing.T) {
	state := t.TempDir()
	other := continuityProfile(t, t.TempDir())
	c := startChat(t, state)
	c.say("my name is Ada")
	c.waitFor("tokens", 1)
	c.quit()

	c2 := startChat(t, state, "--profile", other)
	c2.say("hello")
	c2.waitFor("new session END", 1)
	c2.say("hello again")
	c2.waitFor("resumed other-sess END", 1)
	c2.say("/status")
	c2.waitFor("Profile: agent.", 1)
	c2.quit()
	out := c2.output()
	if !strings.Contains(out, "🔀 Profile changed from demo to agent: starting a fresh session for agent (the demo session is kept for when you switch back).") {
		t.Errorf("no profile-change line:\n%s", out)
	}
	if n := strings.Count(out, "fresh session"); n != 1 {
		t.Errorf("the fresh-session line appears %d times, want once:\n%s", n, out)
	}

	c3 := startChat(t, state)
	c3.say("what is my name?")
	c3.waitFor("Your name is Ada.", 1)
	c3.quit()
	if !strings.Contains(c3.output(), "🔀 Profile changed from agent back to demo: resuming the earlier demo session.") {
		t.Errorf("no line on going back:\n%s", c3.output())
	}
}

// TestChatKill9KeepsTheSession: `kill -9` of chat mid-answer; the next
// start prints the interrupted text (as last journaled) with its line
// under the banner, and the next message resumes the same demo session
// (its id was saved mid-turn, P-SID-1).
func TestChatKill9KeepsTheSession(t *testing.T) {
	state := t.TempDir()
	c := startChat(t, state)
	c.say("slow")
	c.waitFor("taking my time", 1)
	sid := regexp.MustCompile(`session (demo-[0-9a-f]+)`).FindStringSubmatch(c.output())
	if sid == nil {
		t.Fatalf("no session id in:\n%s", c.output())
	}
	c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.ended
	c.cmd.Wait()

	c2 := startChat(t, state)
	c2.waitFor("⚠️ The bridge restarted, so this answer was interrupted. Press ↻ Retry to run your message again.", 1)
	out := c2.output()
	if banner, line := strings.Index(out, "Type /help"), strings.Index(out, "⚠️ The bridge restarted"); banner < 0 || line < banner {
		t.Errorf("the interrupted reply should follow the banner:\n%s", out)
	}
	// The demo keeps its memory only at the end of a turn, so the resumed
	// session is empty; its id is the interrupted turn's.
	c2.say("hello")
	c2.waitFor("session "+sid[1]+"; I have no memory of this session yet", 1)
	c2.quit()
}
