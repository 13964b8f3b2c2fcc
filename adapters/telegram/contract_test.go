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
			e.fake.Fail("sendMessage", telegramtest.RateLimit(int(d.Seconds())))
		},
		ShownFile: func(ref core.MessageRef) (string, []byte, bool) {
			for _, m := range e.fake.Files(chat) {
				if strconv.Itoa(m.ID) == ref.ID {
					return m.File.Name, m.File.Data, true
				}
			}
			return "", nil, false
		},
		Order: func() []string {
			var ids []string
			for _, m := range e.fake.Messages(chat) {
				ids = append(ids, strconv.Itoa(m.ID))
			}
			return ids
		},
		RateLimitFile: func(d time.Duration) {
			e.fake.Fail("sendDocument", telegramtest.RateLimit(int(d.Seconds())))
		},
	})
}
