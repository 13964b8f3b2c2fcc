package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/lane"
)

// parseCommand splits "/cmd arg" (or "/cmd@botname arg") when text starts
// with prefix and names a bridge command, or a bare "cmd arg" in a message
// addressed to the bot by name ("@bot new").
func parseCommand(m core.Message, prefix string) (cmd core.Command, arg string, ok bool) {
	text := strings.TrimSpace(m.Text)
	if prefix == "" || !strings.HasPrefix(text, prefix) {
		if !m.Addressed {
			return core.Command{}, "", false
		}
		name, arg, bare := core.BareCommand(text)
		if !bare {
			return core.Command{}, "", false
		}
		cmd, _ = core.LookupCommand(name)
		return cmd, arg, true
	}
	word, rest, _ := strings.Cut(text[len(prefix):], " ")
	word, _, _ = strings.Cut(word, "@") // Telegram appends @botname in groups
	cmd, known := core.LookupCommand(word)
	if !known {
		return core.Command{}, "", false
	}
	return cmd, strings.TrimSpace(rest), true
}

func whoami(platform string, m core.Message) string {
	name := ""
	if m.From.Name != "" {
		name = " (" + displayName(m.From) + ")"
	}
	return fmt.Sprintf("You are %s user %s%s, in chat %s.", platform, m.From.ID, name, m.Conv.Channel)
}

// commandCall is one use of a bridge command: where it was sent and its
// argument.
type commandCall struct {
	p   core.Platform
	m   core.Message
	key core.ConversationKey
	arg string
}

// reply answers the command in its conversation.
func (e *Engine) reply(ctx context.Context, c commandCall, format string, args ...any) {
	e.say(ctx, c.p, c.m, fmt.Sprintf(format, args...))
}

// commandHandler runs one bridge command.
type commandHandler func(e *Engine, ctx context.Context, c commandCall)

// commandHandlers hold each entry of core.Commands' handler, by name: the
// table says what a command is, this says what it does.
// TestCommandHandlers proves every entry has one and every handler an
// entry.
var commandHandlers = map[string]commandHandler{
	"new":       (*Engine).cmdNew,
	"stop":      (*Engine).cmdStop,
	"status":    (*Engine).cmdStatus,
	"agent":     (*Engine).cmdAgent,
	"session":   (*Engine).cmdSession,
	"sessions":  (*Engine).cmdSessions,
	"forget":    (*Engine).cmdForget,
	"schedules": (*Engine).cmdSchedules,
	"usage":     (*Engine).cmdUsage,
	"help":      (*Engine).cmdHelp,
	"whoami":    (*Engine).cmdWhoami,
}

// command runs the bridge command cmd. A message parseCommand took for a
// command is the command's: it never goes on to the agent.
func (e *Engine) command(ctx context.Context, p core.Platform, m core.Message, key core.ConversationKey, cmd core.Command, arg string) {
	h, ok := commandHandlers[cmd.Name]
	if !ok {
		// TestCommandHandlers rules this out.
		e.log.ErrorContext(ctx, "bridge command has no handler", "command", cmd.Name)
		return
	}
	h(e, ctx, commandCall{p: p, m: m, key: key, arg: arg})
}

func (e *Engine) cmdHelp(ctx context.Context, c commandCall) {
	prefix := e.cfg().platform(c.p.Name()).Prefix
	var b strings.Builder
	b.WriteString("Send a message and the agent answers here. Commands:\n")
	for _, cmd := range core.Commands {
		arg := ""
		switch {
		case cmd.ArgRequired:
			arg = " " + cmd.Arg
		case cmd.Arg != "":
			arg = " [" + cmd.Arg + "]"
		}
		fmt.Fprintf(&b, "%s%s%s — %s\n", prefix, cmd.Name, arg, cmd.Description)
	}
	e.reply(ctx, c, "%s", strings.TrimRight(b.String(), "\n"))
}

func (e *Engine) cmdStop(ctx context.Context, c commandCall) {
	if _, _, text := e.stopLane(ctx, c.key, false); text != "" {
		e.reply(ctx, c, "%s", text)
	}
}

// cmdNew and the other commands that change the session answer on the
// lane, with the lane job's context.
func (e *Engine) cmdNew(ctx context.Context, c commandCall) {
	e.onLane(ctx, c.p, c.m, c.key, func(ctx context.Context) {
		name, _, err := e.session(ctx, c.key)
		if err == nil {
			err = e.store.ResetSession(ctx, c.key, name)
		}
		if err != nil {
			e.log.ErrorContext(ctx, "reset session failed", "conv", c.m.Conv, "err", err)
			e.reply(ctx, c, "⚠️ Could not reset the session (storage error).")
			return
		}
		e.reply(ctx, c, "🆕 Fresh session started (session %q). The agent will not remember earlier messages.", name)
	})
}

func (e *Engine) cmdSession(ctx context.Context, c commandCall) {
	if c.arg == "" {
		name, _, err := e.session(ctx, c.key)
		if err != nil {
			e.reply(ctx, c, "⚠️ Could not read the session (storage error).")
			return
		}
		e.reply(ctx, c, "Active session: %s. Switch with %ssession NAME.", name, e.cfg().platform(c.p.Name()).Prefix)
		return
	}
	if !core.ValidSessionName(c.arg) {
		e.reply(ctx, c, "Session names are 1–64 %s.", core.SessionNameRule)
		return
	}
	e.onLane(ctx, c.p, c.m, c.key, func(ctx context.Context) {
		_, exists, err := e.store.Session(ctx, c.key, c.arg)
		if err == nil {
			err = e.store.SetActiveSession(ctx, c.key, c.arg)
		}
		switch {
		case err != nil:
			e.reply(ctx, c, "⚠️ Could not switch sessions (storage error).")
		case exists:
			e.reply(ctx, c, "Switched to session %s.", c.arg)
		default:
			e.reply(ctx, c, "Switched to new session %s.", c.arg)
		}
	})
}

func (e *Engine) cmdSessions(ctx context.Context, c commandCall) {
	active, _, err := e.session(ctx, c.key)
	var list []core.Session
	if err == nil {
		list, err = e.store.Sessions(ctx, c.key)
	}
	if err != nil {
		e.reply(ctx, c, "⚠️ Could not list sessions (storage error).")
		return
	}
	var b strings.Builder
	b.WriteString("Sessions here:")
	found := false
	for _, ss := range list {
		mark := "  "
		if ss.Name == active {
			mark, found = "▶ ", true
		}
		fmt.Fprintf(&b, "\n%s%s — ", mark, ss.Name)
		if ss.Profile != "" {
			fmt.Fprintf(&b, "%s, ", ss.Profile)
		}
		fmt.Fprintf(&b, "%d turn(s)", ss.Turns)
		if !ss.UpdatedAt.IsZero() {
			fmt.Fprintf(&b, ", last %s", ss.UpdatedAt.Format(time.DateTime))
		}
	}
	if !found {
		fmt.Fprintf(&b, "\n▶ %s — new", active)
	}
	e.reply(ctx, c, "%s", b.String())
}

func (e *Engine) cmdForget(ctx context.Context, c commandCall) {
	e.forgetSession(ctx, c.p, c.m, c.key, c.arg)
}

func (e *Engine) cmdUsage(ctx context.Context, c commandCall) {
	e.reply(ctx, c, "%s", e.usage(ctx, c.p, c.key))
}

func (e *Engine) cmdStatus(ctx context.Context, c commandCall) {
	e.reply(ctx, c, "%s", e.status(ctx, c.key, c.m.Conv))
}

func (e *Engine) cmdSchedules(ctx context.Context, c commandCall) {
	e.reply(ctx, c, "%s", e.schedules(c.m.Conv))
}

func (e *Engine) cmdWhoami(ctx context.Context, c commandCall) {
	e.reply(ctx, c, "%s", whoami(c.p.Name(), c.m))
}

func (e *Engine) cmdAgent(ctx context.Context, c commandCall) {
	if c.arg == "" {
		e.agentMenu(ctx, c.p, c.m, c.key)
	} else {
		e.switchAgent(ctx, c.p, c.m, c.key, c.arg)
	}
}

// forgetSession deletes the session name of key, on the lane so it never
// races a turn saving it. The active session is kept: forgetting it would
// leave the conversation pointing at nothing, and /new is how it starts
// over.
func (e *Engine) forgetSession(ctx context.Context, p core.Platform, m core.Message, key core.ConversationKey, name string) {
	prefix := e.cfg().platform(p.Name()).Prefix
	if name == "" {
		e.say(ctx, p, m, fmt.Sprintf("Name the session to delete: %sforget NAME (%ssessions lists them).", prefix, prefix))
		return
	}
	e.onLane(ctx, p, m, key, func(ctx context.Context) {
		active, _, err := e.session(ctx, key)
		if err != nil {
			e.say(ctx, p, m, "⚠️ Could not read the session (storage error).")
			return
		}
		if name == active {
			e.say(ctx, p, m, fmt.Sprintf("%s is the active session: switch to another with %ssession NAME first, or start it over with %snew.", name, prefix, prefix))
			return
		}
		found, err := e.store.DeleteSession(ctx, key, name)
		switch {
		case err != nil:
			e.log.ErrorContext(ctx, "delete session failed", "conv", m.Conv, "err", err)
			e.say(ctx, p, m, "⚠️ Could not delete the session (storage error).")
		case !found:
			e.say(ctx, p, m, fmt.Sprintf("There is no session %s here.", name))
		default:
			e.say(ctx, p, m, fmt.Sprintf("🗑 Deleted session %s: the bridge will not resume its agents' sessions again.", name))
		}
	})
}

// laneCommandJob prefixes the lane job ids of commands, telling them from
// turns (whose job ids are their turn ids).
const laneCommandJob = "cmd-"

// laneCommandWait bounds how long the intake waits for a command that runs
// on an idle lane: longer than a notice's send with its retries.
const laneCommandWait = 45 * time.Second

// onLane runs a command that changes the session on the conversation's
// lane, so it never races a turn that is still saving its session: at once
// when the lane is idle, after the queued turns otherwise.
func (e *Engine) onLane(ctx context.Context, p core.Platform, m core.Message, key core.ConversationKey, fn func(context.Context)) {
	done := make(chan struct{})
	pos, err := e.lanes.Enqueue(key, lane.Job{ID: laneCommandJob + newID(), Run: func(ctx context.Context) {
		defer close(done)
		fn(context.WithoutCancel(ctx))
	}})
	switch {
	case err != nil:
		e.say(ctx, p, m, "🚦 Busy: please try again when the current answer is done.")
	case pos > 0:
		e.say(ctx, p, m, "⏳ A turn is running; this takes effect after it.")
	default:
		// It runs now, on the lane's goroutine: wait for it, so that its
		// answer comes before the answers to the conversation's later
		// events, as the intake's order promises ("/new" then "/session").
		// The bound only matters if a stop drops the job before the lane
		// takes it up, when done never closes.
		wait := time.NewTimer(laneCommandWait)
		defer wait.Stop()
		select {
		case <-done:
		case <-ctx.Done():
		case <-wait.C:
		}
	}
}

func (e *Engine) status(ctx context.Context, key, conv core.ConversationKey) string {
	var b strings.Builder
	r, running, queued := e.lanes.Status(key)
	e.mu.Lock()
	t := e.running[key]
	e.mu.Unlock()
	line, queued := activity(r, running, queued, t)
	if t != nil {
		t.mu.Lock()
		w := t.slot
		t.mu.Unlock()
		if w != nil {
			if f, waits := e.slots.describe(w); waits && !f.order {
				line = f.status()
			}
		}
	}
	b.WriteString(line)
	if queued > 0 {
		fmt.Fprintf(&b, "\n⏳ %d message(s) queued.", queued)
	}
	name, sess, err := e.session(ctx, key)
	if err != nil {
		b.WriteString("\n⚠️ Session unavailable (storage error).")
		return b.String()
	}
	profile, _, _ := e.pickProfile(ctx, e.cfg(), conv, key)
	id := sess.AgentID(profile)
	if id == "" {
		id = "(new — the agent has not assigned one yet)"
	}
	fmt.Fprintf(&b, "\nSession %s: agent session id %s, %d turn(s). Profile: %s.", name, id, sess.Turns, profile)
	return b.String()
}

// activity is /status's first line for a lane's state (t is the turn
// running on it, if it has begun) and how many jobs wait behind what it
// describes. A job the lane has accepted to run at once may not have begun
// yet — the lane's goroutine has still to take it off the queue, or the turn
// to register — and is shown as starting: "idle" beside a queued message
// would tell the sender it is stuck.
func activity(r lane.Running, running bool, queued int, t *turn) (string, int) {
	switch {
	case running && t != nil:
		t.mu.Lock()
		defer t.mu.Unlock()
		line := fmt.Sprintf("▶ Running for %s (profile %s, session %s).", time.Since(r.Started).Round(time.Second), t.profileName, t.sessionName)
		if t.transcribing {
			line += " 🎤 Transcribing a voice note."
		}
		return line, queued
	case running && !strings.HasPrefix(r.ID, laneCommandJob):
		return "▶ Starting a turn.", queued
	case !running && queued > 0:
		return "▶ Starting the next message.", queued - 1
	}
	return "Idle: no turn is running.", queued
}
