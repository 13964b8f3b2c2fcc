//go:build linux

// This file: spec/protocol.md, "The shape of a turn" steps 1 and 4 and
// "Exit status, timeout, stop" (Cleanup, D-GROUP-1) — the Linux process
// layer: the agent in its own process group, waiting for its exit without
// reaping it, and signalling the whole group.

package agentproc

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// proc is a started agent and the bridge's ends of its pipes.
type proc struct {
	cmd                   *exec.Cmd
	pid                   int
	stdin, stdout, stderr *os.File
}

// startAgent spawns argv in its own process group (D-GROUP-1), to be
// killed with the bridge (Pdeathsig), with the
// bridge's pipe ends kept as pollable *os.File, so reads and writes can be
// bounded with deadlines when something holds them open.
func startAgent(path string, argv, env []string, cwd string, cred *syscall.Credential) (*proc, error) {
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, fmt.Errorf("agent stdin: %w", err)
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("agent stdout: %w", err)
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("agent stderr: %w", err)
	}
	cmd := &exec.Cmd{
		Path: path, Args: argv, Env: env, Dir: cwd,
		Stdin: inR, Stdout: outW, Stderr: errW,
		// Pdeathsig ties the agent to the bridge: if the bridge dies (kill
		// -9, OOM) the kernel kills the agent, and KillStale finds the rest
		// of its group on the next start.
		// Credential (the profile's user) is set before Pdeathsig in the
		// child, so the kernel's reset of it on a change of uid comes first.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred},
	}
	if err := spawn(cmd); err != nil {
		closeAll()
		return nil, err
	}
	// The child has its own copies; the bridge keeps only its ends, so EOF on
	// stdout means every writer is gone.
	inR.Close()
	outW.Close()
	errW.Close()
	return &proc{cmd: cmd, pid: cmd.Process.Pid, stdin: inW, stdout: outR, stderr: errR}, nil
}

// wait reaps the agent after waitExited, and tells the spawner its thread
// may go.
func (pr *proc) wait() error {
	err := pr.cmd.Wait()
	spawned()
	return err
}

// The spawner starts every agent from one OS thread that lives as long as
// any agent it started. PR_SET_PDEATHSIG fires when the thread that forked
// the child exits, not the process (golang/go#27505), and Go ends a thread
// when a goroutine locked to it returns without unlocking: forked from an
// ordinary goroutine, an agent could be killed mid-turn because some later
// goroutine ended locked on that thread. The spawner's goroutine holds its
// thread locked until its last agent is reaped, then unlocks it (the thread
// goes back to the runtime, alive) and ends; the next start begins a new one.
var spawner struct {
	mu   sync.Mutex
	live int // agents started and not yet reaped, plus starts in progress
	reqs chan spawnReq
}

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

// spawn starts cmd on the spawner's thread. Once it succeeds, spawned must
// be called after the child is reaped.
func spawn(cmd *exec.Cmd) error {
	spawner.mu.Lock()
	if spawner.live == 0 {
		spawner.reqs = make(chan spawnReq)
		go spawnLoop(spawner.reqs)
	}
	spawner.live++
	reqs := spawner.reqs
	spawner.mu.Unlock()
	req := spawnReq{cmd: cmd, done: make(chan error, 1)}
	reqs <- req
	err := <-req.done
	if err != nil {
		spawned()
	}
	return err
}

// spawned notes a child of the spawner reaped (or never started).
func spawned() {
	spawner.mu.Lock()
	defer spawner.mu.Unlock()
	spawner.live--
	if spawner.live == 0 {
		close(spawner.reqs)
		spawner.reqs = nil
	}
}

func spawnLoop(reqs <-chan spawnReq) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for r := range reqs {
		r.done <- r.cmd.Start()
	}
}

// waitExited blocks until the process has exited without reaping it
// (WNOWAIT), so the caller can still signal its process group safely.
//
// It waits on a pidfd through the runtime's poller, so a running turn does
// not pin an OS thread in a blocking waitid (with 1,000 turns that would be
// 1,000 threads and their stacks); without pidfds it falls back to that
// blocking waitid.
func waitExited(pid int) {
	if fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK); err == nil {
		// The child is not reaped before this returns, so pid still names it.
		f := os.NewFile(uintptr(fd), "pidfd")
		defer f.Close()
		if rc, err := f.SyscallConn(); err == nil {
			var waitErr error
			// The state is checked on every call, so an exit signalled
			// before the poller waits is not missed.
			err = rc.Read(func(fd uintptr) bool {
				for {
					var info unix.Siginfo // zeroed: Signo stays 0 while it runs
					waitErr = unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, nil)
					if waitErr != unix.EINTR {
						return waitErr != nil || info.Signo != 0
					}
				}
			})
			if err == nil && waitErr == nil {
				return
			}
		}
	}
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return
		}
	}
}

// signalGroup signals the agent's whole process group.
func signalGroup(pid int, sig syscall.Signal) {
	_ = syscall.Kill(-pid, sig) // ESRCH: the group is already gone
}

// exitCode is the agent's own exit status once reaped: 128+N when a signal
// N ended it, 1 when waiting failed without a status.
func (pr *proc) exitCode(waitErr error) int {
	st := pr.cmd.ProcessState
	if st == nil {
		if waitErr != nil {
			return 1
		}
		return 0
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return st.ExitCode()
}
