package main

import (
	"log/slog"

	"github.com/agentbridge/agentbridge/adapters/discord"
	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/core"
)

// newDiscordAdapter builds the Discord adapter from the config. It keeps no
// cursor: the gateway resumes its own session. The /agent slash command is
// registered at every start (per slash_commands_guilds, or globally); a
// failure is logged, never fatal, so there is no switch for it.
func newDiscordAdapter(cfg *config.Config, _ core.Store, log *slog.Logger) (core.Platform, error) {
	d := cfg.Discord
	return discord.New(discord.Options{
		Token:            d.Token,
		APIURL:           d.APIURL,
		MessageContent:   d.MessageContent,
		ThreadPerMention: d.ThreadPerMention,
		CommandPrefix:    d.CommandPrefix,
		SlashCommands:    true,
		SlashGuilds:      d.SlashCommandsGuilds,
	}, log)
}
