package telegram

import (
	"time"

	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/core"
)

// Kind is the telegram section of the bridge's config file and the factory
// of its adapter; a telegram/NAME section is another bot.
var Kind = config.NewKind(Name, func() *Config {
	return &Config{
		Platform:     config.Platform{SessionScope: core.ScopeThread, CommandPrefix: "/", MaxFileBytes: maxDownload},
		Mode:         ModePolling,
		GroupTrigger: TriggerMention,
		Drafts:       true,
	}
}, fromConfig)

// Config is one telegram section.
type Config struct {
	config.Platform
	Token         core.Secret
	Mode          string      // ModePolling or ModeWebhook
	WebhookListen string      // host:port, webhook mode
	WebhookURL    string      // public URL Telegram posts to
	WebhookSecret core.Secret // X-Telegram-Bot-Api-Secret-Token
	// GroupTrigger is TriggerMention or TriggerAll.
	GroupTrigger string
	// Drafts streams replies with sendMessageDraft in private chats.
	Drafts bool
}

// Shared implements config.Section.
func (c *Config) Shared() *config.Platform { return &c.Platform }

// Declare implements config.Section.
func (c *Config) Declare(f *config.Fields) {
	f.Secret("token", &c.Token)
	f.Enum("mode", &c.Mode, ModePolling, ModeWebhook)
	f.String("webhook_listen", &c.WebhookListen)
	f.URL("webhook_url", &c.WebhookURL)
	f.Secret("webhook_secret", &c.WebhookSecret)
	f.Enum("group_trigger", &c.GroupTrigger, TriggerMention, TriggerAll)
	f.Bool("drafts", &c.Drafts)
}

// Check implements config.Section.
func (c *Config) Check(v *config.Checker) {
	if v.Need("token", !c.Token.IsZero(), "when "+v.Section()+" is enabled") {
		v.Unique("token", c.Token.Reveal())
	}
	if c.Mode != ModeWebhook {
		return
	}
	if v.Need("webhook_url", c.WebhookURL != "", "in webhook mode") {
		v.URL("webhook_url", c.WebhookURL)
	}
	if v.Need("webhook_listen", c.WebhookListen != "", "in webhook mode") {
		v.Listen("webhook_listen", c.WebhookListen)
	}
	if v.Need("webhook_secret", !c.WebhookSecret.IsZero(), "in webhook mode") &&
		!validSecret(c.WebhookSecret.Reveal()) {
		v.Fail("webhook_secret", "must be 1-256 characters of A-Z, a-z, 0-9, _ and - (Telegram's rule)")
	}
}

// validSecret follows Telegram's rule for setWebhook's secret_token: 1-256
// characters of A-Z, a-z, 0-9, _ and -.
func validSecret(s string) bool {
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return len(s) >= 1 && len(s) <= 256
}

// menuCommands is the bridge's command table (core.Commands) as
// Telegram's menu shows it: lowercase names, a description each.
func menuCommands() []Command {
	out := make([]Command, 0, len(core.Commands))
	for _, c := range core.Commands {
		d := c.Description
		if c.Arg != "" {
			d += " (" + c.Arg + ")"
		}
		out = append(out, Command{Command: c.Name, Description: d})
	}
	return out
}

// fromConfig builds the adapter of one section. A bad token stops it in
// Run, with a clear error.
func fromConfig(c *Config, deps config.Deps) (*Adapter, error) {
	opts := Options{
		Name:          deps.Name,
		Mode:          c.Mode,
		WebhookListen: c.WebhookListen,
		WebhookURL:    c.WebhookURL,
		WebhookSecret: c.WebhookSecret,
		Token:         c.Token,
		APIURL:        c.APIURL,
		GroupTrigger:  c.GroupTrigger,
		Store:         deps.Store,
		Drafts:        c.Drafts,
		// A draft becomes a real message after a pause longer than the
		// presenter's own edit floor.
		DraftIdle: max(10*time.Second, 2*deps.Presenter.MinEditInterval),
	}
	// Telegram's menu only knows "/" commands.
	if c.CommandPrefix == "/" {
		opts.Commands = menuCommands()
	}
	return New(opts, deps.Log)
}
