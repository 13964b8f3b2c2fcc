package engine

import (
	"time"

	"github.com/agentbridge/agentbridge/core/outfile"
)

// Observer receives the engine's countable events, for metrics. Methods are
// called from many goroutines and must not block.
type Observer interface {
	// Message counts an incoming message by what became of it: "turn",
	// "command", "duplicate", "denied", "busy", "overflow" (dropped by a
	// full intake), "draining" or "limited" (its sender is over a limit).
	Message(platform, result string)
	// TurnStarted and TurnFinished bracket a turn; result is "ok", "error",
	// "timeout", "stopped" or "start_failed".
	TurnStarted(platform, profile string)
	TurnFinished(platform, profile, result string, d time.Duration)
	// Permission counts an answered permission request: "allowed",
	// "denied", "timeout", "turn_ended" or "auto_allowed".
	Permission(platform, result string)
	// ReplyLost counts final replies that could not be delivered.
	ReplyLost(platform string)
	// TurnWaiting counts turns waiting for a free agent slot (the cap on
	// agents at once): +1 when one starts waiting, -1 when it stops.
	TurnWaiting(platform string, delta int)
	// Submitted counts a turn nobody typed once it ended or was refused:
	// origin is OriginSchedule or OriginTrigger, result a TurnResults or
	// SubmitResults value.
	Submitted(platform, origin, result string)
	// Transcribed counts a voice note the engine was to transcribe, by
	// result (TranscribeResults), with how long the engine took (0 when
	// it was not run: too_long, too_big).
	Transcribed(platform, result string, d time.Duration)
	// File counts a file an agent sent back: FileSent when the platform
	// took it, else why not (a FileResults value).
	File(platform, result string)
}

// The results Observer methods are called with, listed so a metrics
// backend can show every series at zero before it first happens. A result
// the engine starts reporting belongs here too.
var (
	MessageResults    = []string{"turn", "command", "duplicate", "denied", "busy", "overflow", "draining", "limited"}
	TurnResults       = []string{"ok", "error", "timeout", "stopped", "start_failed"}
	PermissionResults = []string{"allowed", "denied", "timeout", "turn_ended", "auto_allowed"}
	TranscribeResults = []string{"ok", "failed", "timeout", "too_long", "too_big"}
	// FileResults: sent, a platform that takes no files, or an
	// outfile.Reasons value (the check's, or "failed": the upload).
	FileResults = append([]string{FileSent, FileUnsupported}, outfile.Reasons...)
)

// File results besides outfile's reasons.
const (
	FileSent        = "sent"
	FileUnsupported = "unsupported"
)

// nopObserver is the Observer used when none is given.
type nopObserver struct{}

func (nopObserver) Message(string, string)                             {}
func (nopObserver) TurnStarted(string, string)                         {}
func (nopObserver) TurnFinished(string, string, string, time.Duration) {}
func (nopObserver) Permission(string, string)                          {}
func (nopObserver) ReplyLost(string)                                   {}
func (nopObserver) TurnWaiting(string, int)                            {}
func (nopObserver) Submitted(string, string, string)                   {}
func (nopObserver) Transcribed(string, string, time.Duration)          {}
func (nopObserver) File(string, string)                                {}
