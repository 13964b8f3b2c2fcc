package engine_test

import (
	"context"
	"encoding/json"
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

// BenchmarkLoad runs N concurrent conversations (LOAD_CONVERSATIONS,
// default 1000) with one turn each, through the real engine, a real bbolt
// store and the fake platform, to a real agent process per turn
// (bench/agents/sleeper, built here). The messages arrive at once
// (LOAD_RAMP=0, the default) or spread evenly over LOAD_RAMP; each agent
// sleeps LOAD_SLEEP (default LOAD_RAMP+2s, so every turn is in flight
// together). It reports the bridge's peak RSS, goroutines and memory with
// every turn in flight, and the latency the bridge adds to each turn:
// delivery → the agent's main, plus the agent's result write → the final
// reply on the platform. The agent stamps both of its ends, so its own
// start-up, sleep and work are excluded. LOAD_BARE=1 also execs the same
// agents with plain os/exec, no bridge, at the same arrival times.
//
//	go test -run '^$' -bench BenchmarkLoad -benchtime 1x ./core/engine
func BenchmarkLoad(b *testing.B) {
	n := 1000
	if v := os.Getenv("LOAD_CONVERSATIONS"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	ramp := envDuration(b, "LOAD_RAMP", 0)
	sleep := envDuration(b, "LOAD_SLEEP", ramp+2*time.Second)
	agent := filepath.Join(b.TempDir(), "sleeper")
	if out, err := exec.Command("go", "build", "-o", agent, "../../bench/agents/sleeper").CombinedOutput(); err != nil {
		b.Fatalf("building the sleeper agent: %v\n%s", err, out)
	}
	prof := &agentproc.Profile{
		Name:      "sleeper",
		Command:   agent,
		Args:      []string{sleep.String()},
		Timeout:   time.Minute + 2*sleep,
		KillGrace: time.Second,
		Streaming: true,
	}
	for b.Loop() {
		runLoad(b, n, ramp, sleep, prof)
		if os.Getenv("LOAD_BARE") == "1" {
			b.ReportMetric(ms(bareExec(b, n, ramp, prof)), "bare-pre-ms-p50")
		}
	}
}

func envDuration(b *testing.B, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	return d
}

// arrivals returns when each of n messages arrives: all at start, or
// evenly spread over ramp.
func arrivals(start time.Time, n int, ramp time.Duration) []time.Time {
	at := make([]time.Time, n)
	for i := range at {
		at[i] = start.Add(ramp * time.Duration(i) / time.Duration(n))
	}
	return at
}

// agentStamps reads the two timestamps the sleeper puts in its reply: when
// its main began and when it wrote the result.
func agentStamps(text string) (began, answered time.Time, ok bool) {
	f := strings.Fields(text)
	if len(f) != 3 || f[0] != "ok" {
		return time.Time{}, time.Time{}, false
	}
	a, err1 := strconv.ParseInt(f[1], 10, 64)
	z, err2 := strconv.ParseInt(f[2], 10, 64)
	return time.Unix(0, a), time.Unix(0, z), err1 == nil && err2 == nil
}

// bareExec starts n copies of the agent with plain os/exec, no bridge, at
// the same arrival times, and returns the median time from the exec call to
// the agent's main: what starting a process costs at this concurrency.
func bareExec(b *testing.B, n int, ramp time.Duration, prof *agentproc.Profile) time.Duration {
	pre := make([]time.Duration, n)
	at := arrivals(time.Now(), n, ramp)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			time.Sleep(time.Until(at[i]))
			start := time.Now()
			cmd := exec.Command(prof.Command, prof.Args...)
			cmd.Stdin = strings.NewReader(`{"type":"turn","message":"hi","session_id":"","protocol_version":"0.4"}` + "\n")
			out, err := cmd.Output()
			var text struct{ Text string }
			_ = json.Unmarshal(out, &text)
			began, _, ok := agentStamps(text.Text)
			if err != nil || !ok {
				b.Errorf("bare agent: %v %q", err, out)
			}
			pre[i] = began.Sub(start)
		})
	}
	wg.Wait()
	slices.Sort(pre)
	return pre[n/2]
}

// runLoad runs the load through the bridge and reports its metrics.
func runLoad(b *testing.B, n int, ramp, sleep time.Duration, prof *agentproc.Profile) {
	st, err := store.Open(filepath.Join(b.TempDir(), "load.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	lim := platformtest.DefaultLimits
	lim.Dialect = render.Plain
	plat := platformtest.New("fake", lim)
	eng := engine.New(st, &engine.Settings{
		Platforms:      map[string]engine.PlatformSettings{"fake": {AllowUsers: []string{"*"}}},
		Profiles:       map[string]*agentproc.Profile{"sleeper": prof},
		DefaultProfile: "sleeper",
		// Every turn in flight at once, as an operator who raised
		// max_concurrent_turns for it would have them: the bridge's own cost.
		MaxTurns:        n,
		MaxTurnsPerUser: n,
	}, engine.Options{TempDir: b.TempDir()})
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
	start := time.Now()
	at := arrivals(start, n, ramp)
	var wg sync.WaitGroup
	for i := range n {
		convs[i] = core.ConversationKey{Platform: "fake", Channel: "c" + strconv.Itoa(i)}
		wg.Go(func() {
			time.Sleep(time.Until(at[i]))
			delivered[i] = time.Now()
			plat.Deliver(ctx, core.Message{Conv: convs[i], ID: "m" + strconv.Itoa(i), From: core.User{ID: "u"}, Text: "hi"})
		})
	}
	wg.Wait()
	// Half-way between the last arrival and the first agent's answer, every
	// conversation has a turn in flight.
	time.Sleep(time.Until(start.Add(ramp + (sleep-ramp)/2)))
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
	if path := os.Getenv("LOAD_GOROUTINES"); path != "" {
		// Where the in-flight turns' goroutines wait, grouped by stack.
		if f, err := os.Create(path); err == nil {
			pprof.Lookup("goroutine").WriteTo(f, 1)
			f.Close()
		}
	}

	wctx, wcancel := context.WithTimeout(context.Background(), 2*time.Minute+2*sleep)
	defer wcancel()
	if err := eng.Idle(wctx); err != nil {
		b.Fatalf("turns did not finish: %v", err)
	}
	wall := time.Since(start)

	// The final reply is the last send or edit in each conversation.
	type reply struct {
		at   time.Time
		text string
	}
	final := map[core.ConversationKey]reply{}
	for _, c := range plat.Calls() {
		if c.Op != platformtest.OpSend && c.Op != platformtest.OpEdit {
			continue
		}
		if c.Err != nil {
			b.Errorf("%s in %v failed: %v", c.Op, c.Conv, c.Err)
			continue
		}
		final[c.Conv] = reply{c.At, c.Post.Text}
	}
	var bridge, pre, post, e2e []time.Duration
	for i, conv := range convs {
		r, ok := final[conv]
		if !ok {
			b.Fatalf("conversation %d got no reply", i)
		}
		began, answered, ok := agentStamps(r.text)
		if !ok {
			b.Fatalf("conversation %d: final reply %q lacks the agent's stamps", i, r.text)
		}
		pre = append(pre, began.Sub(delivered[i]))
		post = append(post, r.at.Sub(answered))
		bridge = append(bridge, began.Sub(delivered[i])+r.at.Sub(answered))
		e2e = append(e2e, r.at.Sub(delivered[i])-sleep)
	}
	for _, d := range [][]time.Duration{bridge, pre, post, e2e} {
		slices.Sort(d)
	}
	p := func(d []time.Duration, q float64) float64 { return ms(d[int(q*float64(len(d)-1))]) }
	b.ReportMetric(float64(n), "conversations")
	b.ReportMetric(p(bridge, 0.5), "bridge-ms-p50")
	b.ReportMetric(p(bridge, 0.9), "bridge-ms-p90")
	b.ReportMetric(p(bridge, 1), "bridge-ms-max")
	b.ReportMetric(p(pre, 0.5), "pre-ms-p50")
	b.ReportMetric(p(post, 0.5), "post-ms-p50")
	b.ReportMetric(p(e2e, 0.5), "e2e-minus-sleep-ms-p50")
	b.ReportMetric(float64(peakGoroutines), "goroutines-in-flight")
	b.ReportMetric(float64(peakGoroutines)/float64(n), "goroutines-per-turn")
	b.ReportMetric(rssMB("VmHWM"), "peak-rss-MB")
	// Memory while every turn is in flight: heap spans in use (live data
	// and garbage not yet collected) and goroutine stacks.
	b.ReportMetric(float64(mem.HeapInuse)/(1<<20), "in-flight-heap-MB")
	b.ReportMetric(float64(mem.StackInuse)/(1<<20), "in-flight-stacks-MB")
	b.ReportMetric(wall.Seconds(), "wall-s")
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
