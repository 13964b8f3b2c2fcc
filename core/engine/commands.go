package engine

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/lane"
)

// sessionName limits names to something safe to show and store. Compiled
// on first use: every agentbridge process links the engine, most never
// need it (start-up stays lean).
var sessionName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
})

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
		name = " (" + m.From.Name + ")"
	}
	return fmt.Sprintf("You are %s user %s%s, in chat %s.", platform, m.From.ID, name, m.Conv.Channel)
}

// command runs a bridge command; it reports false if the text should go to
// the agent after all.
func (e *Engine) command(ctx context.Context, p core.Platform, m core.Message, key core.ConversationKey, cmd, arg string) bool {
	s := e.cfg()
	ps := s.platform(p.Name())
	// Commands that wait for the lane answer with the lane job's context.
	replyIn := func(ctx context.Context, format string, args ...any) { e.say(ctx, p, m, fmt.Sprintf(format, args...)) }
	reply := func(format string, args ...any) { replyIn(ctx, format, args...) }
	switch cmd {
	case "help":
		var b strings.Builder
		b.WriteString("Send a message and the agent answers here. Commands:\n")
		for _, c := range core.Commands {
			arg := ""
			switch {
			case c.ArgRequired:
				arg = " " + c.Arg
			case c.Arg != "":
				arg = " [" + c.Arg + "]"
			}
			fmt.Fprintf(&b, "%s%s%s — %s\n", ps.Prefix, c.Name, arg, c.Description)
		}
		reply("%s", strings.TrimRight(b.String(), "\n"))
	case "stop":
		stopped, dropped := e.lanes.Stop(key, ErrStoppedByUser, true)
		e.dropped(ctx, dropped, "⏹ Cancelled: /stop was sent before this message ran.")
		switch {
		case stopped && len(dropped) > 0:
			reply("⏹ Stopping the running turn; also cancelled %d queued message(s).", len(dropped))
		case stopped:
			// The turn's own reply says "Stopped." once the agent is gone.
		case len(dropped) > 0:
			reply("⏹ Cancelled %d queued message(s).", len(dropped))
		default:
			reply("Nothing is running.")
		}
	case "new":
		e.onLane(ctx, p, m, key, func(ctx context.Context) {
			reply := func(format string, args ...any) { replyIn(ctx, format, args...) }
			name, _, err := e.session(ctx, key)
			if err == nil {
				err = e.store.ResetSession(ctx, key, name)
			}
			if err != nil {
				e.log.ErrorContext(ctx, "reset session failed", "conv", m.Conv, "err", err)
				reply("⚠️ Could not reset the session (storage error).")
				return
			}
			reply("🆕 Fresh session started (session %q). The agent will not remember earlier messages.", name)
		})
	case "session":
		if arg == "" {
			name, _, err := e.session(ctx, key)
			if err != nil {
				reply("⚠️ Could not read the session (storage error).")
				return true
			}
			reply("Active session: %s. Switch with %ssession NAME.", name, ps.Prefix)
			return true
		}
		if !sessionName().MatchString(arg) {
			reply("Session names are 1–64 letters, digits, '.', '_' or '-', starting with a letter or digit.")
			return true
		}
		e.onLane(ctx, p, m, key, func(ctx context.Context) {
			reply := func(format string, args ...any) { replyIn(ctx, format, args...) }
			_, exists, err := e.store.Session(ctx, key, arg)
			if err == nil {
				err = e.store.SetActiveSession(ctx, key, arg)
			}
			switch {
			case err != nil:
				reply("⚠️ Could not switch sessions (storage error).")
			case exists:
				reply("Switched to session %s.", arg)
			default:
				reply("Switched to new session %s.", arg)
			}
		})
	case "sessions":
		active, _, err := e.session(ctx, key)
		var list []core.Session
		if err == nil {
			list, err = e.store.Sessions(ctx, key)
		}
		if err != nil {
			reply("⚠️ Could not list sessions (storage error).")
			return true
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
		reply("%s", b.String())
	case "forget":
		e.forgetSession(ctx, p, m, key, arg)
	case "usage":
		reply("%s", e.usage(ctx, p, key))
	case "status":
		reply("%s", e.status(ctx, key, m.Conv))
	case "schedules":
		reply("%s", e.schedules(m.Conv))
	case "whoami":
		reply("%s", whoami(p.Name(), m))
	case "agent":
		if arg == "" {
			e.agentMenu(ctx, p, m, key)
		} else {
			e.switchAgent(ctx, p, m, key, arg)
		}
	default:
		return false
	}
	return true
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
		return fmt.Sprintf("▶ Running for %s (profile %s, session %s).", time.Since(r.Started).Round(time.Second), t.profileName, t.sessionName), queued
	case running && !strings.HasPrefix(r.ID, laneCommandJob):
		return "▶ Starting a turn.", queued
	case !running && queued > 0:
		return "▶ Starting the next message.", queued - 1
	}
	return "Idle: no turn is running.", queued
}
