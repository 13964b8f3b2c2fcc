package agentcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// readSyscalls are the numbers of read(2), readv(2) and pread64(2), whose
// first argument is the file descriptor, on the architectures /proc
// syscall decoding is known for.
var readSyscalls = map[string][]int{
	"amd64": {0, 19, 17},
	"arm64": {63, 65, 67},
}

// snapshot describes, from /proc, what the agent's process group is doing:
// how many processes, where their threads sleep, and whether any of them is
// blocked reading the agent's stdin. It is evidence for a report, so it
// says so when /proc cannot tell.
func snapshot(pgid int) string {
	stdin, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/0", pgid))
	if err != nil {
		return "no /proc view of the agent"
	}
	var procs []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pid == pgid || groupOf(pid) == pgid {
			procs = append(procs, pid)
		}
	}
	waits := map[string]int{}
	var readers []string
	nrs := readSyscalls[runtime.GOARCH]
	for _, pid := range procs {
		fd0, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/0", pid))
		comm := readTrim(fmt.Sprintf("/proc/%d/comm", pid))
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
		for _, task := range tasks {
			if w := readTrim(task + "/wchan"); w != "" && w != "0" {
				waits[w]++
			}
			f := strings.Fields(readTrim(task + "/syscall"))
			if len(f) < 2 || fd0 != stdin {
				continue
			}
			nr, err := strconv.Atoi(f[0])
			if err == nil && slices.Contains(nrs, nr) && f[1] == "0x0" {
				readers = append(readers, fmt.Sprintf("%s (pid %d)", comm, pid))
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d process(es) in its group", len(procs))
	if len(readers) > 0 {
		fmt.Fprintf(&b, "; blocked reading stdin: %s", strings.Join(slices.Compact(readers), ", "))
	}
	if len(waits) > 0 {
		keys := make([]string, 0, len(waits))
		for k := range waits {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s×%d", k, waits[k])
		}
		fmt.Fprintf(&b, "; threads waiting in %s", strings.Join(parts, ", "))
	}
	return b.String()
}

// groupOf returns the process group of pid from /proc/PID/stat, or -1.
func groupOf(pid int) int {
	s := readTrim(fmt.Sprintf("/proc/%d/stat", pid))
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(s[i+1:]) // state ppid pgrp …
	if len(f) < 3 {
		return -1
	}
	g, err := strconv.Atoi(f[2])
	if err != nil {
		return -1
	}
	return g
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
