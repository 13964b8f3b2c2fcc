package metrics_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/agentbridge/agentbridge/daemon/metrics"
)

// TestExpositionParses: what /metrics serves is read back by Prometheus's
// own text-format parser (prometheus/common, a test-only dependency), with
// the values, histogram buckets and label escaping the observer recorded,
// and the Go runtime and process series a dashboard expects.
func TestExpositionParses(t *testing.T) {
	m := metrics.New()
	m.Known([]string{`tele"gram\x`}, []string{"demo"})
	m.TurnStarted(`tele"gram\x`, "demo")
	m.TurnFinished(`tele"gram\x`, "demo", "ok", 300*time.Millisecond)
	m.TurnStarted(`tele"gram\x`, "demo")
	m.TurnFinished(`tele"gram\x`, "demo", "error", 20*time.Minute)
	m.Message(`tele"gram\x`, "turn")
	m.Message(`tele"gram\x`, "turn")
	body := scrape(t, m)

	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("the exposition does not parse: %v\n%s", err, body)
	}
	for _, name := range []string{"go_goroutines", "go_info", "go_memstats_alloc_bytes", "process_cpu_seconds_total",
		"process_resident_memory_bytes", "process_start_time_seconds", "process_open_fds", "process_max_fds"} {
		if fams[name] == nil {
			t.Errorf("no %s", name)
		}
	}
	if start := fams["process_start_time_seconds"].GetMetric()[0].GetGauge().GetValue(); time.Since(time.Unix(int64(start), 0)) > time.Hour || start > float64(time.Now().Unix()+1) {
		t.Errorf("process_start_time_seconds = %v, not this process's start", start)
	}

	msgs := fams["agentbridge_messages_total"]
	var turn float64 = -1
	for _, s := range msgs.GetMetric() {
		labels := map[string]string{}
		for _, l := range s.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["platform"] != `tele"gram\x` {
			t.Errorf("label platform read back as %q", labels["platform"])
		}
		if labels["result"] == "turn" {
			turn = s.GetCounter().GetValue()
		}
	}
	if turn != 2 {
		t.Errorf("messages result=turn = %v, want 2", turn)
	}

	h := fams["agentbridge_turn_duration_seconds"].GetMetric()[0].GetHistogram()
	if h.GetSampleCount() != 2 || h.GetSampleSum() != 0.3+1200 {
		t.Errorf("histogram count %d sum %v, want 2 and 1200.3", h.GetSampleCount(), h.GetSampleSum())
	}
	for _, b := range h.GetBucket() {
		want := uint64(0)
		switch {
		case math.IsInf(b.GetUpperBound(), 1):
			want = 2
		case b.GetUpperBound() >= 0.3:
			want = 1 // 20 minutes is past the last finite bound
		}
		if b.GetCumulativeCount() != want {
			t.Errorf("bucket le=%v holds %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
	if running := fams["agentbridge_turns_running"].GetMetric()[0].GetGauge().GetValue(); running != 0 {
		t.Errorf("turns_running = %v after both finished", running)
	}
}
