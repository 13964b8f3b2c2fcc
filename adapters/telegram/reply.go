package telegram

import (
	"strconv"
	"strings"

	"github.com/agentbridge/agentbridge/core"
)

// Replies in groups quote the message they answer (core.Post.ReplyTo), as
// people do there: in a busy group an unquoted answer is hard to place.
// Private chats never quote: there is only one person to answer.

// quoteFor returns the message id a Send of p to chat should quote, or 0:
// the message ReplyTo names ("chat:message", as normalize builds Message
// ids), when it is in this group.
func quoteFor(chat int64, p core.Post) int {
	if chat >= 0 || p.ReplyTo == "" {
		return 0
	}
	c, id, ok := strings.Cut(p.ReplyTo, ":")
	if !ok || c != strconv.FormatInt(chat, 10) {
		return 0
	}
	n, err := strconv.Atoi(id)
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// replyParameters is the sendMessage reply_parameters value quoting msgID;
// the reply still goes out if that message was deleted meanwhile.
func replyParameters(msgID int) string {
	return `{"message_id":` + strconv.Itoa(msgID) + `,"allow_sending_without_reply":true}`
}
