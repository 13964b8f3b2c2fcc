package agentproc

import (
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/internal/testagent"
)

// waitGone waits until pid no longer runs, failing after a deadline that
// only bounds failure.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for testagent.Running(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestKillStaleKillsTheGroupWithOrWithoutItsLeader(t *testing.T) {
	t.Run("leader alive", func(t *testing.T) {
		cmd, child := testagent.StartGroup(t)
		g := GroupOf(cmd.Process.Pid)
		if g.StartTicks == 0 || g.BootID == "" {
			t.Fatalf("GroupOf = %+v, want start time and boot id", g)
		}
		n, err := KillStale(g)
		if err != nil || n != 2 {
			t.Fatalf("KillStale = %d, %v; want the leader and its child killed", n, err)
		}
		cmd.Wait()
		waitGone(t, child)
	})
	t.Run("leader gone", func(t *testing.T) {
		// The bridge's crash killed the agent (Pdeathsig); the CLI it ran
		// is left in the group, orphaned.
		cmd, child := testagent.StartGroup(t)
		g := GroupOf(cmd.Process.Pid)
		cmd.Process.Kill()
		cmd.Wait()
		if !testagent.Running(child) {
			t.Fatal("the child died with its parent; the test proves nothing")
		}
		n, err := KillStale(g)
		if err != nil || n != 1 {
			t.Fatalf("KillStale = %d, %v; want the orphaned child killed", n, err)
		}
		waitGone(t, child)
	})
}

func TestKillStaleNeverSignalsAReusedID(t *testing.T) {
	cmd, child := testagent.StartGroup(t)
	g := GroupOf(cmd.Process.Pid)
	for name, stale := range map[string]Group{
		// The same pid running since another time: a reused id.
		"other start time": {PID: g.PID, StartTicks: g.StartTicks - 1, BootID: g.BootID},
		"other boot":       {PID: g.PID, StartTicks: g.StartTicks, BootID: "another-boot"},
		"no start time":    {PID: g.PID, BootID: g.BootID},
	} {
		if n, err := KillStale(stale); err != nil || n != 0 {
			t.Errorf("%s: KillStale = %d, %v; want nothing killed", name, n, err)
		}
	}
	if !testagent.Running(cmd.Process.Pid) || !testagent.Running(child) {
		t.Fatal("a process of a group that was not the journaled one was killed")
	}
}

func TestAgentSurvivesOSThreadsEnding(t *testing.T) {
	// Threads that end (a goroutine returning while locked to its thread)
	// must not take an agent with them through Pdeathsig: agents are forked
	// from the spawner's thread, which lives while they do.
	p := &Profile{Command: "/bin/sh", Args: []string{"-c", "sleep 0.5; echo '{\"type\":\"result\",\"text\":\"survived\"}'"}, Timeout: 30 * time.Second, KillGrace: time.Second}
	done := make(chan Outcome)
	go func() {
		out, _ := Run(t.Context(), p, Turn{Message: "x"}, Options{})
		done <- out
	}()
	for range 64 {
		ended := make(chan struct{})
		go func() {
			defer close(ended)
			lockAndEnd()
		}()
		<-ended
	}
	out := <-done
	if out.ExitCode != 0 || out.Reply != "survived" {
		t.Fatalf("outcome = exit %d reply %q stderr %q; the agent was killed when a thread ended", out.ExitCode, out.Reply, out.Stderr)
	}
}

// lockAndEnd ends its goroutine locked to its OS thread, so the runtime
// ends the thread.
func lockAndEnd() {
	lockOSThread()
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("4242 (sh) S 1 4242 4242 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 123456 2449408 200 18446744073709551615\n"))
	f.Add([]byte("7 (a) b) (c) R 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0"))
	f.Add([]byte("1 ()"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := parseStat(b)
		if err == nil && st.state == 0 {
			t.Fatalf("parsed %q with no state", b)
		}
	})
}

func TestParseStat(t *testing.T) {
	st, err := parseStat([]byte("4242 (my (odd) name) S 1 4240 4240 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 123456 2449408 200"))
	if err != nil || st.state != 'S' || st.pgrp != 4240 || st.startTicks != 123456 {
		t.Fatalf("parseStat = %+v, %v", st, err)
	}
	if _, err := parseStat([]byte("4242 (sh) S 1")); err == nil {
		t.Error("a truncated stat parsed")
	}
	if _, err := os.ReadFile("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	self, err := readStat(os.Getpid())
	if err != nil || self.pgrp != syscall.Getpgrp() {
		t.Errorf("readStat(self) = %+v, %v; want pgrp %d", self, err, syscall.Getpgrp())
	}
}

func lockOSThread() { runtime.LockOSThread() }
