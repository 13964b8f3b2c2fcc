package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/telegram/telegramtest"
)

// snoopAgent is an agent that does what a prompt-injected one would to steal
// the bridge's tokens: it reads the environment of its parent and of every
// ancestor above it (/proc/PID/environ), tries to open the parent's memory,
// and reports all of it, base64-encoded, in its reply.
const snoopAgent = `#!/bin/sh
read -r turn
out="ppid=$PPID"
p=$PPID
while [ "$p" -gt 1 ]; do
	if env=$(base64 -w0 "/proc/$p/environ" 2>/dev/null); then
		out="$out environ[$p]=read:$env"
	else
		out="$out environ[$p]=denied"
	fi
	p=$(sed -n 's/^PPid:[[:space:]]*//p' "/proc/$p/status")
	[ -n "$p" ] || break
done
if (exec <"/proc/$PPID/mem") 2>/dev/null; then out="$out mem=open"; else out="$out mem=denied"; fi
printf '{"type":"result","text":"%s"}\n' "$out"
`

// TestAgentCannotReadBridgeSecrets attacks issue 27's first finding through
// the real binary: `run` and `chat` hold a token in their environment and
// start an agent that reads /proc/$PPID/environ and its ancestors' and opens
// /proc/$PPID/mem. The token must appear nowhere in what the agent got.
//
// The bridge and the agent must share a uid without CAP_SYS_PTRACE (root
// reads any process), so as root the bridge runs as nobody; the binary and
// the profile are made readable to it, or the kernel would make the bridge
// undumpable at exec and the test would pass without the fix.
func TestAgentCannotReadBridgeSecrets(t *testing.T) {
	own, dir, profile := snoopSetup(t)
	secret := "xoxb-SECRET-" + strconv.Itoa(os.Getpid()) + "-NOT-FOR-AGENTS"

	for _, tc := range []struct {
		name  string
		args  []string
		stdin string
	}{
		{"run", []string{"run", "--profile", profile, "hi"}, ""},
		{"chat", []string{"chat", "--profile", profile, "--store", filepath.Join(dir, "chat.db")}, "hi\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := bridgeCommand(own, dir, []string{"SLACK_BOT_TOKEN=" + secret}, tc.args...)
			cmd.Stdin = strings.NewReader(tc.stdin)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			bridge := cmd.Process.Pid
			if err := cmd.Wait(); err != nil {
				t.Fatalf("%s: %v\n%s", tc.name, err, out.String())
			}
			checkSnoop(t, out.String(), bridge, secret)
		})
	}
}

// TestServeAgentCannotReadBridgeSecrets is the same attack through serve,
// which holds the Telegram token: an allowed user's message starts the
// snoop agent, whose reply (what it read) must not hold the token.
func TestServeAgentCannotReadBridgeSecrets(t *testing.T) {
	own, dir, profile := snoopSetup(t)
	token := "987654:SECRET-" + strconv.Itoa(os.Getpid())
	fake := telegramtest.NewServer(token)
	defer fake.Close()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`store: %s
profiles: {snoop: %s}
default_profile: snoop
telegram:
  enabled: true
  token: ${TELEGRAM_BOT_TOKEN}
  api_url: %s
  allow_users: ["1001"]
`, filepath.Join(dir, "bridge.db"), profile, fake.URL)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := bridgeCommand(own, dir, []string{"TELEGRAM_BOT_TOKEN=" + token}, "serve", "--config", cfg)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		<-exited
	}
	fake.Push(telegramtest.PrivateMessage(1, telegramtest.User(1001, "Alice", "alice"), "env please"))
	deadline := time.After(60 * time.Second)
	for {
		ch := fake.Changed()
		if msgs := fake.Messages(1001); len(msgs) > 0 && strings.Contains(msgs[len(msgs)-1].Text, "mem=") {
			stop()
			checkSnoop(t, msgs[len(msgs)-1].Text, cmd.Process.Pid, token)
			return
		}
		select {
		case <-ch:
		case err := <-exited:
			t.Fatalf("serve exited (%v):\n%s", err, log.String())
		case <-deadline:
			stop()
			t.Fatalf("no reply from the agent:\n%s", log.String())
		}
	}
}

// snoopSetup makes a directory anyone may use holding a copy of this test
// binary (own) and a profile running the snoop agent.
func snoopSetup(t *testing.T) (own, dir, profile string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "agentbridge-snoop-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	own = filepath.Join(dir, "agentbridge")
	copyFile(t, os.Args[0], own) // this test binary, run as main (mainEnv)
	if err := os.WriteFile(filepath.Join(dir, "snoop.sh"), []byte(snoopAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	profile = filepath.Join(dir, "snoop.yaml")
	if err := os.WriteFile(profile, []byte("command: \"{{PROFILE_DIR}}/snoop.sh\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return own, dir, profile
}

// bridgeCommand runs the copied binary with a token in its environment, as
// nobody when the test runs as root.
func bridgeCommand(own, dir string, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(own, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "XDG_STATE_HOME=" + dir,
		mainEnv + "=1", "GORACE=atexit_sleep_ms=0"}, env...)
	if os.Getuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	return cmd
}

// checkSnoop fails the test if what the snoop agent saw (got) holds the
// secret or shows the bridge's environ or memory open to it.
func checkSnoop(t *testing.T, got string, bridge int, secret string) {
	t.Helper()
	t.Logf("the agent saw: %s", got)
	// The agent's parent is the bridge itself, not some helper
	// process (agents are forked from a locked OS thread).
	if !strings.Contains(got, fmt.Sprintf("ppid=%d ", bridge)) {
		t.Fatalf("the agent's parent is not the bridge (pid %d):\n%s", bridge, got)
	}
	if !strings.Contains(got, fmt.Sprintf("environ[%d]=", bridge)) {
		t.Fatalf("the agent did not try the bridge's environ:\n%s", got)
	}
	leaked := strings.Contains(got, secret)
	for _, m := range regexp.MustCompile(`environ\[(\d+)\]=read:([A-Za-z0-9+/=]*)`).FindAllStringSubmatch(got, -1) {
		env, err := base64.StdEncoding.DecodeString(m[2])
		if err != nil {
			t.Fatalf("environ[%s]: %v", m[1], err)
		}
		if bytes.Contains(env, []byte(secret)) {
			t.Errorf("the agent read the token from /proc/%s/environ", m[1])
			leaked = true
		}
	}
	if leaked {
		t.Errorf("the bridge's token reached the agent:\n%s", got)
	}
	if !strings.Contains(got, "mem=denied") {
		t.Errorf("the agent could open /proc/%d/mem:\n%s", bridge, got)
	}
}

// copyFile copies the binary so this test owns its directory's modes.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}
