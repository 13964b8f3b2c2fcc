package telegram_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/telegram"
	"github.com/agentbridge/agentbridge/adapters/telegram/telegramtest"
	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/internal/streamload"
)

// BenchmarkStreams runs STREAMLOAD_RUNS (default 20) runs, each its own
// fake and adapter, of concurrent streamed replies against the fake's
// flood limits (telegramtest.DefaultLimits: a chat 60 calls a minute and
// 3 in any second, drafts counted; a group 20 messages and edits a
// minute), in two shapes. See BENCHMARKS.md.
//
//   - private: STREAMLOAD_STREAMS (default 10) private chats, one reply
//     each, streamed as drafts and finished with a real message; each
//     chat has its own budget. STREAMLOAD_SECONDS (default 15) of
//     streaming, ends a second apart.
//   - group: 5 replies at once in one forum group, one per topic, sharing
//     the group's 20-a-minute budget (fair share: 5 ÷ 20/min = 15 s
//     between a reply's updates), by sendMessage and editMessageText.
//     45 s of streaming, ends 4 s apart. (Topics only tell the replies
//     apart: the budget is the group's, as for replies in one topic.)
//
// STREAMLOAD_STREAMS and STREAMLOAD_SECONDS apply to both shapes; select
// one with -bench 'BenchmarkStreams/private'.
func BenchmarkStreams(b *testing.B) {
	b.Run("private", func(b *testing.B) {
		streamload.Bench(b, 10, 15, func(streams int, d time.Duration) (streamload.Result, error) {
			var convs []core.ConversationKey
			for i := range streams {
				convs = append(convs, core.ConversationKey{Platform: telegram.Name, Channel: strconv.Itoa(5001 + i)})
			}
			return telegramRun(b, convs, d, time.Second, 1) // about 1 message a second per chat
		})
	})
	b.Run("group", func(b *testing.B) {
		streamload.Bench(b, 5, 45, func(streams int, d time.Duration) (streamload.Result, error) {
			var convs []core.ConversationKey
			for i := range streams {
				convs = append(convs, core.ConversationKey{Platform: telegram.Name, Channel: "-1009001", Thread: strconv.Itoa(11 + i)})
			}
			return telegramRun(b, convs, d, 4*time.Second, 20.0/60)
		})
	})
}

// telegramRun streams one reply into each of convs for d, ends stagger
// apart, against a fake whose chats' budgets allow rate calls a second.
func telegramRun(b *testing.B, convs []core.ConversationKey, d, stagger time.Duration, rate float64) (streamload.Result, error) {
	fake := telegramtest.NewServer(token)
	defer fake.Close()
	a, err := telegram.New(telegram.Options{Token: core.Secret(token), APIURL: fake.URL, Drafts: true}, nil)
	if err != nil {
		return streamload.Result{}, err
	}
	stream := map[string]int{} // "chat/topic" → stream
	for i, c := range convs {
		stream[c.Channel+"/"+c.Thread] = i
	}
	return streamload.Run(b.Context(), a, streamload.Config{
		Convs: convs, Stream: d, Stagger: stagger, Every: 50 * time.Millisecond,
		Rate: rate, Budgets: len(budgetsOf(convs)),
		Updates: func() []streamload.Update {
			topic := map[string]string{} // "chat/message id" → its topic
			for chat := range budgetsOf(convs) {
				id, _ := strconv.ParseInt(chat, 10, 64)
				for _, m := range fake.Messages(id) {
					topic[chat+"/"+strconv.Itoa(m.ID)] = threadText(m.ThreadID)
				}
			}
			var ups []streamload.Update
			// Every message call spends the chat's budget (drafts too:
			// the fake counts them).
			for _, c := range fake.Calls("sendMessage", "editMessageText", "sendMessageDraft") {
				chat, thread := c.Form.Get("chat_id"), c.Form.Get("message_thread_id")
				if c.Method == "editMessageText" {
					thread = topic[chat+"/"+c.Form.Get("message_id")]
				}
				i, ok := stream[chat+"/"+thread]
				if !ok {
					continue
				}
				ups = append(ups, streamload.Update{Stream: i, At: c.At, Text: c.Form.Get("text"),
					Limited: c.Fault != nil && c.Fault.Code == 429, Spends: true})
			}
			return ups
		},
	})
}

// budgetsOf returns the chats of convs: one flood budget each.
func budgetsOf(convs []core.ConversationKey) map[string]bool {
	chats := map[string]bool{}
	for _, c := range convs {
		chats[c.Channel] = true
	}
	return chats
}

func threadText(id int) string {
	if id == 0 {
		return ""
	}
	return strconv.Itoa(id)
}
