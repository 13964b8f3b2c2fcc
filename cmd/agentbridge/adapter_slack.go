package main

import (
	"log/slog"

	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/core"
)

// newSlackAdapter builds the Slack adapter from the config.
func newSlackAdapter(cfg *config.Config, st core.Store, log *slog.Logger) (core.Platform, error) {
	return nil, errNoAdapter
}
