package main

import (
	"log/slog"

	"github.com/agentbridge/agentbridge/adapters/slack"
	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/core"
)

// newSlackAdapter builds the Slack adapter from the config's slack block.
// The store remembers which threads the bot takes part in.
func newSlackAdapter(cfg *config.Config, st core.Store, log *slog.Logger) (core.Platform, error) {
	c := cfg.Slack
	return slack.New(slack.Options{
		BotToken:        c.BotToken,
		AppToken:        c.AppToken,
		SigningSecret:   c.SigningSecret,
		Mode:            c.Mode,
		EventsListen:    c.EventsListen,
		APIURL:          c.APIURL,
		CommandPrefix:   c.CommandPrefix,
		AllowBots:       c.AllowBots,
		Store:           st,
		NativeStreaming: c.NativeStreaming,
	}, log)
}
