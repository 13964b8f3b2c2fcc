package telegram_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/telegram/telegramtest"
	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/platformtest"
)

// TestPlatformContract runs core's adapter contract against the fake and
// its flood limits, in a private chat (drafts off: a reply is real
// messages).
func TestPlatformContract(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	const chat = 1001
	conv := core.ConversationKey{Platform: "telegram", Channel: strconv.Itoa(chat)}
	platformtest.TestPlatform(t, e.ad, platformtest.Hooks{
		Conv: conv,
		Shown: func(ref core.MessageRef) (string, bool) {
			for _, m := range e.fake.Messages(chat) {
				if strconv.Itoa(m.ID) == ref.ID {
					return m.Text, true
				}
			}
			return "", false
		},
		Requests: func() int { return len(e.fake.Calls()) },
		Missing:  core.MessageRef{Conv: conv, ID: "999999"},
		RateLimitSend: func(d time.Duration) {
			s := int(d.Seconds())
			e.fake.Fail("sendMessage", telegramtest.Fault{Code: 429, Description: "Too Many Requests: retry after " + strconv.Itoa(s), RetryAfter: s})
		},
	})
}
