//go:build linux

package agentproc

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// staleRounds bounds KillStale: members forked while it kills are found by
// the next scan; a group still there after this many is reported.
const (
	staleRounds = 150
	staleRound  = 20 * time.Millisecond
)

// bootID is this boot's id, read once.
var bootID = sync.OnceValues(func() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("read boot id: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
})

// procStat is what KillStale needs from /proc/PID/stat.
type procStat struct {
	state      byte
	pgrp       int
	startTicks uint64
}

// parseStat parses the contents of /proc/PID/stat. The command name (field
// 2) is in parentheses and may itself hold spaces and parentheses, so the
// fields are counted from the last ')'.
func parseStat(b []byte) (procStat, error) {
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return procStat{}, errors.New("malformed stat: no command name")
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 20 {
		return procStat{}, errors.New("malformed stat: too few fields")
	}
	if st := f[0]; len(st) != 1 || (st[0] < 'A' || st[0] > 'Z') && (st[0] < 'a' || st[0] > 'z') {
		return procStat{}, fmt.Errorf("malformed stat: state %q", st)
	}
	pgrp, err := strconv.Atoi(f[2]) // field 5
	if err != nil {
		return procStat{}, fmt.Errorf("malformed stat: pgrp: %w", err)
	}
	start, err := strconv.ParseUint(f[19], 10, 64) // field 22
	if err != nil {
		return procStat{}, fmt.Errorf("malformed stat: starttime: %w", err)
	}
	return procStat{state: f[0][0], pgrp: pgrp, startTicks: start}, nil
}

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseStat(b)
}

// GroupOf names the process group led by pid, a running process, for the
// journal. When its start time cannot be read StartTicks stays 0, which
// KillStale refuses: without it a reused id could not be told apart.
func GroupOf(pid int) Group {
	g := Group{PID: pid}
	if st, err := readStat(pid); err == nil {
		g.StartTicks = st.startTicks
	}
	g.BootID, _ = bootID()
	return g
}

func (pr *proc) group() Group { return GroupOf(pr.pid) }

// KillStale kills what is left of g, an agent's process group from before
// a crash of the bridge, and returns how many processes it killed. Only
// processes proven to belong to g are signalled:
//
//   - a g from another boot (BootID) has nothing left;
//   - if a process with g's pid runs but started at another time, the pid
//     was reused, which the kernel does only once no process is left in
//     the group: nothing is left;
//   - otherwise the members are the processes whose process group is
//     g.PID and that started no earlier than the leader; each is opened as a
//     pidfd, checked again through /proc (so a pid reused between the scan
//     and the signal is not hit) and killed through the pidfd.
//
// The one case this cannot tell apart needs the pid space to wrap around
// while the bridge is down: the whole group gone, its id given to a new
// process that made a group of its own and exited, leaving members.
// Members forked during the kill are found by the next scan; processes
// that left the group (setsid) are out of reach, as they are of a turn's
// own cleanup (D-GROUP-1).
func KillStale(g Group) (int, error) {
	if g.PID <= 1 || g.StartTicks == 0 {
		return 0, nil
	}
	if boot, err := bootID(); err != nil {
		return 0, err
	} else if g.BootID != "" && g.BootID != boot {
		return 0, nil
	}
	if st, err := readStat(g.PID); err == nil && st.startTicks != g.StartTicks {
		return 0, nil
	}
	killed := 0
	for range staleRounds {
		members, err := groupMembers(g)
		if err != nil {
			return killed, err
		}
		if len(members) == 0 {
			return killed, nil
		}
		for _, m := range members {
			ok, err := killVerified(m, g)
			if err != nil {
				return killed, err
			}
			if ok {
				killed++
			}
		}
		time.Sleep(staleRound) // let the kills land before looking again
	}
	return killed, fmt.Errorf("process group %d still has processes after %v", g.PID, staleRounds*staleRound)
}

// member is a live process of a stale group as one scan saw it.
type member struct {
	pid   int
	start uint64
}

// groupMembers scans /proc for the live (not zombie) processes of g.
func groupMembers(g Group) ([]member, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("list /proc: %w", err)
	}
	var out []member
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || pid == os.Getpid() {
			continue
		}
		st, err := readStat(pid)
		if err != nil || !st.liveMemberOf(g) {
			continue // gone meanwhile, or not ours
		}
		out = append(out, member{pid: pid, start: st.startTicks})
	}
	return out, nil
}

func (st procStat) liveMemberOf(g Group) bool {
	return st.pgrp == g.PID && st.startTicks >= g.StartTicks && st.state != 'Z' && st.state != 'X'
}

// killVerified kills m through a pidfd after checking, with the pidfd
// open, that the pid still names the process the scan saw. It reports
// false for a process that is already gone.
func killVerified(m member, g Group) (bool, error) {
	fd, err := unix.PidfdOpen(m.pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("open pidfd of %d: %w", m.pid, err)
	}
	defer unix.Close(fd)
	st, err := readStat(m.pid)
	if err != nil || st.startTicks != m.start || !st.liveMemberOf(g) {
		return false, nil // exited and perhaps reused since the scan
	}
	err = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
	if errors.Is(err, unix.ESRCH) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("kill %d: %w", m.pid, err)
	}
	return true, nil
}
