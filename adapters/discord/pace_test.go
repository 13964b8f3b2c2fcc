package discord

import (
	"net/http"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/core"
)

// A bucket hash Discord announces is shared by one route template across
// channels: each channel keeps its own budget under it, while the routes of
// one channel that share the hash share one budget.
func TestBucketHashKeepsChannelsApart(t *testing.T) {
	t.Parallel()
	rt := newTransport(nil, nil)
	for _, key := range []string{"PATCH 1 messages", "PATCH 2 messages", "POST 1 messages"} {
		h := http.Header{}
		h.Set("X-RateLimit-Bucket", "abc")
		rt.observe(key, &http.Response{StatusCode: 200, Header: h})
	}
	if rt.route("PATCH 1 messages") == rt.route("PATCH 2 messages") {
		t.Error("two channels share one budget under a bucket hash")
	}
	if rt.route("PATCH 1 messages") != rt.route("POST 1 messages") {
		t.Error("two routes of one channel with one bucket hash have separate budgets")
	}
}

// X-RateLimit-Remaining: 0 holds the route until the announced reset,
// before Discord has to answer 429.
func TestRemainingZeroHoldsTheRoute(t *testing.T) {
	t.Parallel()
	rt := newTransport(nil, nil)
	h := http.Header{}
	h.Set("X-RateLimit-Limit", "5")
	h.Set("X-RateLimit-Remaining", "0")
	h.Set("X-RateLimit-Reset-After", "2.5")
	observed := time.Now()
	rt.observe("PATCH 1 messages", &http.Response{StatusCode: 200, Header: h})
	// The hold counts from the answer: what is left of 2.5 s, however long
	// a loaded machine took to get here.
	if d := rt.wait("PATCH 1 messages"); d < 2500*time.Millisecond-time.Since(observed) || d > 2500*time.Millisecond {
		t.Fatalf("route held %v; want about 2.5 s", d)
	}
	if d := rt.route("PATCH 1 messages").TryTake("x", core.PriorityFinal); d < 2500*time.Millisecond-time.Since(observed) {
		t.Fatalf("a call was allowed %v into a spent bucket", d)
	}
	if d := rt.wait("PATCH 2 messages"); d != 0 {
		t.Fatalf("another channel held %v", d)
	}
}
