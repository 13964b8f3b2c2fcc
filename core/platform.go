package core

import (
	"context"
	"io"
	"time"

	"github.com/agentbridge/agentbridge/core/render"
)

// Limits describes what a platform tolerates. Core reads it instead of
// switching on platform names. Limits must not do I/O.
type Limits struct {
	// MaxText is the longest Post.Text the platform accepts, counted in
	// UTF-16 code units of the text as sent (the strictest count any of the
	// platforms uses).
	MaxText int
	// EditInterval is the minimum gap between two edits of one message.
	EditInterval time.Duration
	// MaxButtonValue is the longest Button.Value in bytes (Telegram: 64).
	MaxButtonValue int
	// Dialect is the markup Post.Text is rendered into.
	Dialect render.Dialect
	// EditWindow, when non-zero, is how long after sending a message can
	// still be edited (Discord: one hour); longer streams continue in a new
	// message.
	EditWindow time.Duration
	// MaxFileBytes is the largest file FileSender takes (Telegram 50 MB,
	// Discord 10 MiB without boosts); 0 when the platform takes no files.
	MaxFileBytes int64
}

// Handler receives normalized events from a Platform. Both methods only
// put the event on its conversation's ordered intake and return at once, so
// an adapter calls them plainly from its reader, in the order the platform
// delivered the events: core handles each conversation's events in the
// order of the calls (dedup, access, commands, notices, queueing), and
// conversations never wait on each other. Methods may be called
// concurrently; the order of concurrent calls is the order they get the
// intake. ctx bounds only the call: what core needs while it handles the
// event later travels in the event itself.
type Handler interface {
	HandleMessage(ctx context.Context, m Message)
	HandleAction(ctx context.Context, a Action)
}

// Drainer is implemented by the Handler core gives adapters. The channel
// Draining returns is closed when the bridge begins to shut down. An
// adapter whose platform keeps events the bridge has not taken for the next
// instance stops taking new ones then (Telegram stops fetching updates;
// Slack leaves new message envelopes unacknowledged, so they are
// redelivered), instead of having core refuse them; events it handed over
// before are still answered.
type Drainer interface {
	Draining() <-chan struct{}
}

// DrainSignal returns h's Draining channel, or nil (never ready) when h does
// not implement Drainer.
func DrainSignal(h Handler) <-chan struct{} {
	if d, ok := h.(Drainer); ok {
		return d.Draining()
	}
	return nil
}

// Platform is implemented by each chat adapter.
type Platform interface {
	// Name returns the adapter's name, used as ConversationKey.Platform.
	Name() string
	// Limits reports static limits.
	Limits() Limits
	// Run connects, delivers events to h and reconnects as needed until ctx
	// is done. It returns nil after ctx is done, and an error only when it
	// cannot go on (bad credentials, a fatal close).
	Run(ctx context.Context, h Handler) error
	// Send posts p to the conversation and returns a reference for edits.
	Send(ctx context.Context, to ConversationKey, p Post) (MessageRef, error)
	// Edit replaces the content of a message created by Send. An edit to the
	// same content may return ErrNotModified.
	Edit(ctx context.Context, ref MessageRef, p Post) error
}

// Typer is an optional Platform capability: a "typing…" indicator. Core
// calls Typing again before the platform's indicator lapses while a turn runs.
type Typer interface {
	Typing(ctx context.Context, conv ConversationKey) error
}

// Downloader is an optional Platform capability: fetch an attachment's bytes
// into w, refusing more than max bytes. It uses the adapter's credentials; the
// agent only ever sees the downloaded local file.
type Downloader interface {
	Download(ctx context.Context, a Attachment, w io.Writer, max int64) error
}

// MessageFinalizer is an optional Platform capability for platforms that
// keep a message provisional while its text is streamed (a Telegram draft
// becomes a real message; Slack's :eyes: reaction comes off): the presenter
// calls FinalizeMessage for each message of a reply, in order, once its text
// is final, so the platform need not guess when streaming has ended.
type MessageFinalizer interface {
	FinalizeMessage(ctx context.Context, ref MessageRef) error
}

// Streamer is an optional Platform capability: a native way to stream a
// reply while it is written (Slack chat.startStream / appendStream /
// stopStream). Where it applies, the presenter streams the agent's Markdown
// through it instead of posting and editing rendered text.
type Streamer interface {
	// StartStream opens a native stream for a reply in conv. It returns a
	// nil Stream and no error where native streaming does not apply (not
	// enabled, not a thread); the presenter then posts and edits.
	StartStream(ctx context.Context, conv ConversationKey) (Stream, error)
}

// Stream is one native reply stream. Its methods are called from one
// goroutine, at most once per Limits.EditInterval.
type Stream interface {
	// Ref names the message the stream writes.
	Ref() MessageRef
	// Append adds Markdown, as the agent wrote it, to the reply. A
	// *RateLimitError means nothing was added: the presenter waits and
	// sends the text again with whatever arrived meanwhile.
	Append(ctx context.Context, markdown string) error
	// Stop appends markdown (the reply's end: an error, a notice, a usage
	// line; may be empty) and ends the stream.
	Stop(ctx context.Context, markdown string) error
}

// File is a file an agent sent back, ready to post: core has checked it
// against the turn's limits and the platform's MaxFileBytes, and spooled
// its bytes to Path, a local file that stays until SendFile returns (a
// retry reads it again).
type File struct {
	Name string // file name as the agent gave it; the adapter sanitises it for its platform
	MIME string // media type; "application/octet-stream" when unknown
	Kind string // "image", "audio", "video" or "file", as in Attachment
	Size int64  // bytes at Path
	Path string // the bytes; never logged
	// Caption is plain text to show with the file where the platform
	// has captions; may be empty.
	Caption string
	// ReplyTo is the Message.ID of the user's message the reply answers,
	// as in Post.ReplyTo.
	ReplyTo string
}

// FileSender is an optional Platform capability: post a file in a
// conversation, after everything sent before it (a Telegram photo or
// document, a Slack upload into the thread, a Discord message with the
// file attached, a file saved by the terminal). It returns
// *RateLimitError as Send does; the caller waits and calls again.
type FileSender interface {
	SendFile(ctx context.Context, to ConversationKey, f File) (MessageRef, error)
}

// RateReporter is an optional Platform capability: how much of its
// platform's rate limits the account uses, for the operator console.
type RateReporter interface {
	RateUse() []RateUse
}

// RateUse is one kind of rate budget of an account (Slack's chat.update
// per channel, a Telegram chat's sends, a Discord route).
type RateUse struct {
	Budget string
	// InUse is the share in use now of the fullest budget of the kind,
	// from 0 to 1.
	InUse float64
	// Refused counts the 429s the platform answered since the start.
	Refused int64
}

// Namer is an optional Platform capability: the names of a
// conversation's channel and thread as the platform shows them, "" where
// the adapter has not seen them. It does no I/O.
type Namer interface {
	ConvName(conv ConversationKey) string
}

// Linker is an optional Platform capability: the address of a message in
// the platform's own client (a permalink), "" where it has none. It does
// no I/O.
type Linker interface {
	Link(conv ConversationKey, messageID string) string
}
