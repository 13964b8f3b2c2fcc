package telegram

import "github.com/agentbridge/agentbridge/core"

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
