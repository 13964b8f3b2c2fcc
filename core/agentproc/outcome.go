// This file: spec/protocol.md, "Exit status, timeout, stop" — what a turn
// produced and the exit-status precedence (P-EXIT-1).

package agentproc

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"
)

// ErrInterrupted as a context cause means an interactive Ctrl-C: outcome 130
// instead of 143.
var ErrInterrupted = errors.New("interrupted")

// StderrTailBytes is how much of the end of stderr Outcome.Stderr keeps:
// stderr is a debug log, kept for diagnoses and never shown to chat users.
const StderrTailBytes = 64 << 10

// Outcome is what a turn produced.
type Outcome struct {
	Reply     string   // body per the result/streaming rules; exactly as scenarios.json "reply"
	SessionID string   // first valid non-empty session id (kept even on failure, P-SID-5)
	Error     string   // the agent's error event message ("" if none)
	ExitCode  int      // 0, 1, 124, 130, 143, the agent's own code, or 127 when it could not start
	Partials  []string // forwarded partial texts, only with CollectPartials
	Usage     *Usage   // from the accepted result/error, nil if none
	Duration  time.Duration
	TimedOut  bool   // timeout_secs hit (124)
	Stopped   error  // non-nil when the caller's ctx ended the turn (context.Cause(ctx)), or ErrFlooding
	Stderr    string // last 64 KiB of stderr
	Diagnosis string // diagnostics.json hint, or e.g. `agent command "claude" not found on PATH`
	// PartialsSeen reports whether any partial was forwarded (so the caller knows the reply body was streamed).
	// Only output partials count: thinking (or other non-output roles) is not the body, so a turn that
	// streamed only its reasoning still has its result text in Reply. Reply != "" implies !PartialsSeen.
	PartialsSeen bool

	// Errored reports whether the agent sent an error event (its message may be "").
	Errored bool
	// TimeLimit is the turn's timeout, for the "timed out after" message.
	TimeLimit time.Duration
	// StartError is why the agent could not be started (ExitCode 127), nil otherwise.
	StartError error
	// Truncated reports that the reply went past the reply limit
	// (Options.MaxReplyBytes, kept in ReplyLimit): partials past it were
	// not forwarded, or Reply was cut to it. Truncation is the line to end
	// the reply with.
	Truncated  bool
	ReplyLimit int
	// AgentExit is the agent process's own exit status (128+N after
	// signal N), whatever ExitCode's precedence made of it; 0 when it
	// never started.
	AgentExit int
}

// Failed reports whether the turn failed (ExitCode != 0).
func (o Outcome) Failed() bool { return o.ExitCode != 0 }

// Failure is the one plain-words message for a chat user when the turn
// failed, "" otherwise: the error event's message; "timed out after 30m0s";
// "stopped"; or for a non-zero exit with no error event a generic "the agent
// exited with status N" plus the diagnosis when there is one (P-EXIT-2).
func (o Outcome) Failure() string {
	if o.ExitCode == 0 {
		return ""
	}
	switch {
	case o.Errored && o.Error != "":
		return o.Error
	case o.Errored:
		return "the agent reported an error"
	case o.TimedOut:
		return "timed out after " + o.TimeLimit.String()
	case errors.Is(o.Stopped, ErrFlooding):
		return "stopped: the agent went on printing past " + Size(o.ReplyLimit*FloodFactor)
	case o.Stopped != nil:
		return "stopped"
	case o.StartError != nil:
		return "the agent could not start: " + o.Diagnosis
	}
	msg := "the agent exited with status " + strconv.Itoa(o.ExitCode)
	if o.Diagnosis != "" {
		msg += ": " + o.Diagnosis
	}
	return msg
}

// stopCode is the exit code of a turn the caller stopped (D-STOP-1).
func stopCode(cause error) int {
	if errors.Is(cause, ErrInterrupted) {
		return 130
	}
	return 143
}

// finish assembles the outcome, applying exit precedence (P-EXIT-1):
// timeout 124 > (stop 143/130) > error event 1 > the process's own code.
func (r *runner) finish(a *assembler, stderr string, waitErr error) {
	o := &r.out
	o.Duration = time.Since(r.start)
	o.Stderr = stderr
	o.SessionID = a.sessionID
	o.Partials = a.partials
	o.PartialsSeen = a.outputSeen
	o.Usage = a.usage
	o.Errored = a.errored
	o.Error = a.errMsg
	if a.lim.max > 0 {
		o.Error = cut(o.Error, a.lim.max) // shown in the reply too
	}
	if !a.errored && a.resultSeen && !a.outputSeen {
		o.Reply = a.lim.whole(a.resultText)
	}
	o.Truncated = a.lim.truncated
	code := r.pr.exitCode(waitErr)
	o.AgentExit = code
	switch {
	case o.TimedOut:
		o.ExitCode = 124
	case o.Stopped != nil:
		o.ExitCode = stopCode(o.Stopped)
	case a.errored:
		o.ExitCode = 1
	default:
		o.ExitCode = code
		if code != 0 {
			o.Diagnosis = Diagnose(stderr)
		}
	}
	r.log.LogAttrs(context.Background(), slog.LevelDebug, "turn ended",
		slog.Int("exit_code", o.ExitCode), slog.Int("agent_exit", code), slog.Duration("duration", o.Duration))
}
