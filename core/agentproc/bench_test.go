package agentproc

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkTrivialTurn measures a whole Run of an agent that answers with
// one result line: spawn, turn line, read, reap.
func BenchmarkTrivialTurn(b *testing.B) {
	p := agentProfile(b, "lines", map[string]string{"AGENT_LINES": `["{\"type\":\"result\",\"text\":\"ok\"}"]`})
	for b.Loop() {
		o, err := Run(context.Background(), p, Turn{Message: "hi"}, Options{})
		if err != nil || o.Reply != "ok" {
			b.Fatalf("outcome %+v err %v", o, err)
		}
	}
}

// BenchmarkPartials measures throughput of small partials through Run to
// OnEvent; memory stays bounded because partials are not collected.
func BenchmarkPartials(b *testing.B) {
	const n = 100000
	p := agentProfile(b, "partials", map[string]string{"AGENT_COUNT": strconv.Itoa(n)})
	var events int
	for b.Loop() {
		o, err := Run(context.Background(), p, Turn{Message: "hi"}, Options{OnEvent: func(Event) { events++ }})
		if err != nil || o.Failed() {
			b.Fatalf("outcome %+v err %v", o, err)
		}
	}
	if events != n*b.N {
		b.Fatalf("saw %d events, want %d", events, n*b.N)
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkBigPartials measures throughput of 1 MiB partials through Run
// to OnEvent (each line is read, unquoted and handed over as a string).
func BenchmarkBigPartials(b *testing.B) {
	const n, size = 20, 1 << 20
	p := agentProfile(b, "bigpartials", map[string]string{"AGENT_COUNT": strconv.Itoa(n), "AGENT_SIZE": strconv.Itoa(size)})
	var bytes int64
	for b.Loop() {
		o, err := Run(context.Background(), p, Turn{Message: "hi"}, Options{OnEvent: func(e Event) { bytes += int64(len(e.Text)) }})
		if err != nil || o.Failed() {
			b.Fatalf("outcome %+v err %v", o, err)
		}
	}
	if bytes != int64(n*size*b.N) {
		b.Fatalf("saw %d bytes of text, want %d", bytes, n*size*b.N)
	}
	b.SetBytes(n * size)
}

// BenchmarkIdleTurnMemory reports what one running but idle turn holds in
// the bridge process: heap and goroutine stacks (B/turn, measured after a
// GC with many turns idle at once) and OS threads (threads/turn, from
// /proc/self/status). The agent sends one partial and then sleeps.
func BenchmarkIdleTurnMemory(b *testing.B) {
	const turns = 100
	p := &Profile{
		Name: "idle", Command: "/bin/sh",
		Args:    []string{"-c", `printf '{"type":"partial","text":"ready"}\n'; exec sleep 600`},
		Timeout: time.Minute, KillGrace: time.Second, Streaming: true,
	}
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		threadsBefore := threads(b)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		ready := make(chan struct{}, turns)
		for range turns {
			wg.Go(func() {
				var once sync.Once
				o, err := Run(ctx, p, Turn{Message: "hi"}, Options{OnEvent: func(Event) { once.Do(func() { ready <- struct{}{} }) }})
				if err != nil || o.ExitCode != 143 {
					b.Errorf("outcome %+v err %v", o, err)
				}
			})
		}
		for range turns {
			<-ready
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		threadsAfter := threads(b)
		cancel()
		wg.Wait()
		held := (after.HeapInuse + after.StackInuse) - (before.HeapInuse + before.StackInuse)
		b.ReportMetric(float64(held)/turns, "B/turn")
		b.ReportMetric(float64(threadsAfter-threadsBefore)/turns, "threads/turn")
	}
}

// threads is the process's current OS thread count.
func threads(tb testing.TB) int {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				tb.Fatal(err)
			}
			return n
		}
	}
	tb.Fatal("no Threads line in /proc/self/status")
	return 0
}
