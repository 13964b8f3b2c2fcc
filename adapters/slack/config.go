package slack

import (
	"strings"

	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/core"
)

// Kind is the slack section of the bridge's config file and the factory of
// its adapter; a slack/NAME section is another app or workspace.
var Kind = config.NewKind(Name, func() *Config {
	return &Config{
		Platform:     config.Platform{SessionScope: core.ScopeThread, CommandPrefix: "!", MaxFileBytes: 20 << 20},
		Mode:         ModeSocket,
		EventsListen: ":3000",
	}
}, fromConfig)

// Config is one slack section.
type Config struct {
	config.Platform
	BotToken      core.Secret // xoxb-
	AppToken      core.Secret // xapp-, Socket Mode
	SigningSecret core.Secret // Events API mode
	Mode          string      // ModeSocket or ModeEvents
	EventsListen  string      // host:port, events mode
	AllowBots     bool        // answer messages from other bots
	// NativeStreaming streams thread replies with chat.startStream /
	// appendStream / stopStream instead of posting and editing.
	NativeStreaming bool
}

// Shared implements config.Section.
func (c *Config) Shared() *config.Platform { return &c.Platform }

// Declare implements config.Section.
func (c *Config) Declare(f *config.Fields) {
	f.Secret("bot_token", &c.BotToken)
	f.Secret("app_token", &c.AppToken)
	f.Secret("signing_secret", &c.SigningSecret)
	f.Enum("mode", &c.Mode, ModeSocket, ModeEvents)
	f.String("events_listen", &c.EventsListen)
	f.Bool("allow_bots", &c.AllowBots)
	f.Bool("native_streaming", &c.NativeStreaming)
}

// Check implements config.Section.
func (c *Config) Check(v *config.Checker) {
	// Swapped tokens are the classic Slack setup mistake; name the prefix,
	// never the token.
	if v.Need("bot_token", !c.BotToken.IsZero(), "when "+v.Section()+" is enabled") {
		if strings.HasPrefix(c.BotToken.Reveal(), "xapp-") {
			v.Fail("bot_token", "holds an app-level token (xapp-); bot_token takes the bot token (xoxb-)")
		} else {
			v.Unique("bot_token", c.BotToken.Reveal())
		}
	}
	switch c.Mode {
	case ModeSocket:
		if v.Need("app_token", !c.AppToken.IsZero(), "in socket mode") &&
			strings.HasPrefix(c.AppToken.Reveal(), "xoxb-") {
			v.Fail("app_token", "holds a bot token (xoxb-); app_token takes the app-level token (xapp-)")
		}
	case ModeEvents:
		v.Need("signing_secret", !c.SigningSecret.IsZero(), "in events mode")
		if v.Need("events_listen", c.EventsListen != "", "in events mode") {
			v.Listen("events_listen", c.EventsListen)
		}
	}
}

// fromConfig builds the adapter of one section. The store remembers which
// threads the bot takes part in.
func fromConfig(c *Config, deps config.Deps) (*Adapter, error) {
	return New(Options{
		Name:            deps.Name,
		BotToken:        c.BotToken,
		AppToken:        c.AppToken,
		SigningSecret:   c.SigningSecret,
		Mode:            c.Mode,
		EventsListen:    c.EventsListen,
		APIURL:          c.APIURL,
		CommandPrefix:   c.CommandPrefix,
		AllowBots:       c.AllowBots,
		Store:           deps.Store,
		NativeStreaming: c.NativeStreaming,
	}, deps.Log)
}
