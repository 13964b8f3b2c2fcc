package discord

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/discord/discordtest"
	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/internal/streamload"
)

// BenchmarkStreams runs STREAMLOAD_RUNS (default 20) independent runs one
// after another (STREAMLOAD_PARALLEL=1: all at once), each of
// STREAMLOAD_STREAMS (default 5) concurrent streamed replies, one per
// channel, against the fake's per-route buckets (5 requests per 5 s,
// announced in X-RateLimit-* headers, 429 past them), for
// STREAMLOAD_SECONDS (default 20) of streaming (ends a second apart,
// each at a random point of its second). See BENCHMARKS.md.
func BenchmarkStreams(b *testing.B) {
	streamload.Bench(b, 5, 20, func(streams int, d time.Duration) (streamload.Result, error) {
		return discordRun(b, streams, d)
	})
}

func discordRun(b *testing.B, streams int, secs time.Duration) (streamload.Result, error) {
	fake := discordtest.NewServer(testToken)
	defer fake.Close()
	a, err := New(Options{Token: testToken, APIURL: fake.URL}, nil)
	if err != nil {
		return streamload.Result{}, err
	}
	var convs []core.ConversationKey
	index := map[string]int{}
	for i := range streams {
		ch := fmt.Sprint(900100 + i)
		index[ch] = i
		convs = append(convs, core.ConversationKey{Platform: "discord", Workspace: "G1", Channel: ch})
	}
	return streamload.Run(b.Context(), a, streamload.Config{
		Convs: convs, Stream: secs, Stagger: time.Second, Every: 50 * time.Millisecond,
		Rate: 1, Budgets: streams, // one 5-per-5-s bucket per channel (the edits')
		Updates: func() []streamload.Update {
			var ups []streamload.Update
			for _, c := range fake.Calls() {
				_, rest, ok := strings.Cut(c.Path, "/channels/")
				if !ok || (c.Method != "POST" && c.Method != "PATCH") {
					continue
				}
				ch, _, _ := strings.Cut(rest, "/")
				i, known := index[ch]
				if !known {
					continue
				}
				var body struct{ Content string }
				json.Unmarshal([]byte(c.Body), &body)
				ups = append(ups, streamload.Update{Stream: i, At: c.At, Text: body.Content,
					Limited: c.Status == 429, Spends: c.Method == "PATCH"})
			}
			return ups
		},
	})
}
