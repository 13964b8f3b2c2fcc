// Package streamload is the streaming load benchmark's driver: it runs N
// concurrent streamed replies (core/stream presenters fed by in-process
// writers) against a platform adapter talking to its fake platform, then
// measures, from what the fake received, the 429s, the share of the
// platform's budget used while the streams wanted it, each stream's
// longest wait between visible updates, and the final text's latency
// after the agent's end. The adapters' BenchmarkStreams use it.
package streamload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/stream"
)

// Update is one write the fake platform received for a reply's message.
type Update struct {
	Stream  int       // which stream (index into Config.Convs)
	At      time.Time // when the fake received it
	Text    string    // the text it carried
	Limited bool      // the fake answered 429
	Spends  bool      // it spends the budget measured (Slack: chat.update, not posts)
}

// Config is one load run.
type Config struct {
	Convs []core.ConversationKey // one stream each
	// Stream is how long the first stream writes; stream i writes
	// Stream + i·Stagger plus a random part of Stagger, so the agents end
	// at different times, and at a different point of the pacing in every
	// run (evenly staggered ends would meet a periodic pacer at the same
	// phase every run, and the final text's latency would be luck).
	Stream, Stagger time.Duration
	// Every is the agents' pace: one word each Every.
	Every time.Duration
	// Rate is the platform's documented budget in calls per second per
	// budget, and Budgets how many separate budgets the streams spread
	// over (Slack: one workspace; Discord: one per channel).
	Rate    float64
	Budgets int
	// Updates returns what the fake received, once every stream ended.
	Updates func() []Update
}

// Result is what one run measured.
type Result struct {
	Limited   int           // 429s the fake answered
	Used      float64       // share of the budget used while every stream wrote
	FairShare time.Duration // the wait between updates an equal share gives
	// LongestWait is each stream's longest gap between two visible
	// updates (the first visible text to the final one).
	LongestWait []time.Duration
	// FinalLatency is each stream's time from its agent's end to the final
	// text reaching the platform.
	FinalLatency []time.Duration
}

// endMark ends every stream's text, so the final text can be recognized.
const endMark = "END."

// Run runs cfg's streams against p and measures them.
func Run(ctx context.Context, p core.Platform, cfg Config) (Result, error) {
	n := len(cfg.Convs)
	ends := make([]time.Time, n)
	errs := make([]error, n)
	start := time.Now()
	var wg sync.WaitGroup
	for i, conv := range cfg.Convs {
		wg.Go(func() {
			pr := stream.Start(ctx, p, conv, stream.Options{})
			until := start.Add(cfg.Stream + time.Duration(i)*cfg.Stagger)
			if cfg.Stagger > 0 {
				until = until.Add(rand.N(cfg.Stagger))
			}
			t := time.NewTicker(cfg.Every)
			defer t.Stop()
			for w := 0; time.Now().Before(until); w++ {
				pr.Partial(core.RoleOutput, fmt.Sprintf("w%d ", w))
				select {
				case <-t.C:
				case <-ctx.Done():
				}
			}
			pr.Partial(core.RoleOutput, endMark)
			ends[i] = time.Now()
			errs[i] = pr.Finish(stream.Final{})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return Result{}, fmt.Errorf("stream %d: %w", i, err)
		}
	}
	return measure(cfg, start, ends, cfg.Updates()), nil
}

func measure(cfg Config, start time.Time, ends []time.Time, ups []Update) Result {
	n := len(cfg.Convs)
	r := Result{LongestWait: make([]time.Duration, n), FinalLatency: make([]time.Duration, n)}
	slices.SortFunc(ups, func(a, b Update) int { return a.At.Compare(b.At) })
	firstEnd := slices.MinFunc(ends, func(a, b time.Time) int { return a.Compare(b) })
	calls := 0
	last := make([]time.Time, n)
	final := make([]bool, n)
	for _, u := range ups {
		if u.Limited {
			r.Limited++
			continue
		}
		if u.Spends && u.At.Before(firstEnd) {
			calls++
		}
		i := u.Stream
		if final[i] {
			continue
		}
		if !last[i].IsZero() {
			r.LongestWait[i] = max(r.LongestWait[i], u.At.Sub(last[i]))
		}
		last[i] = u.At
		if strings.Contains(u.Text, endMark) {
			final[i] = true
			r.FinalLatency[i] = max(u.At.Sub(ends[i]), 0)
		}
	}
	window := firstEnd.Sub(start).Seconds()
	r.Used = float64(calls) / (cfg.Rate * float64(cfg.Budgets) * window)
	perBudget := float64(n) / float64(cfg.Budgets)
	r.FairShare = time.Duration(perBudget / cfg.Rate * float64(time.Second))
	return r
}

// Percentile returns the p-th percentile (0–100) of ds.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s)-1)*p/100+0.5))]
}

// Bench runs STREAMLOAD_RUNS (default 20) independent runs of run one
// after another (the "consecutive runs"; STREAMLOAD_PARALLEL=1
// runs them at once instead, a quick check that costs one run's wall
// time), each of STREAMLOAD_STREAMS streams (default streams) writing for
// STREAMLOAD_SECONDS (default secs), and reports them (Report), once per
// b.Loop iteration.
func Bench(b *testing.B, streams, secs int, run func(streams int, stream time.Duration) (Result, error)) {
	runs := envInt("STREAMLOAD_RUNS", 20)
	streams, secs = envInt("STREAMLOAD_STREAMS", streams), envInt("STREAMLOAD_SECONDS", secs)
	parallel := os.Getenv("STREAMLOAD_PARALLEL") == "1"
	for b.Loop() {
		results := make([]Result, runs)
		errs := make([]error, runs)
		one := func(r int) { results[r], errs[r] = run(streams, time.Duration(secs)*time.Second) }
		var wg sync.WaitGroup
		for r := range runs {
			if parallel {
				wg.Go(func() { one(r) })
			} else {
				one(r)
			}
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		Report(b, results)
	}
}

// envInt reads a benchmark knob from the environment.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// Report logs the runs' figures on b and reports them as metrics: 429s in
// all, the lowest budget share, the worst longest-wait against the fair
// share, and the final text's p50 and max latency.
func Report(b testing.TB, results []Result) {
	var limited int
	minUsed, worst := 1e9, 0.0
	var finals []time.Duration
	var fair time.Duration
	var lines []string
	for i, r := range results {
		limited += r.Limited
		minUsed = min(minUsed, r.Used)
		longest := slices.Max(r.LongestWait)
		worst = max(worst, float64(longest)/float64(r.FairShare))
		finals = append(finals, r.FinalLatency...)
		fair = r.FairShare
		lines = append(lines, fmt.Sprintf("run %2d: %d 429s, %.0f %% of the budget used, longest wait %v (fair share %v), final p50 %v max %v",
			i+1, r.Limited, r.Used*100, longest.Round(time.Millisecond), r.FairShare.Round(time.Millisecond),
			Percentile(r.FinalLatency, 50).Round(time.Millisecond), slices.Max(r.FinalLatency).Round(time.Millisecond)))
	}
	// The summary first: a benchmark's log is cut after a few lines.
	b.Logf("%d runs: %d 429s; budget used ≥ %.0f %%; longest wait ≤ %.2f× the fair share (%v); final text p50 %v, p90 %v, max %v",
		len(results), limited, minUsed*100, worst, fair.Round(time.Millisecond),
		Percentile(finals, 50).Round(time.Millisecond), Percentile(finals, 90).Round(time.Millisecond), slices.Max(finals).Round(time.Millisecond))
	for _, l := range lines {
		b.Log(l)
	}
	if bb, ok := b.(*testing.B); ok {
		bb.ReportMetric(float64(limited), "429s")
		bb.ReportMetric(minUsed*100, "%budget-min")
		bb.ReportMetric(worst, "wait/fair-max")
		bb.ReportMetric(float64(Percentile(finals, 50))/1e6, "final-p50-ms")
	}
}
