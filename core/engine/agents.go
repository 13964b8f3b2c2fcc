package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
)

// agentButton prefixes the value of an /agent menu button; the rest is the
// profile's name. Prompt tokens never contain ':' before their choice, so
// the two kinds of button cannot be confused.
const agentButton = "agent:"

// choiceCursor names the store entry holding the profile a conversation
// (its session key) picked with /agent; "" or none means the route's.
func choiceCursor(key core.ConversationKey) string { return "engine/agent/" + key.String() }

// choices returns the profiles /agent offers in conv, the route's default
// first; names no profile is configured for are left out.
func (s *Settings) choices(conv core.ConversationKey) []string {
	def, _ := s.profileFor(conv)
	out := []string{def}
	if s.Choices == nil {
		return out
	}
	for _, name := range s.Choices(conv) {
		if s.Profiles[name] != nil && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// pickProfile returns the profile a turn in conv (session key key) runs:
// the one picked with /agent while the conversation still offers it, else
// the route's. A pick that is no longer offered (a reload removed it) is
// forgotten, and note says so once.
func (e *Engine) pickProfile(ctx context.Context, s *Settings, conv, key core.ConversationKey) (name string, prof *agentproc.Profile, note string) {
	def, defProf := s.profileFor(conv)
	chosen, err := e.store.Cursor(ctx, choiceCursor(key))
	if err != nil {
		e.log.WarnContext(ctx, "reading the picked agent failed; using the route's", "conv", conv, "err", err)
		return def, defProf, ""
	}
	if chosen == "" || chosen == def {
		return def, defProf, ""
	}
	if slices.Contains(s.choices(conv), chosen) {
		return chosen, s.Profiles[chosen], ""
	}
	if err := e.store.SetCursor(ctx, choiceCursor(key), ""); err != nil {
		e.log.WarnContext(ctx, "forgetting a removed agent failed", "conv", conv, "err", err)
	}
	return def, defProf, fmt.Sprintf("⚠️ The agent %s is no longer offered here; back to %s.", chosen, def)
}

// agentMenu answers /agent without a name: the choices, the current one
// marked, as buttons where there is a choice.
func (e *Engine) agentMenu(ctx context.Context, p core.Platform, m core.Message, key core.ConversationKey) {
	s := e.cfg()
	ps := s.platform(p.Name())
	current, _, _ := e.pickProfile(ctx, s, m.Conv, key)
	list := s.choices(m.Conv)
	var b strings.Builder
	if len(list) == 1 {
		fmt.Fprintf(&b, "This conversation has one agent: %s", describe(list[0], s.Profiles[list[0]]))
		e.notice(ctx, p, m, core.Post{Text: b.String(), Plain: true, ReplyTo: m.ID})
		return
	}
	b.WriteString("Agents here (each keeps its own session):")
	var buttons []core.Button
	maxValue := p.Limits().MaxButtonValue
	for _, name := range list {
		mark, label, style := "  ", name, core.StyleDefault
		if name == current {
			mark, label, style = "▶ ", "▶ "+name, core.StylePrimary
		}
		fmt.Fprintf(&b, "\n%s%s", mark, describe(name, s.Profiles[name]))
		if v := agentButton + name; maxValue == 0 || len(v) <= maxValue {
			buttons = append(buttons, core.Button{Label: label, Value: v, Style: style})
		}
	}
	fmt.Fprintf(&b, "\nSwitch with %sagent NAME", ps.Prefix)
	if len(buttons) > 0 {
		b.WriteString(" or a button")
	}
	b.WriteString(".")
	e.notice(ctx, p, m, core.Post{Text: b.String(), Plain: true, ReplyTo: m.ID, Buttons: buttons})
}

// describe is a profile's line in the menu.
func describe(name string, prof *agentproc.Profile) string {
	line := name
	if prof != nil && prof.Description != "" {
		line += " — " + prof.Description
	}
	switch {
	case prof == nil:
	case prof.ApproversOnly:
		line += " (approvers only)"
	case prof.PickUsers != nil:
		line += " (some users only)"
	}
	return line
}

// switchAgent switches the conversation to the profile name for the user
// m is from, if it is offered here and they may pick it; the answer is
// public, since the switch changes the shared conversation.
func (e *Engine) switchAgent(ctx context.Context, p core.Platform, m core.Message, key core.ConversationKey, name string) {
	s := e.cfg()
	ps := s.platform(p.Name())
	list := s.choices(m.Conv)
	prof := s.Profiles[name]
	switch {
	case !slices.Contains(list, name):
		e.say(ctx, p, m, fmt.Sprintf("No agent %q here. Choose one of: %s.", name, strings.Join(list, ", ")))
		return
	case prof.ApproversOnly && !ps.approver(m.From.ID):
		e.log.InfoContext(ctx, "agent switch refused", "conv", m.Conv, "user", m.From.ID, "profile", name)
		e.private(ctx, p, m.Reply, m, fmt.Sprintf("Only an approver can switch this conversation to %s.", name))
		return
	case prof.PickUsers != nil && !slices.Contains(prof.PickUsers, m.From.ID) && !ps.approver(m.From.ID):
		e.log.InfoContext(ctx, "agent switch refused", "conv", m.Conv, "user", m.From.ID, "profile", name)
		e.private(ctx, p, m.Reply, m, fmt.Sprintf("You may not switch this conversation to %s: ask an approver.", name))
		return
	}
	def, _ := s.profileFor(m.Conv)
	// On the lane: a running turn keeps its agent; the next one uses the
	// new pick.
	e.onLane(ctx, p, m, key, func(ctx context.Context) {
		value := name
		if name == def {
			value = "" // follow the route's default, also after a reload changes it
		}
		if err := e.store.SetCursor(ctx, choiceCursor(key), value); err != nil {
			e.log.ErrorContext(ctx, "saving the picked agent failed", "conv", m.Conv, "err", err)
			e.say(ctx, p, m, "⚠️ Could not switch agents (storage error).")
			return
		}
		e.say(ctx, p, m, fmt.Sprintf("🔀 Switched to %s. Your next message goes to it; switching back resumes the earlier agent's session.", describe(name, prof)))
	})
}

// agentPress handles a press of an /agent menu button like "/agent NAME"
// typed by the presser.
func (e *Engine) agentPress(ctx context.Context, p core.Platform, a core.Action, name string) {
	ps := e.cfg().platform(p.Name())
	m := core.Message{Conv: a.Conv, From: a.From, Reply: a.Reply}
	if !ps.allowed(a.Conv, a.From.ID) {
		e.log.InfoContext(ctx, "agent menu press refused", "conv", a.Conv, "user", a.From.ID)
		e.refuse(ctx, p, a.Reply, m, a.From.ID, fmt.Sprintf(textRefusal, p.Name(), a.From.ID))
		return
	}
	e.switchAgent(ctx, p, m, ps.Scope.SessionKey(a.Conv, a.From.ID), name)
}
