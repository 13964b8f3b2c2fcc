package telegram

import (
	"strconv"

	"github.com/agentbridge/agentbridge/core"
)

// Replies in groups quote the message they answer, as people do there: in
// a busy group an unquoted answer is hard to place. Core's Post carries no
// reply-to, so the adapter remembers the last message each group
// conversation handed to core and quotes it from Send. Private chats never
// quote: there is only one person to answer.

// inboundKey names a conversation in the inbound map.
func inboundKey(conv core.ConversationKey) string { return conv.Channel + "/" + conv.Thread }

// noteInbound records msgID as the conversation's latest message, before
// core sees it (core may answer during the handoff).
func (a *Adapter) noteInbound(conv core.ConversationKey, chat int64, msgID int) {
	if chat >= 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.inboundSeq++
	k := inboundKey(conv)
	if _, ok := a.inbound[k]; !ok && len(a.inbound) >= maxInbound {
		var oldest string
		var seq uint64
		for key, m := range a.inbound {
			if oldest == "" || m.seq < seq {
				oldest, seq = key, m.seq
			}
		}
		delete(a.inbound, oldest)
	}
	a.inbound[k] = &inboundMsg{id: msgID, seq: a.inboundSeq}
}

// quoteFor returns the message id a Send of p to conv should quote, or 0.
// Permission prompts (buttons) and notices (plain) quote the user's
// message every time; a reply's text quotes it only in its first message,
// so the continuations of a long answer do not repeat the quote.
func (a *Adapter) quoteFor(conv core.ConversationKey, chat int64, p core.Post) int {
	if chat >= 0 {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	m := a.inbound[inboundKey(conv)]
	if m == nil || (m.answered && len(p.Buttons) == 0 && !p.Plain) {
		return 0
	}
	return m.id
}

// quoted records that a message quoting msgID reached conv.
func (a *Adapter) quoted(conv core.ConversationKey, msgID int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if m := a.inbound[inboundKey(conv)]; m != nil && m.id == msgID {
		m.answered = true
	}
}

// replyParameters is the sendMessage reply_parameters value quoting msgID;
// the reply still goes out if that message was deleted meanwhile.
func replyParameters(msgID int) string {
	return `{"message_id":` + strconv.Itoa(msgID) + `,"allow_sending_without_reply":true}`
}
