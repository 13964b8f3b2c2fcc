package engine

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge/core"
)

// usage answers /usage: what agents reported (result.usage) for the
// active session, every session of the conversation, and every turn on
// the platform in the last 24 hours.
func (e *Engine) usage(ctx context.Context, p core.Platform, key core.ConversationKey) string {
	name, sess, err := e.session(ctx, key)
	var list []core.Session
	if err == nil {
		list, err = e.store.Sessions(ctx, key)
	}
	var events []core.UsageEvent
	if err == nil {
		events, err = e.store.UsageSince(ctx, time.Now().Add(-24*time.Hour))
	}
	if err != nil {
		e.log.ErrorContext(ctx, "reading usage failed", "conv", key, "err", err)
		return "⚠️ Could not read usage (storage error)."
	}
	var conv, day core.Usage
	for _, s := range list {
		conv.Add(s.Usage)
	}
	for _, ev := range events {
		if ev.Platform == p.Name() {
			day.Add(ev.Usage)
		}
	}
	var b strings.Builder
	b.WriteString("Usage reported by the agents:")
	fmt.Fprintf(&b, "\nThis session (%s): %s", name, usageFigures(sess.Usage))
	fmt.Fprintf(&b, "\nThis conversation (%d session(s)): %s", max(len(list), 1), usageFigures(conv))
	fmt.Fprintf(&b, "\nLast 24 h on %s: %s", p.Name(), usageFigures(day))
	return b.String()
}

// usageFigures is one line of /usage.
func usageFigures(u core.Usage) string {
	s := fmt.Sprintf("%d turn(s), %d in / %d out tokens", u.Turns, u.InputTokens, u.OutputTokens)
	if u.CostUSD > 0 {
		s += fmt.Sprintf(", $%.4f", u.CostUSD)
	}
	return s
}
