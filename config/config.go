// Package config holds the bridge's configuration file: its types, their
// defaults, and a strict loader that reports every problem in the file at
// once, each with the file, line and YAML path it concerns.
//
// Secrets come from the environment through ${VAR} references, which are
// expanded only in secret and URL fields so that a "$" anywhere else stays
// literal. Secrets are core.Secret values and never appear in errors or in
// formatted output.
package config

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/agentbridge/agentbridge/core"
)

// BuiltinPrefix marks a profile value that names a profile compiled into the
// bridge ("builtin:demo") instead of a profile file.
const BuiltinPrefix = "builtin:"

// Values of the enumerated string fields.
const (
	SlackSocket = "socket" // Slack Socket Mode (needs app_token)
	SlackEvents = "events" // Slack Events API over HTTP (needs signing_secret)

	TelegramPolling = "polling" // Telegram getUpdates long polling
	TelegramWebhook = "webhook" // Telegram webhook (needs webhook_url, webhook_listen, webhook_secret)

	TriggerMention = "mention" // in Telegram groups, answer only messages that mention the bot
	TriggerAll     = "all"     // in Telegram groups, answer every message

	ThinkingShow = "show" // show the agent's "thinking" partials apart from its output
	ThinkingHide = "hide" // drop the agent's "thinking" partials

	FormatText = "text" // log as slog text
	FormatJSON = "json" // log as slog JSON
)

// Config is a validated bridge configuration. Paths in it are absolute.
type Config struct {
	// Path is the absolute path of the file the configuration came from;
	// empty when Parse was given no path.
	Path string `yaml:"-"`
	// Store is the absolute path of the bbolt database file.
	Store string `yaml:"store"`
	// Profiles maps a profile name to the absolute path of its profile YAML,
	// or to "builtin:NAME" for a profile compiled into the bridge. The files
	// are not opened by this package.
	Profiles map[string]string `yaml:"profiles"`
	// DefaultProfile names the profile used when no route matches.
	DefaultProfile string `yaml:"default_profile"`
	// Routes pick a profile per conversation; the first match wins.
	Routes []Route `yaml:"routes"`
	// QueueDepth is how many messages may wait per conversation behind the
	// running turn.
	QueueDepth int `yaml:"queue_depth"`
	// DedupTTL is how long a platform message id is remembered.
	DedupTTL time.Duration `yaml:"dedup_ttl"`
	// ShutdownGrace is how long running turns may finish after SIGTERM.
	ShutdownGrace time.Duration `yaml:"shutdown_grace"`
	// IdleTimeout stops a turn whose agent has sent nothing for this long,
	// except while a permission prompt waits for a person; 0 turns it off.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	Presenter   Presenter     `yaml:"presenter"`
	Log         Log           `yaml:"log"`
	Metrics     Metrics       `yaml:"metrics"`
	Slack       Slack         `yaml:"slack"`
	Discord     Discord       `yaml:"discord"`
	Telegram    Telegram      `yaml:"telegram"`

	warnings []*FieldError
}

// Route sends the conversations it matches to a profile. An empty field
// matches any value.
type Route struct {
	Platform  string `yaml:"platform"`
	Workspace string `yaml:"workspace"`
	Channel   string `yaml:"channel"`
	Profile   string `yaml:"profile"`
}

// Matches reports whether conv falls under r.
func (r Route) Matches(conv core.ConversationKey) bool {
	return (r.Platform == "" || r.Platform == conv.Platform) &&
		(r.Workspace == "" || r.Workspace == conv.Workspace) &&
		(r.Channel == "" || r.Channel == conv.Channel)
}

// Presenter tunes how a turn's output is shown in chat.
type Presenter struct {
	// PlaceholderDelay is how long to wait for output before posting a
	// "thinking…" placeholder; 0 means never post one.
	PlaceholderDelay time.Duration `yaml:"placeholder_delay"`
	// Thinking is ThinkingShow or ThinkingHide.
	Thinking string `yaml:"thinking"`
	// UsageFooter appends the turn's token usage to the final reply.
	UsageFooter bool `yaml:"usage_footer"`
	// MinEditInterval is a floor on top of the platform's own edit cadence.
	MinEditInterval time.Duration `yaml:"min_edit_interval"`
}

// Log configures the root logger.
type Log struct {
	Level  string `yaml:"level"`  // debug, info, warn or error
	Format string `yaml:"format"` // FormatText or FormatJSON
}

// SlogLevel returns Level as a slog.Level.
func (l Log) SlogLevel() slog.Level {
	switch l.Level {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}

// Metrics configures the optional metrics and health listener.
type Metrics struct {
	// Listen is the host:port serving /metrics and /healthz; empty is off.
	Listen string `yaml:"listen"`
}

// Access lists who may use the bot on one platform. Everything is denied
// unless listed.
type Access struct {
	// AllowUsers are user ids that may use the bot; "*" allows anyone.
	AllowUsers []string `yaml:"allow_users"`
	// AllowChats are chat ids whose members may all use the bot; "*"
	// allows any chat.
	AllowChats []string `yaml:"allow_chats"`
	// Approvers are user ids that may answer anyone's permission prompts.
	// There is no wildcard.
	Approvers []string `yaml:"approvers"`
}

// AllowsUser reports whether userID is listed in AllowUsers, or AllowUsers
// holds "*". An empty id is never allowed.
func (a Access) AllowsUser(userID string) bool { return allows(a.AllowUsers, userID) }

// AllowsChat reports whether chatID is listed in AllowChats, or AllowChats
// holds "*". An empty id is never allowed.
func (a Access) AllowsChat(chatID string) bool { return allows(a.AllowChats, chatID) }

// IsApprover reports whether userID is listed in Approvers. "*" is not a
// wildcard here: letting anyone approve anyone's tool use would defeat the
// prompt.
func (a Access) IsApprover(userID string) bool {
	return userID != "" && userID != Wildcard && slices.Contains(a.Approvers, userID)
}

// Wildcard in AllowUsers or AllowChats matches any id.
const Wildcard = "*"

func allows(list []string, id string) bool {
	if id == "" {
		return false
	}
	return slices.Contains(list, Wildcard) || slices.Contains(list, id)
}

// Platform holds the settings every chat platform has.
type Platform struct {
	Enabled bool `yaml:"enabled"`
	// APIURL overrides the platform's API base URL (tests, proxies,
	// self-hosted servers); empty means the public API.
	APIURL string `yaml:"api_url"`
	// SessionScope says which part of a conversation a session is bound to.
	SessionScope core.SessionScope `yaml:"session_scope"`
	// CommandPrefix starts a bridge command, such as "!" in "!new".
	CommandPrefix string `yaml:"command_prefix"`
	// MaxFileBytes is the largest attachment the bridge downloads.
	MaxFileBytes int64 `yaml:"max_file_bytes"`
	Access       `yaml:",inline"`
}

// Slack configures the Slack adapter.
type Slack struct {
	Platform      `yaml:",inline"`
	BotToken      core.Secret `yaml:"bot_token"`      // xoxb-
	AppToken      core.Secret `yaml:"app_token"`      // xapp-, Socket Mode
	SigningSecret core.Secret `yaml:"signing_secret"` // Events API mode
	Mode          string      `yaml:"mode"`           // SlackSocket or SlackEvents
	EventsListen  string      `yaml:"events_listen"`  // host:port, events mode
	AllowBots     bool        `yaml:"allow_bots"`     // answer messages from other bots
	// NativeStreaming streams thread replies with chat.startStream /
	// appendStream / stopStream instead of posting and editing.
	NativeStreaming bool `yaml:"native_streaming"`
}

// Discord configures the Discord adapter.
type Discord struct {
	Platform `yaml:",inline"`
	Token    core.Secret `yaml:"token"`
	// MessageContent says the privileged message content intent is granted;
	// without it the bot answers mentions and DMs only.
	MessageContent bool `yaml:"message_content"`
	// ThreadPerMention opens a thread for each mention in a channel.
	ThreadPerMention bool `yaml:"thread_per_mention"`
	// SlashCommandsGuilds are guild ids to register slash commands in
	// (instantly); empty registers them globally.
	SlashCommandsGuilds []string `yaml:"slash_commands_guilds"`
}

// Telegram configures the Telegram adapter.
type Telegram struct {
	Platform      `yaml:",inline"`
	Token         core.Secret `yaml:"token"`
	Mode          string      `yaml:"mode"`           // TelegramPolling or TelegramWebhook
	WebhookListen string      `yaml:"webhook_listen"` // host:port, webhook mode
	WebhookURL    string      `yaml:"webhook_url"`    // public URL Telegram posts to
	WebhookSecret core.Secret `yaml:"webhook_secret"` // X-Telegram-Bot-Api-Secret-Token
	// GroupTrigger is TriggerMention or TriggerAll.
	GroupTrigger string `yaml:"group_trigger"`
	// Drafts streams replies with sendMessageDraft in private chats.
	Drafts bool `yaml:"drafts"`
}

// ProfileFor returns the profile name for conv: the profile of the first
// route that matches, else DefaultProfile.
func (c *Config) ProfileFor(conv core.ConversationKey) string {
	for _, r := range c.Routes {
		if r.Matches(conv) {
			return r.Profile
		}
	}
	return c.DefaultProfile
}

// Warnings returns legal but doubtful settings worth logging at startup: a
// secret written literally in the file, a wildcard access list, an enabled
// platform nobody may use, a metrics listener beyond loopback.
func (c *Config) Warnings() []*FieldError { return slices.Clone(c.warnings) }

// FieldError is one problem in a configuration file.
type FieldError struct {
	File    string // the path the file was loaded from, as given
	Line    int    // 1-based line in File
	Path    string // YAML path such as "slack.bot_token" or "routes[2].profile"; empty for syntax errors
	Problem string
}

// Error formats e as "file:line: path: problem".
func (e *FieldError) Error() string {
	s := e.File + ":" + strconv.Itoa(e.Line) + ": "
	if e.File == "" {
		s = "line " + strconv.Itoa(e.Line) + ": "
	}
	if e.Path != "" {
		s += e.Path + ": "
	}
	return s + e.Problem
}

// Load reads and parses the configuration file at path. lookupEnv resolves
// ${VAR} references; nil means os.LookupEnv.
func Load(path string, lookupEnv func(string) (string, bool)) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	return Parse(data, path, lookupEnv)
}

// Parse parses and validates a configuration file's contents. path is used
// in error messages and to resolve relative paths; lookupEnv resolves ${VAR}
// references, nil meaning os.LookupEnv. Every problem found is returned at
// once, joined with errors.Join, each a *FieldError.
func Parse(data []byte, path string, lookupEnv func(string) (string, bool)) (*Config, error) {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	return parse(data, path, lookupEnv)
}

// defaults returns the configuration an empty file would give, before
// paths are resolved.
func defaults() Config {
	const maxFile = 20 << 20
	return Config{
		Store:         "agentbridge.db",
		QueueDepth:    5,
		DedupTTL:      24 * time.Hour,
		ShutdownGrace: 30 * time.Second,
		Presenter: Presenter{
			PlaceholderDelay: 1500 * time.Millisecond,
			Thinking:         ThinkingShow,
		},
		Log: Log{Level: "info", Format: FormatText},
		Slack: Slack{
			Platform:     Platform{SessionScope: core.ScopeThread, CommandPrefix: "!", MaxFileBytes: maxFile},
			Mode:         SlackSocket,
			EventsListen: ":3000",
		},
		Discord: Discord{
			Platform: Platform{SessionScope: core.ScopeThread, CommandPrefix: "!", MaxFileBytes: maxFile},
		},
		Telegram: Telegram{
			Platform:     Platform{SessionScope: core.ScopeThread, CommandPrefix: "/", MaxFileBytes: maxFile},
			Mode:         TelegramPolling,
			GroupTrigger: TriggerMention,
			Drafts:       true,
		},
	}
}
