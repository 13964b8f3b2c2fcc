package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/core/lane"
	"github.com/agentbridge/agentbridge/core/outfile"
	"github.com/agentbridge/agentbridge/core/stream"
	"github.com/agentbridge/agentbridge/internal/tail"
)

// turn is one accepted message on its way through a lane.
type turn struct {
	id       string
	plat     core.Platform
	msg      core.Message
	key      core.ConversationKey // lane and session key
	queuedAt time.Time
	sub      *submitted // set for a turn nobody typed (Submit)
	seq      uint64     // arrival order over all conversations (the agent cap's order)
	// interrupted is set once a newer message stopped it (stopFor).
	interrupted atomic.Bool

	// Set when the turn starts running, read by /status.
	mu           sync.Mutex
	profileName  string
	sessionName  string
	slot         *slotWait // while it waits for an agent slot
	transcribing bool      // while a voice note is transcribed

	// reply keeps the end of the reply's output, for Snapshot.
	reply tail.Buffer

	// Set when the turn starts running, before its agent.
	journal *turnJournal
	pres    *stream.Presenter

	// Until the turn starts (begin), its message may still be edited or
	// deleted and its queued notice noted; pre guards these.
	pre     sync.Mutex
	started bool
	notice  core.MessageRef // the queued notice, once posted
	edit    *core.Message   // the message as last edited, if it was
	deleted bool
	// unskip is the queued notice without its ⏭ button, which begin's
	// caller puts back once the turn starts; zero when it has none.
	unskip core.Post
}

// entry is t's journal entry as it stands before its agent starts: what
// a restart needs to run it (or to offer its retry). Call it with t.pre
// held, or once t began.
func (t *turn) entry() core.JournalEntry {
	e := core.JournalEntry{TurnID: t.id, Conv: t.msg.Conv, MessageID: t.msg.ID, StartedAt: t.queuedAt, Notice: t.notice}
	if t.sub == nil {
		m := t.msg
		if t.edit != nil && !t.started {
			m = *t.edit // begin applies it to t.msg
		}
		e.Message, e.Key = &m, t.key
	}
	return e
}

// begin marks t started: from now on an edit or a deletion of its message
// changes nothing. It applies the last edit and reports false when the
// message was deleted while it waited (the turn does not run).
func (t *turn) begin() bool {
	t.pre.Lock()
	defer t.pre.Unlock()
	t.started = true
	if t.edit != nil {
		// Only what an edit changes: others read the rest unlocked.
		t.msg.Text, t.msg.Attachments = t.edit.Text, t.edit.Attachments
	}
	return !t.deleted
}

// beforeStart runs fn with t.pre held and then brings t's journal entry
// up to date (deletes it once t.deleted), only while t has not started
// nor been deleted, and reports whether it had not: once t started, the
// turn's own journal owns the entry.
func (e *Engine) beforeStart(ctx context.Context, t *turn, fn func()) bool {
	t.pre.Lock()
	defer t.pre.Unlock()
	if t.started || t.deleted {
		return false
	}
	fn()
	var err error
	if t.deleted {
		err = e.store.JournalDelete(context.WithoutCancel(ctx), t.id)
	} else {
		err = e.store.JournalPut(context.WithoutCancel(ctx), t.entry())
	}
	if err != nil {
		e.log.WarnContext(ctx, "journal update of a queued turn failed", "turn", t.id, "err", err)
	} else {
		e.log.DebugContext(ctx, "queued turn journaled", "conv", t.msg.Conv, "turn", t.id, "notice", t.notice.ID, "deleted", t.deleted)
	}
	return true
}

// textDeletedQueued replaces the queued notice of a message deleted before
// its turn started.
const textDeletedQueued = "🗑 Removed from the queue: the message was deleted."

// handleEdit applies an edit or a deletion of a message (core.Message.Edits)
// to its turn while the turn waits in the queue: an edited message runs as
// edited, a deleted one does not run and its queued notice says so. Once
// the turn started, or for a message that never became one, nothing
// changes.
func (e *Engine) handleEdit(ctx context.Context, p core.Platform, m core.Message) {
	var t *turn
	e.mu.Lock()
	for _, q := range e.queued {
		// Conv and ID are never written after the turn was made.
		if q.sub == nil && q.plat == p && q.msg.Conv == m.Conv && q.msg.ID == m.Edits {
			t = q
			break
		}
	}
	e.mu.Unlock()
	log := e.log.With("conv", m.Conv, "message", m.Edits, "deleted", m.Deleted)
	if t == nil || !m.Deleted && m.From.ID != t.msg.From.ID {
		log.DebugContext(ctx, "edit of a message not waiting in a queue (or not by its author); ignored")
		return
	}
	var notice core.MessageRef
	applied := e.beforeStart(ctx, t, func() {
		notice = t.notice
		if m.Deleted {
			t.deleted = true
			return
		}
		edited := t.msg
		edited.Text, edited.Attachments = m.Text, m.Attachments
		t.edit = &edited
	})
	if !applied {
		log.DebugContext(ctx, "edit of a message whose turn started; ignored")
		return
	}
	log.InfoContext(ctx, "queued message changed before its turn", "turn", t.id)
	if m.Deleted && notice.ID != "" {
		err := stream.Edit(ctx, p, notice, core.Post{Text: textDeletedQueued, Plain: true})
		if err != nil && !errors.Is(err, core.ErrNotModified) {
			log.WarnContext(ctx, "could not update the queued notice of a deleted message", "err", err)
		}
	}
}

func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// enqueue puts a journaled turn on its conversation's lane.
func (e *Engine) enqueue(ctx context.Context, t *turn, s *Settings) {
	p, m := t.plat, t.msg
	// Depth is checked here, not in lanes, so a reload applies at once.
	busy := func(text string) {
		if t.sub == nil {
			e.refuseBusy(ctx, p, m, text)
		} else if e.once(quietBusy, m.Conv) {
			// Counted as a submitted turn, not as a message.
			e.say(ctx, p, m, text)
		}
	}
	if full, queued := e.full(t.key, t.msg.Conv, s); full {
		e.slots.settle(t.seq)
		t.ended("busy", "", "")
		e.forget(ctx, t)
		busy(fmt.Sprintf(textBusy, queued))
		return
	}
	pos, cn, err := e.queue(t, s)
	if err == nil && pos == 0 {
		e.slots.handoff(t.seq) // its lane starts it: acquire is next
	} else {
		e.slots.settle(t.seq) // queued behind its lane's turn, or not at all
	}
	switch {
	case errors.Is(err, lane.ErrFull):
		t.ended("busy", "", "")
		e.forget(ctx, t)
		busy(textOverflow)
		return
	case errors.Is(err, lane.ErrClosed):
		t.ended("draining", "", "")
		e.forget(ctx, t)
		if t.sub == nil {
			e.opts.Observer.Message(p.Name(), "draining")
		}
		e.say(ctx, p, m, textDraining)
		return
	case err != nil:
		e.forget(ctx, t)
		e.say(ctx, p, m, "⚠️ Could not queue your message: "+err.Error())
		return
	case pos > 0:
		e.arrived(ctx, t, s, pos, cn)
	}
	e.reset(quietBusy, m.Conv) // the burst is over: the queue took a message
	if t.sub == nil {
		e.opts.Observer.Message(p.Name(), "turn")
	}
}

// forget drops a turn that will not run and clears its journal entry.
func (e *Engine) forget(ctx context.Context, t *turn) {
	e.mu.Lock()
	delete(e.queued, t.id)
	e.mu.Unlock()
	e.interrupting.Delete(t.id)
	e.slots.done(t.seq) // if it never asked for a slot, later turns need not wait for it
	if err := e.store.JournalDelete(context.WithoutCancel(ctx), t.id); err != nil {
		e.log.WarnContext(ctx, "journal delete failed", "turn", t.id, "err", err)
	}
	if t.sub != nil {
		t.sub.done(e.opts.Observer, t.plat.Name())
	}
}

// ended records how a submitted turn ended, for its Result; a chat turn
// has nobody waiting for one.
func (t *turn) ended(status, reply, errText string) {
	if t.sub != nil {
		t.sub.set(status, reply, errText)
	}
}

// dropped tells the senders of queued turns that will not run why.
func (e *Engine) dropped(ctx context.Context, jobs []lane.Job, why string) {
	for _, j := range jobs {
		e.mu.Lock()
		t := e.queued[j.ID]
		e.mu.Unlock()
		if t == nil {
			continue
		}
		t.ended("cancelled", "", "")
		e.forget(ctx, t)
		e.say(ctx, t.plat, t.msg, why)
	}
}

// run executes one turn on its lane's goroutine, in three steps: prepare
// (the profile, session, journal, presenter and attachments), the agent's
// run (each of its events handled by event), and settle (the final text,
// the session and the usage).
func (e *Engine) run(ctx context.Context, t *turn) {
	s := e.cfg()
	log := e.log.With("conv", t.msg.Conv, "turn", t.id)
	e.mu.Lock()
	delete(e.queued, t.id)
	e.running[t.key] = t
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.running, t.key)
		e.mu.Unlock()
		e.forget(ctx, t)
	}()
	if !t.begin() {
		log.InfoContext(ctx, "queued message deleted before its turn started; not run")
		return
	}
	e.interrupting.Delete(t.id)
	e.unbutton(ctx, t)
	if e.superseded(t, s) {
		log.InfoContext(ctx, "turn interrupted before it started")
		t.ended("stopped", "", "")
		e.say(ctx, t.plat, t.msg, textInterrupted)
		return
	}

	r := &turnRun{e: e, t: t, s: s, log: log}
	r.pick(ctx)
	release, ok := e.takeSlot(ctx, t, log, r.profileName, r.prof)
	if !ok {
		return
	}
	defer release()
	if s.busy(t.msg.Conv) == BusyCollect && t.sub == nil {
		e.merge(ctx, t, s)
	}
	// The reply must outlive the turn: a stopped turn still gets its
	// "stopped" edit. FinalTimeout bounds it once the agent is done.
	r.pctx, r.pcancel = context.WithCancel(e.base)
	defer r.cleanup()
	if !r.prepare(ctx) {
		return
	}
	out, err := r.agent(ctx)
	release() // the agent is gone: its slot is free for the next turn
	r.wait()
	r.settle(ctx, out, err)
}

// turnRun is what the steps of one run of a turn share.
type turnRun struct {
	e   *Engine
	t   *turn
	s   *Settings
	log *slog.Logger
	// pctx bounds the reply's writes: it outlives ctx, the turn's own.
	pctx    context.Context
	pcancel context.CancelFunc
	undo    []func() // cleanup's, last first

	profileName, sessName string
	prof                  *agentproc.Profile
	text                  string // the agent's message: the text, and what voice notes said
	saver                 *sessionSaver
	pres                  *stream.Presenter
	atts                  []agentproc.Attachment
	inDir                 string        // the turn's attachment directory ("" when none)
	workDir               string        // where its agent runs
	outfiles              *outfile.Turn // checks the agent's files; made by the first
	idle                  *idleWatch
	typingDone            chan struct{}
	wg                    sync.WaitGroup // permission prompts, session saves and the typing indicator
}

// cleanup undoes what the steps set up.
func (r *turnRun) cleanup() {
	for i := len(r.undo) - 1; i >= 0; i-- {
		r.undo[i]()
	}
	r.pcancel()
}

// pick chooses the turn's profile, before it takes an agent slot (the
// profile may have a cap of its own).
func (r *turnRun) pick(ctx context.Context) {
	e, t, s, m := r.e, r.t, r.s, r.t.msg
	profileName, prof, fallback := e.pickProfile(ctx, s, m.Conv, t.key)
	if t.sub != nil && t.sub.Profile != "" {
		profileName, prof, fallback = t.sub.Profile, s.Profiles[t.sub.Profile], ""
	}
	if fallback != "" {
		e.say(ctx, t.plat, m, fallback)
	}
	r.profileName, r.prof = profileName, prof
}

// prepare readies the turn for its agent, reporting false when it ends
// here (no profile, no session, nothing to send: its sender told).
func (r *turnRun) prepare(ctx context.Context) bool {
	e, t, s, m := r.e, r.t, r.s, r.t.msg
	profileName, prof := r.profileName, r.prof
	if t.sub != nil {
		r.log = r.log.With("origin", t.sub.Origin)
		if t.sub.Name != "" {
			r.log = r.log.With("schedule", t.sub.Name)
		}
	}
	t.ended("failed", "", "the turn could not start")
	if prof == nil {
		r.log.ErrorContext(ctx, "no profile for conversation", "profile", profileName)
		e.fail(t, profileName, "start_failed", fmt.Sprintf("profile %q is not configured", profileName))
		e.say(r.pctx, t.plat, m, fmt.Sprintf("⚠️ This conversation is routed to profile %q, which is not configured.", profileName))
		return false
	}
	sessName, sess, err := e.sessionOf(ctx, t)
	if err != nil {
		r.log.ErrorContext(ctx, "load session failed", "err", err)
		e.fail(t, profileName, "start_failed", "could not load the session: "+err.Error())
		e.say(r.pctx, t.plat, m, "⚠️ The bridge could not load this conversation's session (storage error).")
		return false
	}
	t.mu.Lock()
	t.profileName, t.sessionName = profileName, sessName
	t.mu.Unlock()
	r.sessName = sessName
	r.saver = &sessionSaver{e: e, log: r.log, key: t.key, name: sessName, profile: profileName, known: sess.AgentID(profileName)}

	// The entry written at enqueue stands; the journal rewrites it as the
	// turn goes, from its own goroutine, so no disk sync delays the agent.
	t.journal = startJournal(ctx, e.store, r.log, t.entry())
	r.undo = append(r.undo, t.journal.close)
	// Attachments come before the reply starts, so what a voice note was
	// heard to say shows above the answer (its placeholder included).
	voice := s.voice(m.Conv)
	heard := r.voiceNotes(ctx, voice)
	atts, notes, dir, paths := e.download(ctx, t, prof, s.platform(t.plat.Name()).MaxFileBytes)
	if dir != "" {
		r.undo = append(r.undo, func() { os.RemoveAll(dir) })
	}
	r.inDir = dir
	r.text = r.hear(ctx, voice, heard, paths)

	ps := s.Presenter
	r.pres = stream.Start(r.pctx, t.plat, m.Conv, stream.Options{
		PlaceholderDelay: ps.PlaceholderDelay,
		ShowThinking:     ps.ShowThinking,
		MinEditInterval:  ps.MinEditInterval,
		ReplyTo:          m.ID,
		Log:              r.log,
		OnShow:           t.journal.reply,
		OnFile:           r.fileSent,
	})
	t.pres = r.pres
	for _, n := range notes {
		r.pres.Partial(core.RoleOutput, "⚠️ "+n+"\n\n")
	}
	if r.text == "" && len(atts) == 0 {
		finish(r.log, r.pres, stream.Final{Notice: "Nothing to send to the agent: the message had no text and no attachment it could use."})
		return false
	}
	r.atts = atts

	if note := profileNote(sess, profileName); note != "" {
		// A notice of its own, so the reply's placeholder still shows while
		// the new profile's agent is silent; said only by a turn that runs
		// (and saves the session's new profile), so it is said once.
		e.sayInTurn(ctx, t, note)
	}
	return true
}

// agent runs the turn's agent to its end, each event handled by event,
// with the typing indicator on meanwhile.
func (r *turnRun) agent(ctx context.Context) (agentproc.Outcome, error) {
	e, t, m := r.e, r.t, r.t.msg
	r.typingDone = make(chan struct{})
	if ty, ok := t.plat.(core.Typer); ok {
		r.wg.Go(func() { e.typing(ctx, ty, m.Conv, r.typingDone) })
	}

	// On disk before the agent may act: a restart never runs this turn
	// again on its own (it offers ↻ Retry instead), and removes the
	// container an isolated agent is about to start, which a crash of the
	// bridge leaves running.
	remote, extra := e.remoteFor(r)
	t.journal.update(false, func(e *core.JournalEntry) { e.Running, e.Remote = true, remote })
	t.journal.flush(ctx)
	r.log.InfoContext(ctx, "turn started", "profile", r.profileName, "session", r.sessName)
	e.opts.Observer.TurnStarted(t.plat.Name(), r.profileName)
	runCtx, stopRun := context.WithCancelCause(ctx)
	r.idle = watchIdle(r.s.IdleTimeout, stopRun)
	r.undo = append(r.undo, func() { stopRun(nil) }, r.idle.close)
	turn := agentproc.Turn{
		Message:        r.text,
		SessionID:      r.saver.known,
		SessionName:    r.sessName,
		ConversationID: t.key.Slug(), // the lane's key: one workspace per session scope
		Attachments:    r.atts,
	}
	r.workDir = r.prof.WorkDir(turn)
	out, err := agentproc.Run(runCtx, r.prof, turn, agentproc.Options{
		Log:           r.log,
		Environ:       e.opts.Environ,
		MaxReplyBytes: r.s.replyLimit(m.Conv),
		Env:           extra,
		OnStart: func(g agentproc.Group) {
			t.journal.update(true, func(e *core.JournalEntry) { e.Agent = core.ProcessRef(g) })
		},
		OnEvent: func(ev agentproc.Event) { r.event(ctx, ev) },
	})
	if remote.Name != "" && out.ExitCode != 0 {
		// A wrapper stopped or killed may not have removed its container:
		// once the reply is final, make sure, before the journal forgets it.
		r.undo = append(r.undo, func() { e.removeRemote(context.WithoutCancel(ctx), t.id, remote) })
	}
	return out, err
}

// wait ends the typing indicator and waits for what the agent's events
// started (prompts, session saves).
func (r *turnRun) wait() {
	close(r.typingDone)
	r.wg.Wait()
}

// event handles one of the agent's events, on the agent's event path,
// which must not wait for a disk or a person.
func (r *turnRun) event(ctx context.Context, ev agentproc.Event) {
	r.idle.active()
	switch ev.Kind {
	case agentproc.EventPartial:
		// The tail first, so whoever sees the reply's post sees it too.
		if ev.Role != core.RoleThinking {
			r.t.reply.Write([]byte(ev.Text))
		}
		r.pres.Partial(ev.Role, ev.Text)
		if r.t.sub != nil && ev.Role == core.RoleOutput {
			r.t.sub.collect(ev.Text)
		}
	case agentproc.EventFiles:
		r.files(ctx, ev.Files)
	case agentproc.EventSession:
		// P-SID-1: saved now, so a crash mid-turn keeps the agent's
		// context.
		r.wg.Go(func() {
			if err := r.saver.save(context.WithoutCancel(ctx), ev.SessionID, false); err != nil {
				r.log.ErrorContext(ctx, "save session failed", "err", err)
			}
		})
	case agentproc.EventPermission:
		r.idle.prompt(true)
		r.wg.Go(func() {
			defer r.idle.prompt(false)
			r.e.ask(r.pctx, r.t, r.sessName, ev.Request)
		})
	}
}

// settle ends the turn once its agent is gone: the reply's final text,
// then the session and the usage.
func (r *turnRun) settle(ctx context.Context, out agentproc.Outcome, err error) {
	e, t, m, log := r.e, r.t, r.t.msg, r.log
	if err != nil {
		log.ErrorContext(ctx, "turn refused by runner", "err", err)
		t.ended("failed", "", err.Error())
		e.fail(t, r.profileName, "start_failed", err.Error())
		finish(log, r.pres, stream.Final{Error: err.Error()})
		return
	}
	t.ended(turnResult(out), out.Reply, out.Failure())
	log.InfoContext(ctx, "turn finished", "exit_code", out.ExitCode, "duration", out.Duration, "stderr_tail", lastLine(out.Stderr))
	e.opts.Observer.TurnFinished(t.plat.Name(), r.profileName, turnResult(out), out.Duration)
	if res := turnResult(out); res != "ok" && res != "stopped" {
		e.fail(t, r.profileName, res, out.Failure())
	}

	stopAfter := time.AfterFunc(e.opts.FinalTimeout, r.pcancel)
	defer stopAfter.Stop()
	if !finish(log, r.pres, finalFor(out, r.s.Presenter.UsageFooter)) {
		e.opts.Observer.ReplyLost(t.plat.Name())
		e.fail(t, r.profileName, "reply_lost", "the final reply could not be delivered")
	} else if errors.Is(out.Stopped, ErrShuttingDown) && t.sub == nil {
		e.offerRetryOnReply(r.pctx, t)
	}

	// P-SID-5: the session id is kept even when the turn failed. Saved after
	// the reply so its disk sync does not delay it; the lane is held until
	// it is done, so the next turn sees it. The turn's usage goes into the
	// session and the usage log (/usage, limits).
	usage := turnUsage(out.Usage)
	r.saver.mu.Lock()
	r.saver.usage = usage
	r.saver.mu.Unlock()
	if err := r.saver.save(context.WithoutCancel(ctx), out.SessionID, true); err != nil {
		log.ErrorContext(ctx, "save session failed", "err", err)
	}
	ev := core.UsageEvent{At: time.Now(), Platform: t.plat.Name(), User: m.From.ID, Profile: r.profileName, Usage: usage}
	if err := e.store.RecordUsage(context.WithoutCancel(ctx), ev); err != nil {
		log.ErrorContext(ctx, "record usage failed", "err", err)
	}
}

// takeSlot waits until t may start an agent of profile (the cap on agents
// at once, the profile's and its user's share), telling the sender when it
// has to wait in one notice kept up to date. It returns the slot's
// release, safe to call twice, or false when the turn was refused (a cap
// that rejects is reached) or stopped while waiting (its sender told).
func (e *Engine) takeSlot(ctx context.Context, t *turn, log *slog.Logger, profile string, prof *agentproc.Profile) (func(), bool) {
	s := e.cfg()
	ask := slotAsk{
		user:        t.plat.Name() + "\x00" + t.msg.From.ID,
		profile:     profile,
		seq:         t.seq,
		rejectTotal: s.OnSaturated == agentproc.SaturatedReject,
	}
	if t.sub != nil {
		ask.user = "\x00" + t.sub.Origin // whoever configured it: one user per origin
	}
	ask.rejectProfile = ask.rejectTotal
	if prof != nil {
		ask.profCap = prof.MaxConcurrent
		if prof.OnSaturated != "" {
			ask.rejectProfile = prof.OnSaturated == agentproc.SaturatedReject
		}
	}
	var notice core.MessageRef
	posted := false
	release, full, err := e.slots.acquire(ctx, ask, func(w *slotWait, f slotFull) {
		post := core.Post{Text: f.notice(), Plain: true, ReplyTo: t.msg.ID}
		if posted {
			// The same notice, kept up to date as turns ahead start.
			if notice.ID == "" {
				return
			}
			if err := stream.Edit(ctx, t.plat, notice, post); err != nil {
				log.DebugContext(ctx, "waiting notice could not be updated", "err", err)
			}
			return
		}
		posted = true
		t.mu.Lock()
		t.slot = w
		t.mu.Unlock()
		e.opts.Observer.TurnWaiting(t.plat.Name(), 1)
		log.InfoContext(ctx, "turn waits for a free agent slot", "ahead", f.ahead, "user_share", f.perUser, "profile_cap", f.profile != "")
		notice = e.notice(ctx, t.plat, t.msg, post)
	})
	t.mu.Lock()
	waited := t.slot != nil
	t.slot = nil
	t.mu.Unlock()
	if waited {
		e.opts.Observer.TurnWaiting(t.plat.Name(), -1)
	}
	if err == nil {
		return sync.OnceFunc(release), true
	}
	text := "⏹ Stopped before its agent started."
	switch {
	case errors.Is(err, errSaturated):
		t.ended("busy", "", "")
		log.InfoContext(ctx, "turn refused: every agent slot is busy (on_saturated: reject)", "profile_cap", full.profile != "")
		e.say(ctx, t.plat, t.msg, full.rejected())
		return nil, false
	case errors.Is(err, ErrShuttingDown):
		text = "⏹ Not run: the bridge is shutting down. Please send this again in a minute."
	case errors.Is(err, ErrInterrupted):
		text = textInterrupted
	}
	t.ended("cancelled", "", "")
	sctx, cancel := context.WithTimeout(e.base, e.opts.FinalTimeout)
	defer cancel()
	e.say(sctx, t.plat, t.msg, text)
	return nil, false
}

// turnUsage is one finished turn's usage for the session and the log.
func turnUsage(u *agentproc.Usage) core.Usage {
	out := core.Usage{Turns: 1}
	if u != nil {
		out.InputTokens, out.OutputTokens, out.CostUSD = u.InputTokens, u.OutputTokens, u.CostUSD
	}
	return out
}

// profileNote is the notice a turn starts with when the conversation moved
// to another profile since its last turn, "" otherwise. An agent
// session id belongs to the profile whose agent made it, so the new
// profile starts a fresh session of its own (or resumes the one it had).
func profileNote(sess core.Session, profile string) string {
	if sess.Profile == "" || sess.Profile == profile {
		return ""
	}
	from, to := sess.Profile, profile
	if sess.AgentID(profile) != "" {
		return fmt.Sprintf("🔀 Profile changed from %s back to %s: resuming the earlier %s session.", from, to, to)
	}
	return fmt.Sprintf("🔀 Profile changed from %s to %s: starting a fresh session for %s (the %s session is kept for when you switch back).", from, to, to, from)
}

// finish delivers the final text and reports whether it arrived.
func finish(log *slog.Logger, pres *stream.Presenter, f stream.Final) bool {
	if err := pres.Finish(f); err != nil {
		// Logged loudly: this is the one way a reply can be lost.
		log.Error("final reply could not be delivered", "err", err)
		return false
	}
	return true
}

// turnResult names how a turn ended, for metrics.
func turnResult(out agentproc.Outcome) string {
	switch {
	case out.TimedOut:
		return "timeout"
	case out.Stopped != nil:
		return "stopped"
	case out.ExitCode == 127:
		return "start_failed"
	case out.Failed():
		return "error"
	}
	return "ok"
}

// finalFor turns a runner outcome into what the reply ends with.
func finalFor(out agentproc.Outcome, footer bool) stream.Final {
	var f stream.Final
	var idle *idleError
	if !out.PartialsSeen {
		f.Reply = out.Reply
	}
	switch {
	case out.TimedOut:
		f.Notice = "⏱ " + out.Failure()
	case errors.Is(out.Stopped, ErrInterrupted):
		f.Notice = textInterrupted
	case out.Stopped != nil && errors.Is(out.Stopped, ErrShuttingDown):
		f.Notice = "⏹ Stopped: the bridge is shutting down."
	case errors.As(out.Stopped, &idle):
		f.Notice = fmt.Sprintf("⏹ Stopped: the agent sent nothing for %s (idle_timeout).", idle.after)
	case errors.Is(out.Stopped, agentproc.ErrFlooding):
		f.Notice = "⏹ Stopped: the agent went on printing past " + agentproc.Size(out.ReplyLimit*agentproc.FloodFactor) + "."
	case out.Stopped != nil:
		f.Notice = "⏹ Stopped."
	case out.Failed():
		f.Error = out.Failure()
	}
	if cut := out.Truncation(); cut != "" {
		// The reply ends with it, so nobody takes a cut reply for all of it.
		f.Notice = strings.TrimSuffix(cut+". "+f.Notice, " ")
	}
	if footer && out.Usage != nil {
		f.Footer = usageLine(out.Usage, out.Duration)
	}
	return f
}

func usageLine(u *agentproc.Usage, d time.Duration) string {
	var parts []string
	if u.InputTokens > 0 || u.OutputTokens > 0 {
		parts = append(parts, fmt.Sprintf("%d in / %d out tokens", u.InputTokens, u.OutputTokens))
	}
	if u.CostUSD > 0 {
		parts = append(parts, fmt.Sprintf("$%.4f", u.CostUSD))
	}
	parts = append(parts, d.Round(100*time.Millisecond).String())
	return strings.Join(parts, " · ")
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// session returns the lane key's active session name and its record.
func (e *Engine) session(ctx context.Context, key core.ConversationKey) (string, core.Session, error) {
	name, err := e.store.ActiveSession(ctx, key)
	if err != nil {
		return "", core.Session{}, err
	}
	if name == "" {
		name = "default"
	}
	sess, _, err := e.store.Session(ctx, key, name)
	if err != nil {
		return "", core.Session{}, err
	}
	sess.Name = name
	return name, sess, nil
}

// sessionSaver saves a turn's session: at once when the agent first names
// its session id (P-SID-1), so a crash mid-turn keeps the agent's context,
// and again when the turn ends.
type sessionSaver struct {
	e             *Engine
	log           *slog.Logger
	key           core.ConversationKey
	name, profile string

	mu    sync.Mutex
	known string // the profile's agent id as this turn last saw it in the store
	// usage is the finished turn's, added to the session by the final save.
	usage core.Usage
}

// save records id (when not "") as the profile's agent session id and, when
// finished, counts the turn. An id is written only under the profile that
// ran, and only if the stored one is still the one the turn started with:
// /new may have reset it meanwhile.
func (s *sessionSaver) save(ctx context.Context, id string, finished bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, _, err := s.e.store.Session(ctx, s.key, s.name)
	if err != nil {
		return err
	}
	cur.Name, cur.Profile = s.name, s.profile
	if finished {
		cur.Turns++
		cur.UpdatedAt = time.Now()
		cur.Usage.Add(s.usage)
	}
	stored := id != "" && id != s.known && cur.AgentID(s.profile) == s.known
	if stored {
		cur = cur.WithAgentID(s.profile, id)
		s.known = id
	}
	if err := s.e.store.PutSession(ctx, s.key, cur); err != nil {
		return err
	}
	if stored {
		s.log.DebugContext(ctx, "agent session id saved", "profile", s.profile, "agent_session", id, "turn_finished", finished)
	}
	return nil
}

// typing keeps the platform's typing indicator on until done.
func (e *Engine) typing(ctx context.Context, ty core.Typer, conv core.ConversationKey, done <-chan struct{}) {
	const every = 4 * time.Second // Telegram's indicator lasts 5 s, Discord's 10 s
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if err := ty.Typing(ctx, conv); err != nil {
			e.log.DebugContext(ctx, "typing indicator failed", "conv", conv, "err", err)
		}
		select {
		case <-tick.C:
		case <-done:
			return
		case <-ctx.Done():
			return
		}
	}
}
