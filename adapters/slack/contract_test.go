package slack_test

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/slack"
	"github.com/agentbridge/agentbridge/adapters/slack/slacktest"
	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/platformtest"
)

// TestPlatformContract runs core's adapter contract against the fake, with
// Tier 3's chat.update limit enforced.
func TestPlatformContract(t *testing.T) {
	t.Parallel()
	fake := newFake(t, slacktest.Options{UpdateLimit: 50})
	a, err := slack.New(options(fake), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	conv := core.ConversationKey{Platform: "slack", Workspace: "T1", Channel: "C1", Thread: "1700000000.000100"}
	platformtest.TestPlatform(t, a, platformtest.Hooks{
		Conv: conv,
		Shown: func(ref core.MessageRef) (string, bool) {
			for _, m := range fake.Messages() {
				if m.Channel == ref.Conv.Channel && m.TS == ref.ID {
					return m.Text, true
				}
			}
			return "", false
		},
		Requests: func() int { return len(fake.Calls()) },
		Missing:  core.MessageRef{Conv: conv, ID: "1600000000.000001"},
		RateLimitSend: func(d time.Duration) {
			fake.Fail("chat.postMessage", slacktest.Failure{Status: 429, RetryAfter: int(d.Seconds())})
		},
		ShownFile: func(ref core.MessageRef) (string, []byte, bool) {
			for _, m := range fake.Files() {
				if m.File.ID == ref.ID && m.Channel == conv.Channel && m.ThreadTS == conv.Thread {
					return m.File.Name, m.File.Data, true
				}
			}
			return "", nil, false
		},
		Order: func() []string {
			var ids []string
			for _, m := range fake.Messages() {
				if m.File != nil {
					ids = append(ids, m.File.ID)
				} else {
					ids = append(ids, m.TS)
				}
			}
			return ids
		},
		RateLimitFile: func(d time.Duration) {
			fake.Fail("files.getUploadURLExternal", slacktest.Failure{Status: 429, RetryAfter: int(d.Seconds()), Error: "ratelimited"})
		},
	})
}
