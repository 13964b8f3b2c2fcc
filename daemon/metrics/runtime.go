package metrics

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// writeRuntime prints the Go runtime's and the process's own series, under
// the names the Prometheus client's Go and process collectors use, so
// dashboards built for those keep working.
func writeRuntime(w *bufio.Writer) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	w.WriteString("# HELP go_info Information about the Go environment.\n# TYPE go_info gauge\n")
	w.WriteString(`go_info{version="` + escapeLabel(runtime.Version()) + `"} 1` + "\n")
	gauge(w, kindGauge, "go_goroutines", "Number of goroutines that currently exist.", float64(runtime.NumGoroutine()))
	gauge(w, kindGauge, "go_memstats_alloc_bytes", "Number of bytes allocated in heap and currently in use.", float64(ms.HeapAlloc))
	gauge(w, kindCounter, "go_memstats_alloc_bytes_total", "Total number of bytes allocated in heap until now, even if released already.", float64(ms.TotalAlloc))
	gauge(w, kindGauge, "go_memstats_heap_inuse_bytes", "Number of heap bytes that are in use.", float64(ms.HeapInuse))
	gauge(w, kindGauge, "go_memstats_sys_bytes", "Number of bytes obtained from system.", float64(ms.Sys))
	gauge(w, kindCounter, "go_gc_cycles_total", "Number of completed GC cycles.", float64(ms.NumGC))
	gauge(w, kindGauge, "go_memstats_last_gc_time_seconds", "Number of seconds since 1970 of last garbage collection.", float64(ms.LastGC)/1e9)

	p, ok := readProcStat()
	if !ok {
		return
	}
	gauge(w, kindCounter, "process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", p.cpuSeconds)
	gauge(w, kindGauge, "process_resident_memory_bytes", "Resident memory size in bytes.", p.rssBytes)
	gauge(w, kindGauge, "process_virtual_memory_bytes", "Virtual memory size in bytes.", p.vsizeBytes)
	if p.startTime > 0 {
		gauge(w, kindGauge, "process_start_time_seconds", "Start time of the process since unix epoch in seconds.", p.startTime)
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		gauge(w, kindGauge, "process_open_fds", "Number of open file descriptors.", float64(len(fds)))
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		gauge(w, kindGauge, "process_max_fds", "Maximum number of open file descriptors.", float64(lim.Cur))
	}
}

// userHZ is the kernel's clock tick for /proc times: 100 on every Linux
// the bridge runs on (the Prometheus client assumes the same).
const userHZ = 100

type procStat struct {
	cpuSeconds, rssBytes, vsizeBytes, startTime float64
}

// readProcStat reads the process's CPU time, memory and start time from
// /proc/self/stat (and the boot time from /proc/stat).
func readProcStat() (procStat, bool) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return procStat{}, false
	}
	// The command name, in parentheses, may hold spaces: fields start
	// after its closing one, at field 3 (state).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 22 {
		return procStat{}, false
	}
	num := func(k int) float64 { v, _ := strconv.ParseFloat(f[k], 64); return v }
	p := procStat{
		cpuSeconds: (num(11) + num(12)) / userHZ, // utime, stime (fields 14, 15)
		vsizeBytes: num(20),                      // field 23
		rssBytes:   num(21) * float64(os.Getpagesize()),
	}
	if boot, ok := bootTime(); ok {
		p.startTime = boot + num(19)/userHZ // starttime (field 22), ticks after boot
	}
	return p, true
}

// bootTime is the btime line of /proc/stat: the boot, in seconds since 1970.
func bootTime() (float64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			t, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return t, err == nil
		}
	}
	return 0, false
}
