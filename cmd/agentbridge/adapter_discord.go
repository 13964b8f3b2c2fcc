package main

import (
	"log/slog"

	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/core"
)

// newDiscordAdapter builds the Discord adapter from the config.
func newDiscordAdapter(cfg *config.Config, st core.Store, log *slog.Logger) (core.Platform, error) {
	return nil, errNoAdapter
}
