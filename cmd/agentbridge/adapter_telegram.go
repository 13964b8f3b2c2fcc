package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/agentbridge/agentbridge/adapters/telegram"
	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/core"
)

// telegramCommands is the bridge's command list for Telegram's menu.
var telegramCommands = []telegram.Command{
	{Command: "new", Description: "start a fresh agent session here"},
	{Command: "stop", Description: "stop the running turn and cancel queued messages"},
	{Command: "status", Description: "show the running turn, the queue and the session"},
	{Command: "session", Description: "switch to (or create) a named session"},
	{Command: "sessions", Description: "list this conversation's sessions"},
	{Command: "help", Description: "show the commands"},
	{Command: "whoami", Description: "show your user id"},
}

// newTelegramAdapter builds the Telegram adapter from the config. It calls
// getMe, so a bad token stops serve at start with a clear error.
func newTelegramAdapter(cfg *config.Config, st core.Store, log *slog.Logger) (core.Platform, error) {
	tc := cfg.Telegram
	opts := telegram.Options{
		Mode:          tc.Mode,
		WebhookListen: tc.WebhookListen,
		WebhookURL:    tc.WebhookURL,
		WebhookSecret: tc.WebhookSecret,
		Token:         tc.Token,
		APIURL:        tc.APIURL,
		GroupTrigger:  tc.GroupTrigger,
		Store:         st,
		Drafts:        tc.Drafts,
		// A draft becomes a real message after a pause longer than the
		// presenter's own edit floor.
		DraftIdle: max(10*time.Second, 2*cfg.Presenter.MinEditInterval),
	}
	// Telegram's menu only knows "/" commands.
	if tc.CommandPrefix == "/" {
		opts.Commands = telegramCommands
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return telegram.New(ctx, opts, log)
}
