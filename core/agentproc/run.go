// This file: spec/protocol.md, "The shape of a turn" — one turn is one
// process: start it, write the turn, read its stdout until it exits, enforce
// the timeout and stop (P-TIME-1, D-STOP-1), then clean up its group.

package agentproc

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"syscall"
	"time"

	"github.com/agentbridge/agentbridge/internal/tail"
)

// Grace periods the protocol leaves to the bridge. They are variables so
// tests can see their effect; they are not meant to be tuned per call.
var (
	// drainTimeout bounds how long stdout is read after the agent exited,
	// for when a descendant still holds it open.
	drainTimeout = 500 * time.Millisecond
	// pipeGrace bounds the last reads and writes on the agent's pipes once
	// its process group is gone or the turn is ending.
	pipeGrace = 250 * time.Millisecond
)

// Options are the caller's side of a turn.
type Options struct {
	Log     *slog.Logger // nil → discard
	Environ []string     // bridge environment for the infra set and ${VAR}; nil → os.Environ()
	OnEvent func(Event)  // called in stdout order from one goroutine; must return quickly
	// OnStart, if set, is called once the agent has started, with its
	// process group, before the turn line is written: a caller that
	// journals it can find and kill the group after its own crash
	// (KillStale). It must return quickly.
	OnStart func(Group)
	// Env are per-run extras (F-ENV-1), KEY=VALUE, added to the agent's
	// environment after the profile's env: what the bridge tells its own
	// wrapper about the turn (internal/isolate.Plan).
	Env             []string
	CollectPartials bool // fill Outcome.Partials (conformance tests, run --json); off by default for bounded memory
	// MaxReplyBytes bounds the reply text the turn forwards and keeps:
	// partials (every role) past it are dropped, a result's or error's
	// text is cut to it, and Outcome.Truncated says so. An agent that
	// prints FloodFactor times as much is stopped as a cancelled turn is
	// (Outcome.Stopped is ErrFlooding). 0: no limit.
	MaxReplyBytes int
}

// Run executes one turn. It returns an error only for caller mistakes (nil
// profile, ErrEmptyTurn); everything the agent does wrong, including failing
// to start, is reported in the Outcome. It returns only after the whole
// process group is gone and every goroutine it started has ended.
func Run(ctx context.Context, p *Profile, t Turn, opts Options) (Outcome, error) {
	if p == nil {
		return Outcome{}, errors.New("run turn: nil profile")
	}
	if p.Command == "" {
		return Outcome{}, errors.New("run turn: profile has no command")
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if p.Name != "" {
		log = log.With(slog.String("profile", p.Name))
	}
	t.Attachments = checkTurnAttachments(t.Attachments, log)
	if t.Message == "" && len(t.Attachments) == 0 {
		return Outcome{}, ErrEmptyTurn
	}
	sessionName := t.SessionName
	if sessionName == "" {
		sessionName = "default"
	}
	out := Outcome{TimeLimit: p.timeout(), ReplyLimit: max(opts.MaxReplyBytes, 0)}
	start := time.Now()
	if ctx.Err() != nil {
		out.Stopped = context.Cause(ctx)
		out.ExitCode = stopCode(out.Stopped)
		return out, nil
	}
	pr, command, err := launch(p, t, opts.Environ, opts.Env, log)
	if err != nil {
		return startFailed(out, command, err, start, log), nil
	}
	log.LogAttrs(ctx, slog.LevelDebug, "agent started", slog.Int("pid", pr.pid), slog.String("command", command))
	if opts.OnStart != nil {
		opts.OnStart(pr.group())
	}
	r := runner{p: p, opts: opts, log: log, pr: pr, out: out, start: start}
	r.run(ctx, encodeTurn(t, sessionName, p.Permission))
	return r.out, nil
}

// runner is one started turn.
type runner struct {
	p     *Profile
	opts  Options
	log   *slog.Logger
	pr    *proc
	out   Outcome
	start time.Time
}

func (r *runner) run(ctx context.Context, turn []byte) {
	p, pr, log := r.p, r.pr, r.log
	ts := &turnState{log: log, stdin: pr.stdin, permTimeout: p.permissionTimeout(), pending: map[string]*PermissionRequest{}, seen: map[string]bool{}}
	a := &assembler{p: p, opts: r.opts, log: log, ts: ts, lim: newReplyLimit(r.opts.MaxReplyBytes)}
	var wg sync.WaitGroup

	// The turn line goes first: hold the stdin lock until it is written, so
	// no permission answer can overtake it.
	ts.stdinMu.Lock()
	wg.Go(func() {
		defer ts.stdinMu.Unlock()
		if _, err := ts.stdin.Write(turn); err != nil {
			log.LogAttrs(ctx, slog.LevelWarn, "writing the turn line failed", slog.Any("err", err))
		}
		if !p.Permission { // P-STDIN-1: EOF right after the turn line
			ts.stdin.Close()
			ts.stdin = nil
		}
	})
	exited := make(chan struct{})
	wg.Go(func() {
		defer close(exited)
		waitExited(pr.pid)
	})
	stderr := &tail.Buffer{Max: StderrTailBytes}
	stderrDone := make(chan struct{})
	wg.Go(func() {
		defer close(stderrDone)
		_, _ = stderr.ReadFrom(pr.stderr) // ends at EOF, or at the deadline below
	})
	readerDone := make(chan struct{})
	wg.Go(func() {
		defer close(readerDone)
		a.read(pr.stdout)
	})

	timeout := time.NewTimer(p.timeout())
	defer timeout.Stop()
	select {
	case <-exited:
	case <-timeout.C:
		r.out.TimedOut = true
	case <-ctx.Done():
		r.out.Stopped = context.Cause(ctx)
	case <-a.lim.flood:
		r.out.Stopped = ErrFlooding
		log.LogAttrs(ctx, slog.LevelWarn, "agent went on printing past the reply limit; stopping it",
			slog.Int("max_reply_bytes", r.opts.MaxReplyBytes), slog.Int("flood_factor", FloodFactor))
	}
	if r.out.TimedOut || r.out.Stopped != nil {
		msg := "the turn was stopped"
		if r.out.TimedOut {
			msg = "the turn timed out after " + p.timeout().String()
			log.LogAttrs(ctx, slog.LevelWarn, "turn timed out", slog.Duration("timeout", p.timeout()))
		} else {
			log.LogAttrs(ctx, slog.LevelInfo, "turn stopped", slog.Any("cause", r.out.Stopped))
		}
		// F-PERM-3: deny what is pending first, bounded in case the agent
		// no longer reads stdin; then SIGTERM → grace → SIGKILL (P-TIME-1).
		pr.stdin.SetWriteDeadline(time.Now().Add(pipeGrace))
		ts.end(msg, true)
		signalGroup(pr.pid, syscall.SIGTERM)
		grace := time.NewTimer(p.killGrace())
		select {
		case <-exited:
		case <-grace.C:
			log.LogAttrs(ctx, slog.LevelWarn, "agent ignored SIGTERM; killing its process group", slog.Duration("grace", p.killGrace()))
			signalGroup(pr.pid, syscall.SIGKILL)
			<-exited
		}
		grace.Stop()
	}

	// The agent has exited but is not reaped yet, so its process group id
	// cannot be reused: read what it left on stdout, bounded in case a
	// descendant holds the pipe, then kill whatever is left of the group.
	drain := time.NewTimer(drainTimeout)
	select {
	case <-readerDone:
	case <-drain.C:
		log.LogAttrs(ctx, slog.LevelWarn, "agent exited but its stdout is still open (a process it started?); ending the turn")
	}
	drain.Stop()
	signalGroup(pr.pid, syscall.SIGKILL) // D-GROUP-1
	// A descendant that left the group could still hold the pipes.
	pr.stdout.SetReadDeadline(time.Now().Add(pipeGrace))
	pr.stderr.SetReadDeadline(time.Now().Add(pipeGrace))
	<-readerDone
	<-stderrDone

	// Requests still pending are moot now: the agent is gone (nothing written).
	ts.end("", false)
	pr.stdin.SetWriteDeadline(time.Now()) // unblock a turn line nobody reads
	ts.closeStdin()
	waitErr := pr.wait()
	ts.timers.Wait()
	wg.Wait()
	pr.stdout.Close()
	pr.stderr.Close()

	r.finish(a, stderr.String(), waitErr)
}
