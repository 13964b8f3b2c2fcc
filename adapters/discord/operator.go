package discord

import "github.com/agentbridge/agentbridge/core"

var _ core.RateReporter = (*Adapter)(nil)

// RateUse implements core.RateReporter.
func (a *Adapter) RateUse() []core.RateUse {
	routeUse, routeRefused := a.rt.routes.Use()
	globalUse, globalRefused := a.rt.global.Use()
	return []core.RateUse{
		{Budget: "per route bucket", InUse: routeUse, Refused: routeRefused},
		{Budget: "global", InUse: globalUse, Refused: globalRefused},
	}
}

var _ core.Linker = (*Adapter)(nil)

// Link implements core.Linker: a message's address in Discord's client
// (a thread's messages live in the thread's channel; a DM's under @me).
func (a *Adapter) Link(conv core.ConversationKey, messageID string) string {
	if conv.Channel == "" || messageID == "" {
		return ""
	}
	guild, channel := conv.Workspace, conv.Channel
	if guild == "" {
		guild = "@me"
	}
	if conv.Thread != "" {
		channel = conv.Thread
	}
	return "https://discord.com/channels/" + guild + "/" + channel + "/" + messageID
}
