package telegram

import (
	"strconv"
	"strings"
	"sync"

	"github.com/agentbridge/agentbridge/core"
)

var _ core.RateReporter = (*Adapter)(nil)

// RateUse implements core.RateReporter.
func (a *Adapter) RateUse() []core.RateUse {
	chatUse, chatRefused := a.chats.Use()
	groupUse, groupRefused := a.groups.Use()
	return []core.RateUse{
		{Budget: "sends per private chat", InUse: chatUse, Refused: chatRefused},
		{Budget: "sends per group", InUse: groupUse, Refused: groupRefused},
	}
}

var _ core.Linker = (*Adapter)(nil)

// Link implements core.Linker: Telegram links the messages of supergroups
// and channels (chat ids -100…) for their members; a private chat's or a
// basic group's messages have no link.
func (a *Adapter) Link(conv core.ConversationKey, messageID string) string {
	internal, ok := strings.CutPrefix(conv.Channel, "-100")
	_, msg, found := strings.Cut(messageID, ":") // the adapter's ids are CHAT:MESSAGE
	if !ok || !found || internal == "" || msg == "" {
		return ""
	}
	return "https://t.me/c/" + internal + "/" + msg
}

// titles keeps the titles of the groups the bot was written in, bounded.
type titles struct {
	mu sync.Mutex
	m  map[int64]string
}

// maxTitles bounds titles; past it they are forgotten and relearned.
const maxTitles = 10000

func (t *titles) set(chat int64, title string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil || len(t.m) >= maxTitles {
		t.m = map[int64]string{}
	}
	t.m[chat] = title
}

var _ core.Namer = (*Adapter)(nil)

// ConvName implements core.Namer: a group's title as its last message
// gave it; a private chat has none.
func (a *Adapter) ConvName(conv core.ConversationKey) string {
	chat, err := strconv.ParseInt(conv.Channel, 10, 64)
	if err != nil {
		return ""
	}
	a.titles.mu.Lock()
	defer a.titles.mu.Unlock()
	return a.titles.m[chat]
}
