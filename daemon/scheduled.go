package daemon

import (
	"context"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/daemon/schedule"
	"github.com/agentbridge/agentbridge/daemon/trigger"
	"github.com/agentbridge/agentbridge/internal/httpguard"
	"github.com/agentbridge/agentbridge/store"
)

// scheduleEntries turns the config's schedules into the scheduler's.
func scheduleEntries(cfg *config.Config) []schedule.Entry {
	out := make([]schedule.Entry, 0, len(cfg.Schedules))
	for _, s := range cfg.Schedules {
		out = append(out, schedule.Entry{
			Name: s.Name, Conv: s.Conv(), Cron: s.Cron, Location: s.Location,
			Message: s.Message, Profile: s.Profile, Session: s.Session, CatchUp: s.CatchUp,
		})
	}
	return out
}

// conversations answers the trigger's "is this a conversation the bridge
// knows?" from the config in force (a reload swaps it) and the store.
type conversations struct {
	cfg    atomic.Pointer[config.Config]
	served []string // the accounts being served
	st     *store.Store
}

// known reports whether conv is on an account being served and its
// channel is one the bridge knows: listed in the account's allow_chats
// (or "*") or allow_users (a Telegram private chat's id is its user's),
// named by a route or a schedule of that account, or one where the bridge
// has a session (someone has talked to it there).
func (c *conversations) known(ctx context.Context, conv core.ConversationKey) bool {
	cfg := c.cfg.Load()
	if !slices.Contains(c.served, conv.Platform) || conv.Channel == "" {
		return false
	}
	if a, ok := cfg.Account(conv.Platform); ok {
		p := a.Section.Shared()
		if (core.Access{Users: p.AllowUsers, Chats: p.AllowChats}).Names(conv.Channel) {
			return true
		}
	}
	for _, r := range cfg.Routes {
		if r.Platform == conv.Platform && r.Channel == conv.Channel {
			return true
		}
	}
	for _, s := range cfg.Schedules {
		if s.Platform == conv.Platform && s.Channel == conv.Channel {
			return true
		}
	}
	for _, k := range []core.ConversationKey{conv, {Platform: conv.Platform, Workspace: conv.Workspace, Channel: conv.Channel}} {
		if list, err := c.st.Sessions(ctx, k); err == nil && len(list) > 0 {
			return true
		}
	}
	return false
}

// listenTrigger binds the trigger's address, if one is configured, before
// anything starts: a taken address stops serve with nothing running.
func listenTrigger(cfg *config.Config) (net.Listener, error) {
	if cfg.Trigger.Listen == "" {
		return nil, nil
	}
	return net.Listen("tcp", cfg.Trigger.Listen)
}

// triggerServer is the HTTP server of the trigger endpoint: httpguard's
// limits, with 30 s to send a request (its body is up to 64 KiB).
func triggerServer(h *trigger.Handler) *http.Server {
	return httpguard.Server(h, httpguard.Limits{ReadTimeout: 30 * time.Second})
}
