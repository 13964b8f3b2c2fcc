package telegram

import (
	"strings"

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
