package core

import (
	"context"
	"fmt"
	"time"
)

// User is the author of a message or of a button press.
type User struct {
	ID   string // platform user id, stable; what access lists name
	Name string // display name, for prompts; may be empty
}

// Attachment is a file that came with a message. Source is an adapter-opaque
// handle that only the adapter's Downloader understands; it may embed
// credentials and never reaches an agent.
type Attachment struct {
	Kind   string // "image", "audio", "video" or "file"
	Name   string // file name as shown on the platform
	MIME   string // media type, if the platform said
	Size   int64  // bytes, if the platform said; 0 when unknown
	Source string // adapter-private download handle
	// Duration is how long an audio or video plays, if the platform said;
	// 0 when unknown. Core checks a voice note against its limits with it
	// before downloading anything.
	Duration time.Duration
}

// Message is one incoming chat message, normalized by an adapter.
type Message struct {
	Conv        ConversationKey
	ID          string // platform message id, unique per platform; used for dedup
	From        User
	Text        string // plain text with the bot mention already removed
	Attachments []Attachment
	Time        time.Time // when the platform says it was sent; zero if unknown
	// Addressed marks a message written to the bot by name (a mention, a
	// slash command): a bare command word in it ("@bot new") is a bridge
	// command without the prefix, on every platform.
	Addressed bool
	// Edits, when set, makes this event a change to the earlier message
	// of the conversation with that ID rather than a new message: it now
	// reads Text, with Attachments, or, when Deleted, it was deleted. An
	// adapter delivers it on the conversation of the message it changes,
	// so it is handled in order with that conversation's messages. Core
	// applies it to a message whose turn has not started yet and ignores
	// it otherwise.
	Edits   string
	Deleted bool
	// Reply, when set, answers the author privately in this conversation
	// (a Slack ephemeral message). Core uses it for answers meant for the
	// author alone (the refusal to a user who is not allowed); without it
	// they are posted in the conversation.
	Reply PrivateReply `json:"-"`
	// Handled, when set, is called once core has handled the message on
	// its conversation's intake (answered it, queued its turn or dropped
	// it); answers that come later, from the turn's lane, come after. An
	// adapter closes an interaction there (a Discord slash command's
	// deferred response). It runs on the intake, so must not block long.
	Handled func() `json:"-"`
	// Accepted, when set, is called once core has accepted the message:
	// its author may use the bot here and it is not a redelivery. It runs
	// on the conversation's intake before core answers the message or
	// queues its turn, and never for a refused one, so an adapter records
	// there what only an accepted message may create (the Slack thread the
	// bot now takes part in, the Discord thread opened for a mention). It
	// must not block long.
	Accepted func() `json:"-"`
	// Answer, when set, carries core's notices answering this message (a
	// command's answer, a refusal) instead of Platform.Send; it reports
	// false when it did not send, and core posts in the conversation. An
	// adapter answers an interaction there (a Discord slash command's
	// deferred response takes the first).
	Answer func(ctx context.Context, p Post) (MessageRef, bool) `json:"-"`
}

// PrivateReply answers the author of one event where only they see it: a
// Slack ephemeral message, a Telegram callback answer, a Discord ephemeral
// follow-up. It is core's one way to answer privately. It must not block
// for long (it runs on the conversation's intake) and may be called from
// any goroutine.
type PrivateReply func(text string)

// Action is a press of a button that core put on a Post.
type Action struct {
	Conv  ConversationKey
	From  User
	Value string     // the opaque Button.Value core generated
	Ref   MessageRef // the message the button is on
	// Reply, when set, answers the press privately to the presser. Core
	// calls it exactly once for every action handed to it: with the answer,
	// or with "" when it has nothing to say (or drops the press at
	// shutdown), so an adapter that must acknowledge each press (Telegram's
	// answerCallbackQuery) does it there; others ignore "".
	Reply PrivateReply `json:"-"`
}

// ButtonStyle hints how a button is drawn.
type ButtonStyle int

// Button styles. Platforms without styles draw all buttons alike.
const (
	StyleDefault ButtonStyle = iota
	StylePrimary
	StyleDanger
)

// Button is an interactive button on a Post. Value is an opaque token core
// generates and recognizes; adapters carry it back unchanged in Action.Value.
type Button struct {
	Label string
	Value string
	Style ButtonStyle
	// Answer is the permission answer this button gives, if any: where
	// people type instead of clicking (the terminal), the words ParseAnswer
	// reads for it press it.
	Answer Answer
	// Optional marks a button people may well leave alone (↻ Retry): where
	// they type instead of clicking (the terminal), a line that presses
	// none of a post's buttons, all optional, is a message as usual rather
	// than a question asked again.
	Optional bool
}

// Post is the content of a message the bridge sends or edits.
type Post struct {
	// Text is already rendered for the platform's dialect (see Limits.Dialect)
	// unless Plain is set, in which case it is literal text to show as-is.
	Text    string
	Plain   bool
	Buttons []Button
	// ReplyTo is the Message.ID of the user's message this post answers,
	// set on the first message of a reply, on notices and on permission
	// prompts. Adapters that show replies natively (a quote in a Telegram
	// group, a Discord reply) link to it; others ignore it. Edits ignore
	// it.
	ReplyTo string
	// Priority ranks the post among the calls sharing a platform's rate
	// budget and says whether its text is final; the zero value is
	// PriorityFinal (notices, prompts, a reply's final text).
	Priority Priority
}

// Priority is what a post's text is to the reply it belongs to: the
// presenter sets it, and adapters pass it to their rate budgets as is
// (adapters/internal/pace) instead of deciding from the post which calls
// go first.
type Priority uint8

const (
	// PriorityFinal is text nothing later replaces: a reply's final text,
	// a notice, a permission prompt or its outcome. It goes before every
	// interim call in a rate budget.
	PriorityFinal Priority = iota
	// PriorityFull is a streamed piece that fills its message while the
	// reply goes on in the next one: this message's text is final (a
	// Telegram draft showing it becomes a real message with this call),
	// but it keeps an interim frame's place in the budgets — ranking it
	// first cost a Telegram group's finals their reserve (0d7bd5f).
	PriorityFull
	// PriorityInterim is a streamed reply's frame that later text
	// replaces.
	PriorityInterim
)

// First reports whether a call with p goes before every interim call in a
// rate budget: only final text does.
func (p Priority) First() bool { return p == PriorityFinal }

// Replaced reports whether later text replaces the post's text (an
// interim frame), so it may be shown as a preview (a Telegram draft)
// rather than a message.
func (p Priority) Replaced() bool { return p == PriorityInterim }

// String names p for logs and test failures.
func (p Priority) String() string {
	switch p {
	case PriorityFinal:
		return "final"
	case PriorityFull:
		return "full"
	case PriorityInterim:
		return "interim"
	}
	return fmt.Sprintf("Priority(%d)", uint8(p))
}

// MessageRef names a message the bridge sent, for later edits.
type MessageRef struct {
	Conv ConversationKey
	ID   string
}
