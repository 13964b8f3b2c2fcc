package engine_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/core/engine"
	"github.com/agentbridge/agentbridge/core/platformtest"
	"github.com/agentbridge/agentbridge/core/render"
	"github.com/agentbridge/agentbridge/store"
)

// agentSleep is how long each load-test agent takes; it is subtracted from
// the measured latency so what remains is the bridge's own cost.
const agentSleep = time.Second

// BenchmarkLoad runs N concurrent conversations (LOAD_CONVERSATIONS,
// default 1000) with one turn each against a sleeping shell agent, through
// the real engine, a real bbolt store and the fake platform. It reports the
// bridge's peak RSS and goroutines and the latency each turn adds beyond
// the agent's sleep, from delivery to the final reply on the platform.
//
//	go test -run '^$' -bench BenchmarkLoad -benchtime 1x ./core/engine
func BenchmarkLoad(b *testing.B) {
	n := 1000
	if v := os.Getenv("LOAD_CONVERSATIONS"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	prof := &agentproc.Profile{
		Name:    "sleeper",
		Command: "/bin/sh",
		// One turn line in, one result out after the sleep.
		Args:      []string{"-c", fmt.Sprintf(`read -r turn; sleep %g; echo '{"type":"result","text":"ok"}'`, agentSleep.Seconds())},
		Timeout:   time.Minute,
		KillGrace: time.Second,
		Streaming: true,
	}
	for b.Loop() {
		bare := bareExec(b, n, prof)
		added, agent := runLoad(b, n, prof)
		b.ReportMetric(ms(bare), "bare-exec-ms-p50")
		b.ReportMetric(ms(agent), "agent-process-ms-p50")
		// What the bridge adds beyond the agent process's own lifetime
		// (spawn to reap, as the runner measures it), at the median.
		b.ReportMetric(ms(added-agent), "bridge-ms-p50")
	}
}

// durations is an engine.Observer that keeps agent process lifetimes.
type durations struct {
	mu sync.Mutex
	d  []time.Duration
}

func (o *durations) Message(string, string)     {}
func (o *durations) TurnStarted(string, string) {}
func (o *durations) Permission(string, string)  {}
func (o *durations) ReplyLost(string)           {}
func (o *durations) TurnFinished(_, _, _ string, d time.Duration) {
	o.mu.Lock()
	o.d = append(o.d, d)
	o.mu.Unlock()
}

// bareExec runs n copies of the agent at once with plain os/exec, no
// bridge, and returns the median time each took beyond its sleep: what the
// agent itself costs at this concurrency, to subtract from the bridge's
// figure.
func bareExec(b *testing.B, n int, prof *agentproc.Profile) time.Duration {
	extra := make([]time.Duration, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			start := time.Now()
			cmd := exec.Command(prof.Command, prof.Args...)
			cmd.Stdin = strings.NewReader(`{"type":"turn","message":"hi","session_id":"","protocol_version":"0.4"}` + "\n")
			if out, err := cmd.Output(); err != nil || !strings.Contains(string(out), "ok") {
				b.Errorf("bare agent: %v %q", err, out)
			}
			extra[i] = time.Since(start) - agentSleep
		})
	}
	wg.Wait()
	slices.Sort(extra)
	return extra[n/2]
}

// runLoad runs the load through the bridge and returns the median latency
// each turn added beyond the agent's sleep, and the median agent process
// lifetime beyond the sleep.
func runLoad(b *testing.B, n int, prof *agentproc.Profile) (time.Duration, time.Duration) {
	st, err := store.Open(filepath.Join(b.TempDir(), "load.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	lim := platformtest.DefaultLimits
	lim.Dialect = render.Plain
	plat := platformtest.New("fake", lim)
	obs := &durations{}
	eng := engine.New(st, &engine.Settings{
		Platforms:      map[string]engine.PlatformSettings{"fake": {AllowUsers: []string{"*"}}},
		Profiles:       map[string]*agentproc.Profile{"sleeper": prof},
		DefaultProfile: "sleeper",
	}, engine.Options{TempDir: b.TempDir(), Observer: obs})
	h := eng.Handler(plat)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); plat.Run(ctx, h) }()
	<-plat.Running()
	defer func() {
		sctx, scancel := context.WithTimeout(context.Background(), time.Minute)
		eng.Shutdown(sctx, 10*time.Second)
		scancel()
		cancel()
		<-done
	}()

	baseGoroutines := runtime.NumGoroutine()
	delivered := make([]time.Time, n)
	convs := make([]core.ConversationKey, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		convs[i] = core.ConversationKey{Platform: "fake", Channel: "c" + strconv.Itoa(i)}
		wg.Go(func() {
			delivered[i] = time.Now()
			plat.Deliver(ctx, core.Message{Conv: convs[i], ID: "m" + strconv.Itoa(i), From: core.User{ID: "u"}, Text: "hi"})
		})
	}
	wg.Wait()
	// While the agents sleep, every conversation has a turn in flight.
	time.Sleep(agentSleep / 2)
	peakGoroutines := runtime.NumGoroutine() - baseGoroutines
	var mem runtime.MemStats
	runtime.ReadMemStats(&mem)
	if path := os.Getenv("LOAD_HEAPPROFILE"); path != "" {
		// A snapshot of what the in-flight turns hold, for go tool pprof.
		if f, err := os.Create(path); err == nil {
			pprof.WriteHeapProfile(f)
			f.Close()
		}
	}

	wctx, wcancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer wcancel()
	if err := eng.Idle(wctx); err != nil {
		b.Fatalf("turns did not finish: %v", err)
	}
	wall := time.Since(start)

	// The final reply is the last send or edit in each conversation.
	final := map[core.ConversationKey]time.Time{}
	failed := 0
	for _, c := range plat.Calls() {
		if c.Op != platformtest.OpSend && c.Op != platformtest.OpEdit {
			continue
		}
		if c.Err != nil || !strings.Contains(c.Post.Text, "ok") {
			failed++
			continue
		}
		final[c.Conv] = c.At
	}
	var added []time.Duration
	for i, conv := range convs {
		at, ok := final[conv]
		if !ok {
			b.Fatalf("conversation %d got no reply", i)
		}
		added = append(added, at.Sub(delivered[i])-agentSleep)
	}
	slices.Sort(added)
	b.ReportMetric(float64(n), "conversations")
	b.ReportMetric(ms(added[len(added)/2]), "added-ms-p50")
	b.ReportMetric(ms(added[len(added)*9/10]), "added-ms-p90")
	b.ReportMetric(ms(added[len(added)-1]), "added-ms-max")
	b.ReportMetric(float64(peakGoroutines), "goroutines-in-flight")
	b.ReportMetric(float64(peakGoroutines)/float64(n), "goroutines-per-turn")
	b.ReportMetric(rssMB("VmHWM"), "peak-rss-MB")
	// Live memory while every turn is in flight (heap and goroutine stacks).
	b.ReportMetric(float64(mem.HeapInuse+mem.StackInuse)/(1<<20), "in-flight-heap+stacks-MB")
	b.ReportMetric(wall.Seconds(), "wall-s")
	if failed > 0 {
		b.Errorf("%d platform calls failed or lacked the reply", failed)
	}
	slices.Sort(obs.d)
	if len(obs.d) != n {
		b.Fatalf("%d turns finished, want %d", len(obs.d), n)
	}
	return added[len(added)/2], obs.d[n/2] - agentSleep
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// rssMB reads a memory figure of this process from /proc (Linux).
func rssMB(field string) float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return float64(kb) / 1024
		}
	}
	return -1
}
