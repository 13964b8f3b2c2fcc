package main

import (
	"log/slog"

	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/core"
)

// newTelegramAdapter builds the Telegram adapter from the config.
func newTelegramAdapter(cfg *config.Config, st core.Store, log *slog.Logger) (core.Platform, error) {
	return nil, errNoAdapter
}
