package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
)

// Limits are optional per-user budgets, counted over the user's finished
// turns on the platform (the store's usage log), and the bound on each
// reply; zero fields are off, except ReplyBytes.
type Limits struct {
	TurnsPerHour  int     // turns per user in any hour
	CostPerDayUSD float64 // result.usage.cost_usd per user in any 24 h
	// ReplyBytes bounds the text of each reply (agentproc.Options.MaxReplyBytes);
	// 0 means agentproc.DefaultMaxReplyBytes.
	ReplyBytes int
}

// replyLimit is the bound on the text of each reply in conv.
func (s *Settings) replyLimit(conv core.ConversationKey) int {
	if s.Limits != nil {
		if n := s.Limits(conv).ReplyBytes; n > 0 {
			return n
		}
	}
	return agentproc.DefaultMaxReplyBytes
}

// overLimit returns the answer to m when its sender is over a limit of
// its conversation, saying when they can go on; "" when the turn may run.
// A storage error lets the turn run: a limit is a budget, not access.
func (e *Engine) overLimit(ctx context.Context, s *Settings, platform string, m core.Message) string {
	if s.Limits == nil {
		return ""
	}
	lim := s.Limits(m.Conv)
	if lim.TurnsPerHour <= 0 && lim.CostPerDayUSD <= 0 {
		return ""
	}
	now := time.Now()
	events, err := e.store.UsageSince(ctx, now.Add(-24*time.Hour))
	if err != nil {
		e.log.WarnContext(ctx, "reading usage for limits failed; not limiting", "conv", m.Conv, "err", err)
		return ""
	}
	var mine []core.UsageEvent // oldest first, as the log returns them
	for _, ev := range events {
		if ev.Platform == platform && ev.User == m.From.ID {
			mine = append(mine, ev)
		}
	}
	if lim.TurnsPerHour > 0 {
		var hour []core.UsageEvent
		for _, ev := range mine {
			if ev.At.After(now.Add(-time.Hour)) {
				hour = append(hour, ev)
			}
		}
		if over := len(hour) - lim.TurnsPerHour; over >= 0 {
			// Free again when enough of the hour's turns are an hour old.
			at := hour[over].At.Add(time.Hour)
			return fmt.Sprintf("⏳ You have used your %d turns for this hour here. You can go on at %s (in %s).",
				lim.TurnsPerHour, at.UTC().Format("15:04 MST"), until(now, at))
		}
	}
	if lim.CostPerDayUSD > 0 {
		var total float64
		for _, ev := range mine {
			total += ev.Usage.CostUSD
		}
		if total >= lim.CostPerDayUSD {
			// Free again when the oldest turns have left the day and what
			// is left is under the limit.
			at, spent := now, total
			for _, ev := range mine {
				spent -= ev.Usage.CostUSD
				at = ev.At.Add(24 * time.Hour)
				if spent < lim.CostPerDayUSD {
					break
				}
			}
			return fmt.Sprintf("⏳ Your turns here have cost $%.2f in the last 24 h, the limit is $%.2f. You can go on at %s (in %s).",
				total, lim.CostPerDayUSD, at.UTC().Format("2006-01-02 15:04 MST"), until(now, at))
		}
	}
	return ""
}

// until is the wait from now to at, rounded up to a minute.
func until(now, at time.Time) time.Duration {
	return max(at.Sub(now), 0).Truncate(time.Minute) + time.Minute
}
