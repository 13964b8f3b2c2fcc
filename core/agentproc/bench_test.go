package agentproc

import (
	"context"
	"strconv"
	"testing"
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
	b.ResetTimer()
	for b.Loop() {
		o, err := Run(context.Background(), p, Turn{Message: "hi"}, Options{OnEvent: func(Event) { events++ }})
		if err != nil || o.Failed() {
			b.Fatalf("outcome %+v err %v", o, err)
		}
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}
