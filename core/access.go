package core

import "slices"

// Wildcard in an allow list matches any id.
const Wildcard = "*"

// Access is a platform account's access lists: who may use the bot and who
// may answer anyone's permission prompt. It is the one place the lists are
// read; the engine asks it of every message, serve's trigger of every
// conversation it is asked to post in.
type Access struct {
	Users     []string // user ids that may use the bot; Wildcard allows anyone
	Chats     []string // chat ids whose members may all use the bot; Wildcard any
	Approvers []string // user ids who may answer anyone's permission prompt
}

// Allows reports whether user may use the bot in conv: listed as a user or
// through conv's chat (deny by default; an empty id is never listed).
func (a Access) Allows(conv ConversationKey, user string) bool {
	return listed(a.Users, user) || listed(a.Chats, conv.Channel)
}

// Approver reports whether user may answer anyone's permission prompt.
// There is no wildcard: letting anyone approve anyone's tool use would
// defeat the prompt.
func (a Access) Approver(user string) bool {
	return user != "" && user != Wildcard && slices.Contains(a.Approvers, user)
}

// Names reports whether the lists name channel as a place the bot serves:
// listed as a chat (or any chat is), or as a user (a private chat's id is
// its user's). A user wildcard names no channel: anyone may talk to the
// bot, but that does not make every channel one it knows.
func (a Access) Names(channel string) bool {
	return listed(a.Chats, channel) || (channel != Wildcard && channel != "" && slices.Contains(a.Users, channel))
}

func listed(list []string, id string) bool {
	return id != "" && (slices.Contains(list, id) || slices.Contains(list, Wildcard))
}
