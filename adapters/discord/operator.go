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

var _ core.Namer = (*Adapter)(nil)

// ConvName implements core.Namer: "#channel" and " › thread" from the
// channels the adapter has seen (its cache and the gateway's state).
func (a *Adapter) ConvName(conv core.ConversationKey) string {
	name := a.knownName(conv.Channel)
	if name == "" {
		return ""
	}
	name = "#" + name
	if t := a.knownName(conv.Thread); t != "" {
		name += " › " + t
	}
	return name
}

func (a *Adapter) knownName(id string) string {
	if id == "" {
		return ""
	}
	a.mu.Lock()
	c := a.info[id]
	a.mu.Unlock()
	if c == nil && a.sess != nil && a.sess.State != nil {
		c, _ = a.sess.State.Channel(id)
	}
	if c == nil {
		return ""
	}
	return c.Name
}
