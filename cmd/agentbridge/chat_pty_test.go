//go:build linux

package main

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair, 100 columns wide.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slave.Close() })
	if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 100}); err != nil {
		t.Fatal(err)
	}
	return master, slave
}

// TestChatInATerminal drives chat on a real pseudo-terminal, as a person
// would: typing during a streamed answer stays on the prompt line, Ctrl-C
// (the terminal's interrupt key) stops the turn and the chat goes on,
// Ctrl-D quits, and the terminal's own echo and line mode come back.
func TestChatInATerminal(t *testing.T) {
	master, slave := openPTY(t)
	cmd := agentbridgeCommand("chat")
	cmd.Env = append(cmd.Env, "XDG_STATE_HOME="+t.TempDir(), "AGENTBRIDGE_DEMO_DELAY=100ms")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})

	var mu sync.Mutex
	var out strings.Builder
	go func() { // ends when the master is closed
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			mu.Lock()
			out.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	output := func() string { mu.Lock(); defer mu.Unlock(); return out.String() }
	waitFor := func(want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(output(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q after 30s; output:\n%q", want, output())
			}
			time.Sleep(20 * time.Millisecond) // polling a pty: no event to wait on
		}
	}
	typeKeys := func(s string) {
		t.Helper()
		if _, err := master.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}

	waitFor("you> ")
	typeKeys("slow\r")
	waitFor("taking my time")
	typeKeys("xyzzy")
	waitFor("you> xyzzy")
	waitFor(" coming.") // the answer went on meanwhile, word by word
	// Typed text only ever appears as the prompt's line, never inside the
	// streamed answer.
	o := output()
	for i := strings.Index(o, "xyzzy"); i >= 0; i = indexFrom(o, "xyzzy", i+1) {
		if !strings.HasSuffix(o[:i], "you> ") {
			t.Fatalf("typed text outside the prompt line at byte %d: %q", i, o[max(0, i-80):min(len(o), i+20)])
		}
	}

	typeKeys("\x03") // Ctrl-C: the terminal sends SIGINT
	waitFor("⏹ Stopped.")
	typeKeys("\x15\x04") // Ctrl-U empties the line, Ctrl-D quits
	select {
	case <-exited:
		if waitErr != nil {
			t.Errorf("chat exited with %v; output:\n%q", waitErr, output())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("chat did not quit on Ctrl-D; output:\n%q", output())
	}
	tio, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if tio.Lflag&unix.ECHO == 0 || tio.Lflag&unix.ICANON == 0 {
		t.Errorf("the terminal was left without echo or line mode: lflag %#x", tio.Lflag)
	}
}

func indexFrom(s, sub string, from int) int {
	if i := strings.Index(s[from:], sub); i >= 0 {
		return from + i
	}
	return -1
}
