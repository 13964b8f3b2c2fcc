package platformtest_test

import (
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/platformtest"
)

// The in-memory fake keeps the contract it stands in for (it has no rate
// budget of its own: tests inject the refusals they need).
func TestFakeKeepsThePlatformContract(t *testing.T) {
	p := platformtest.New("fake", platformtest.DefaultLimits)
	conv := core.ConversationKey{Platform: "fake", Channel: "C1"}
	platformtest.TestPlatform(t, p, platformtest.Hooks{
		Conv:     conv,
		Shown:    shown(p),
		Requests: func() int { return len(p.Calls()) },
		Missing:  core.MessageRef{Conv: conv, ID: "never-sent"},
		RateLimitSend: func(d time.Duration) {
			p.RateLimit(platformtest.OpSend, d, 1)
		},
		Unbudgeted: true,
	})
}

func shown(p *platformtest.Platform) func(core.MessageRef) (string, bool) {
	return func(ref core.MessageRef) (string, bool) {
		for _, m := range p.Messages(ref.Conv) {
			if m.Ref == ref {
				return m.Post.Text, true
			}
		}
		return "", false
	}
}
