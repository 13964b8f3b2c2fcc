package discord

import (
	"errors"
	"net/http"
	"sync"

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
func (a *Adapter) noteUserMsg(id, channel string) { a.userMsgs.put(id, channel) }

// replyRef is the message_reference for p sent to channel ch of conv, or
// nil when it should not be a reply.
func (a *Adapter) replyRef(conv core.ConversationKey, ch string, p core.Post) *discordgo.MessageReference {
	if conv.Workspace == "" || p.ReplyTo == "" {
		return nil
	}
	if in, ok := a.userMsgs.get(p.ReplyTo); !ok || in != ch {
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

// recent maps ids to values, bounded: two generations, the older dropped
// when the current one fills up.
type recent[V any] struct {
	mu       sync.Mutex
	max      int
	cur, old map[string]V
}

func newRecent[V any](max int) *recent[V] { return &recent[V]{max: max, cur: map[string]V{}} }

func (r *recent[V]) put(id string, v V) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.cur) >= r.max {
		r.old, r.cur = r.cur, make(map[string]V, r.max)
	}
	r.cur[id] = v
}

func (r *recent[V]) get(id string) (V, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if v, ok := r.cur[id]; ok {
		return v, true
	}
	v, ok := r.old[id]
	return v, ok
}
