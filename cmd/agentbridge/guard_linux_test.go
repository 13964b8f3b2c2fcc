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
	bin := os.Args[0] // this test binary, run as main (mainEnv)
	dir, err := os.MkdirTemp("", "agentbridge-snoop-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(dir, "agentbridge")
	copyFile(t, bin, own)
	if err := os.WriteFile(filepath.Join(dir, "snoop.sh"), []byte(snoopAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	profile := filepath.Join(dir, "snoop.yaml")
	if err := os.WriteFile(profile, []byte("command: \"{{PROFILE_DIR}}/snoop.sh\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
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
			cmd := exec.Command(own, tc.args...)
			cmd.Dir = dir
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "XDG_STATE_HOME=" + dir, "SLACK_BOT_TOKEN=" + secret,
				mainEnv + "=1", "GORACE=atexit_sleep_ms=0"}
			cmd.Stdin = strings.NewReader(tc.stdin)
			if os.Getuid() == 0 {
				cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			}
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			bridge := cmd.Process.Pid
			if err := cmd.Wait(); err != nil {
				t.Fatalf("%s: %v\n%s", tc.name, err, out.String())
			}
			got := out.String()
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
		})
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
