package slack_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/slack"
	"github.com/agentbridge/agentbridge/adapters/slack/slacktest"
	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/internal/streamload"
)

// BenchmarkStreams runs STREAMLOAD_RUNS (default 20) independent runs one
// after another (STREAMLOAD_PARALLEL=1: all at once), each of
// STREAMLOAD_STREAMS (default 10) concurrent streamed replies in threads
// of one workspace, against a fake that answers chat.update with 429 past
// 50 calls in any minute (Tier 3), for STREAMLOAD_SECONDS (default 30) of
// streaming (ends 3 s apart, each at a random point of its 3 s), with the
// adapter's default budget and a 1 s edit cadence. See BENCHMARKS.md.
func BenchmarkStreams(b *testing.B) {
	streamload.Bench(b, 10, 30, func(streams int, d time.Duration) (streamload.Result, error) {
		return slackRun(b, streams, d)
	})
}

func slackRun(b *testing.B, streams int, secs time.Duration) (streamload.Result, error) {
	fake := slacktest.NewServer(slacktest.Options{UpdateLimit: 50})
	defer fake.Close()
	opts := options(fake)
	opts.EditInterval = 0 // the default, 1 s
	a, err := slack.New(opts, nil)
	if err != nil {
		return streamload.Result{}, err
	}
	var convs []core.ConversationKey
	thread := map[string]int{}
	for i := range streams {
		th := fmt.Sprintf("%d.000100", 1700000000+i)
		thread[th] = i
		convs = append(convs, core.ConversationKey{Platform: "slack", Workspace: "T1", Channel: "C1", Thread: th})
	}
	return streamload.Run(b.Context(), a, streamload.Config{
		Convs: convs, Stream: secs, Stagger: 3 * time.Second, Every: 50 * time.Millisecond,
		Rate: 50.0 / 60, Budgets: 1,
		Updates: func() []streamload.Update {
			byTS := map[string]int{}
			for _, m := range fake.Messages() {
				byTS[m.TS] = thread[m.ThreadTS]
			}
			var ups []streamload.Update
			for _, c := range fake.Calls("chat.postMessage", "chat.update") {
				i := thread[c.Form.Get("thread_ts")]
				if c.Method == "chat.update" {
					i = byTS[c.Form.Get("ts")]
				}
				ups = append(ups, streamload.Update{Stream: i, At: c.At, Text: c.Form.Get("text"),
					Limited: c.Status == 429, Spends: c.Method == "chat.update"})
			}
			return ups
		},
	})
}
