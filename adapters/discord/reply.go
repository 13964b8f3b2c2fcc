package discord

import (
	"errors"
	"net/http"

	"github.com/bwmarrin/discordgo"

	"github.com/agentbridge/agentbridge/core"
)

// In a server channel or thread the first message of an answer, notices
// and permission prompts are Discord replies to the message they answer
// (core.Post.ReplyTo), so in a busy channel it is clear whom the bot is
// answering. Discord only accepts a reply to a message in the same channel,
// so the adapter remembers where recent users' messages were posted; a
// reply in a thread the bridge opened for a mention has nothing to point
// at there (the mention is the thread's starter) and is sent plain. DMs
// are never replies: there is one person to answer.

// maxUserMsgs bounds each generation of the message → channel record.
const maxUserMsgs = 4096

// noteUserMsg records that the user's message id was posted in channel.
// Two generations keep it bounded: when the current one fills up, the
// older one is dropped.
func (a *Adapter) noteUserMsg(id, channel string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.userMsgs) >= maxUserMsgs {
		a.oldUserMsgs, a.userMsgs = a.userMsgs, make(map[string]string, maxUserMsgs)
	}
	a.userMsgs[id] = channel
}

// replyRef is the message_reference for p sent to channel ch of conv, or
// nil when it should not be a reply.
func (a *Adapter) replyRef(conv core.ConversationKey, ch string, p core.Post) *discordgo.MessageReference {
	if conv.Workspace == "" || p.ReplyTo == "" {
		return nil
	}
	a.mu.Lock()
	in, ok := a.userMsgs[p.ReplyTo]
	if !ok {
		in, ok = a.oldUserMsgs[p.ReplyTo]
	}
	a.mu.Unlock()
	if !ok || in != ch {
		return nil
	}
	no := false // deleted meanwhile: send it as a plain message
	return &discordgo.MessageReference{MessageID: p.ReplyTo, ChannelID: ch, GuildID: conv.Workspace, FailIfNotExists: &no}
}

// badRequest reports whether err is Discord refusing the request as
// malformed (HTTP 400).
func badRequest(err error) bool {
	var re *discordgo.RESTError
	return errors.As(err, &re) && re.Response != nil && re.Response.StatusCode == http.StatusBadRequest
}
