package discord

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/discord/discordtest"
	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/platformtest"
)

// TestPlatformContract runs core's adapter contract against the fake and
// its per-route buckets.
func TestPlatformContract(t *testing.T) {
	t.Parallel()
	fake := discordtest.NewServer(testToken)
	t.Cleanup(fake.Close)
	fake.AddChannel(discordtest.Channel{ID: "C1", Type: 0, GuildID: "G1"})
	a, err := New(Options{Token: testToken, APIURL: fake.URL}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	conv := core.ConversationKey{Platform: "discord", Workspace: "G1", Channel: "C1"}
	platformtest.TestPlatform(t, a, platformtest.Hooks{
		Conv: conv,
		Shown: func(ref core.MessageRef) (string, bool) {
			for _, m := range fake.Messages(ref.Conv.Channel) {
				if m.ID == ref.ID {
					return m.Content, true
				}
			}
			return "", false
		},
		Requests: func() int { return len(fake.Calls()) },
		Missing:  core.MessageRef{Conv: conv, ID: "999999999999"},
		RateLimitSend: func(d time.Duration) {
			fake.RateLimitNext("POST", "C1", 1, d)
		},
		ShownFile: func(ref core.MessageRef) (string, []byte, bool) {
			for _, m := range fake.Messages("C1") {
				if m.ID == ref.ID && len(m.Files) == 1 {
					return m.Files[0].Name, m.Files[0].Data, true
				}
			}
			return "", nil, false
		},
		Order: func() []string {
			var ids []string
			for _, m := range fake.Messages("C1") {
				ids = append(ids, m.ID)
			}
			return ids
		},
		RateLimitFile: func(d time.Duration) {
			fake.RateLimitNext("POST", "C1", 1, d)
		},
	})
}
