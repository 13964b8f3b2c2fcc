package discord

import (
	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/core"
)

// Kind is the discord section of the bridge's config file and the factory
// of its adapter; a discord/NAME section is another bot.
var Kind = config.NewKind(Name, func() *Config {
	return &Config{Platform: config.Platform{SessionScope: core.ScopeThread, CommandPrefix: defaultPrefix, MaxFileBytes: 20 << 20}}
}, fromConfig)

// Config is one discord section.
type Config struct {
	config.Platform
	Token core.Secret
	// MessageContent says the privileged message content intent is granted;
	// without it the bot answers mentions and DMs only.
	MessageContent bool
	// ThreadPerMention opens a thread for each mention in a channel.
	ThreadPerMention bool
	// SlashCommandsGuilds are guild ids to register slash commands in
	// (instantly); empty registers them globally.
	SlashCommandsGuilds []string
}

// Shared implements config.Section.
func (c *Config) Shared() *config.Platform { return &c.Platform }

// Declare implements config.Section.
func (c *Config) Declare(f *config.Fields) {
	f.Secret("token", &c.Token)
	f.Bool("message_content", &c.MessageContent)
	f.Bool("thread_per_mention", &c.ThreadPerMention)
	f.List("slash_commands_guilds", &c.SlashCommandsGuilds)
}

// Check implements config.Section.
func (c *Config) Check(v *config.Checker) {
	if v.Need("token", !c.Token.IsZero(), "when "+v.Section()+" is enabled") {
		v.Unique("token", c.Token.Reveal())
	}
}

// fromConfig builds the adapter of one section. It keeps no cursor: the
// gateway resumes its own session. The /agent slash command is registered
// at every start (per slash_commands_guilds, or globally); a failure is
// logged, never fatal, so there is no switch for it.
func fromConfig(c *Config, deps config.Deps) (*Adapter, error) {
	return New(Options{
		Name:             deps.Name,
		Token:            c.Token,
		APIURL:           c.APIURL,
		MessageContent:   c.MessageContent,
		ThreadPerMention: c.ThreadPerMention,
		CommandPrefix:    c.CommandPrefix,
		SlashCommands:    true,
		SlashGuilds:      c.SlashCommandsGuilds,
		SlashProfiles:    deps.Profiles,
	}, deps.Log)
}
