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
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/core/engine"
	"github.com/agentbridge/agentbridge/core/outfile"
)

// BuiltinPrefix marks a profile value that names a profile compiled into the
// bridge ("builtin:demo") instead of a profile file.
const BuiltinPrefix = "builtin:"

// Values of the enumerated string fields.
const (
	ThinkingShow = "show" // show the agent's "thinking" partials apart from its output
	ThinkingHide = "hide" // drop the agent's "thinking" partials

	FormatText = "text" // log as slog text
	FormatJSON = "json" // log as slog JSON
)

// Config is a validated bridge configuration. Paths in it are absolute.
// The file's keys are named in decode.go's field tables (and each platform
// section's Declare), which read the YAML node tree; there are no struct
// tags.
type Config struct {
	// Path is the absolute path of the file the configuration came from;
	// empty when Parse was given no path.
	Path string
	// Store is the absolute path of the bbolt database file.
	Store string
	// Profiles maps a profile name to the absolute path of its profile YAML,
	// or to "builtin:NAME" for a profile compiled into the bridge. The files
	// are not opened by this package.
	Profiles map[string]string
	// DefaultProfile names the profile used when no route matches.
	DefaultProfile string
	// Routes pick a profile per conversation; the first match wins.
	Routes []Route
	// QueueDepth is how many messages may wait per conversation behind the
	// running turn.
	QueueDepth int
	// MaxConcurrentTurns caps the agents running at once over the bridge;
	// a turn past it waits in its conversation's queue for a free slot.
	MaxConcurrentTurns int
	// MaxConcurrentTurnsPerUser caps one user's agents running at once; 0
	// is half of MaxConcurrentTurns, rounded up.
	MaxConcurrentTurnsPerUser int
	// OnSaturated is what a turn does when MaxConcurrentTurns agents run:
	// "queue" waits for a free one, "reject" tells its sender at once and
	// runs nothing. A profile's own cap (max_concurrent) has its own.
	OnSaturated string
	// DedupTTL is how long a platform message id is remembered.
	DedupTTL time.Duration
	// ShutdownGrace is how long running turns may finish after SIGTERM.
	ShutdownGrace time.Duration
	// IdleTimeout stops a turn whose agent has sent nothing for this long,
	// except while a permission prompt waits for a person; 0 turns it off.
	IdleTimeout time.Duration
	Presenter   Presenter
	// Files bounds the files an agent sends back in one turn.
	Files   Files
	Log     Log
	Metrics Metrics
	// Schedules are turns the bridge starts at cron times.
	Schedules []Schedule
	// Trigger is the HTTP endpoint that starts turns; off unless Listen
	// is set.
	Trigger Trigger
	// Console is the operator's web console; off unless Listen is set.
	Console Console
	// Accounts are the platform sections: each kind's first account, set
	// in the file or not, in the order of Options.Platforms, then each
	// KIND/NAME section in file order.
	Accounts []Account

	warnings []*FieldError
	// secrets returns every secret read. A function, so that printing a
	// Config (which cannot call the String method of an unexported
	// field's elements) never shows them.
	secrets func() []core.Secret
	file    string         // the path as given, for FieldError.File
	lines   map[string]int // YAML path → line of its key
}

// Route sends the conversations it matches to a profile. An empty field
// matches any value.
type Route struct {
	Platform  string
	Workspace string
	Channel   string
	Profile   string
	// Profiles are the profiles /agent offers in the route's
	// conversations, beside Profile (the default); empty = the platform's.
	Profiles []string
	// Limits override the platform's, field by field, where set.
	Limits Limits
	// Transcribe, when written, replaces the platform's for the route's
	// conversations.
	Transcribe Transcribe
	// Busy overrides the platform's busy mode where set.
	Busy string
}

// Limits are optional per-user budgets; zero fields are off.
type Limits struct {
	// TurnsPerHour caps each user's turns in any hour.
	TurnsPerHour int
	// CostPerDayUSD caps each user's result.usage.cost_usd in any 24 h.
	CostPerDayUSD float64
	// ReplyBytes bounds the text of each reply; 0 is the bridge's default
	// (agentproc.DefaultMaxReplyBytes).
	ReplyBytes int
}

// Matches reports whether conv falls under r.
func (r Route) Matches(conv core.ConversationKey) bool {
	return (r.Platform == "" || r.Platform == conv.Platform) &&
		(r.Workspace == "" || r.Workspace == conv.Workspace) &&
		(r.Channel == "" || r.Channel == conv.Channel)
}

// DefaultCatchUp is the catch-up window of a schedule that sets none.
const DefaultCatchUp = time.Hour

// Schedule is one entry of schedules: a message sent to the agent as a
// turn in one conversation at the times a cron expression gives.
type Schedule struct {
	Name string
	// Platform, Workspace, Channel and Thread name the conversation as
	// routes do: Platform is an account's section key, Channel the Slack
	// or Discord channel or the Telegram chat id, Thread optional.
	Platform, Workspace, Channel, Thread string
	// Cron is a five-field expression (an optional leading seconds field,
	// @daily and the like accepted), read in TimeZone.
	Cron string
	// TimeZone is an IANA zone name; UTC when not set. Location is it
	// loaded.
	TimeZone string
	Location *time.Location
	Message  string
	Profile  string // "" uses the conversation's route
	Session  string // "" uses the conversation's active session
	// CatchUp is how old a run missed while the bridge was down may be
	// and still run once at start-up; 0 never catches up.
	CatchUp time.Duration
}

// Conv is the conversation the schedule's turns run in.
func (s Schedule) Conv() core.ConversationKey {
	return core.ConversationKey{Platform: s.Platform, Workspace: s.Workspace, Channel: s.Channel, Thread: s.Thread}
}

// Trigger configures the HTTP endpoint that starts turns (POST /v1/turns).
type Trigger struct {
	// Listen is the host:port to serve on; empty is off.
	Listen string
	// Token is the bearer token every request must carry.
	Token core.Secret
}

// Console configures the operator's web console (daemon/webconsole).
type Console struct {
	// Listen is the host:port to serve on; empty is off.
	Listen string
	// Token is what an operator logs in with (or sends as a bearer token).
	Token core.Secret
	// TLSCert and TLSKey are PEM files; set both to serve HTTPS.
	TLSCert, TLSKey string
	// Insecure allows plain HTTP on an address that is not loopback.
	Insecure bool
}

// Presenter tunes how a turn's output is shown in chat.
type Presenter struct {
	// PlaceholderDelay is how long to wait for output before posting a
	// "thinking…" placeholder; 0 means never post one.
	PlaceholderDelay time.Duration
	// Thinking is ThinkingShow or ThinkingHide.
	Thinking string
	// UsageFooter appends the turn's token usage to the final reply.
	UsageFooter bool
	// MinEditInterval is a floor on top of the platform's own edit cadence.
	MinEditInterval time.Duration
}

// Files bounds the files an agent sends back in one turn (spec/protocol.md
// X-FILE-4), on top of each platform's own limit for one file.
type Files struct {
	MaxPerTurn      int   // files; default 10
	MaxBytesPerTurn int64 // their bytes together; default 50 MB
}

// Log configures the root logger.
type Log struct {
	Level  string // debug, info, warn or error
	Format string // FormatText or FormatJSON
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
	Listen string
}

// Access lists who may use the bot on one platform. Everything is denied
// unless listed; the engine applies the rule (core/engine).
type Access struct {
	// AllowUsers are user ids that may use the bot; "*" allows anyone.
	AllowUsers []string
	// AllowChats are chat ids whose members may all use the bot; "*"
	// allows any chat.
	AllowChats []string
	// Approvers are user ids that may answer anyone's permission prompts.
	// There is no wildcard.
	Approvers []string
}

// Wildcard in AllowUsers or AllowChats matches any id.
const Wildcard = core.Wildcard

// Platform holds the settings every chat platform has.
type Platform struct {
	Enabled bool
	// APIURL overrides the platform's API base URL (tests, proxies,
	// self-hosted servers); empty means the public API.
	APIURL string
	// SessionScope says which part of a conversation a session is bound to.
	SessionScope core.SessionScope
	// CommandPrefix starts a bridge command, such as "!" in "!new".
	CommandPrefix string
	// MaxFileBytes is the largest attachment the bridge downloads.
	MaxFileBytes int64
	// Profiles are the profiles /agent offers in the platform's
	// conversations that no route with its own list matches.
	Profiles []string
	// Limits are per-user budgets in the platform's conversations.
	Limits Limits
	// Transcribe says how voice notes become text; off unless written.
	Transcribe Transcribe
	// Busy is what a message sent while its conversation's turn runs
	// does: engine.BusyQueue (the default), BusyInterrupt or BusyCollect.
	Busy string
	Access
}

// Enabled returns the accounts whose section turns them on.
func (c *Config) Enabled() []Account {
	var out []Account
	for _, a := range c.Accounts {
		if a.Enabled() {
			out = append(out, a)
		}
	}
	return out
}

// EnableHint says how to turn a platform on, for a config that enables
// none: "set enabled: true under slack, discord or telegram".
func (c *Config) EnableHint() string {
	var names []string
	for _, a := range c.Accounts {
		names = append(names, a.Name)
	}
	switch len(names) {
	case 0:
		return "this build knows no platform"
	case 1:
		return "set enabled: true under " + names[0]
	}
	return "set enabled: true under " + strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Account returns the account whose section key is name.
func (c *Config) Account(name string) (Account, bool) {
	for _, a := range c.Accounts {
		if a.Name == name {
			return a, true
		}
	}
	return Account{}, false
}

// Logger returns the root logger these settings describe, writing to w.
func (l Log) Logger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: l.SlogLevel()}
	if l.Format == FormatJSON {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
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

// LimitsFor returns the per-user limits in conv: the first matching
// route's, where set, else its platform's.
func (c *Config) LimitsFor(conv core.ConversationKey) Limits {
	var l Limits
	for _, a := range c.Accounts {
		if a.Name == conv.Platform {
			l = a.Section.Shared().Limits
		}
	}
	for _, r := range c.Routes {
		if r.Matches(conv) {
			if r.Limits.TurnsPerHour > 0 {
				l.TurnsPerHour = r.Limits.TurnsPerHour
			}
			if r.Limits.CostPerDayUSD > 0 {
				l.CostPerDayUSD = r.Limits.CostPerDayUSD
			}
			if r.Limits.ReplyBytes > 0 {
				l.ReplyBytes = r.Limits.ReplyBytes
			}
			break
		}
	}
	return l
}

// BusyFor returns conv's busy mode: the first matching route's, where set,
// else its platform's, else engine.BusyQueue.
func (c *Config) BusyFor(conv core.ConversationKey) string {
	mode := engine.BusyQueue
	for _, a := range c.Accounts {
		if a.Name == conv.Platform && a.Section.Shared().Busy != "" {
			mode = a.Section.Shared().Busy
		}
	}
	for _, r := range c.Routes {
		if r.Matches(conv) {
			if r.Busy != "" {
				mode = r.Busy
			}
			break
		}
	}
	return mode
}

// OfferedProfiles returns, sorted, every profile /agent may offer in the
// conversations of account: the defaults and lists of the routes that can
// match it, the platform's list and default_profile.
func (c *Config) OfferedProfiles(account string) []string {
	set := map[string]bool{c.DefaultProfile: true}
	for _, a := range c.Accounts {
		if a.Name == account {
			for _, p := range a.Section.Shared().Profiles {
				set[p] = true
			}
		}
	}
	for _, r := range c.Routes {
		if r.Platform == "" || r.Platform == account {
			set[r.Profile] = true
			for _, p := range r.Profiles {
				set[p] = true
			}
		}
	}
	delete(set, "")
	return slices.Sorted(maps.Keys(set))
}

// ProfileChoices returns the profiles /agent offers in conv: the default
// (ProfileFor) first, then the first matching route's profiles list, or
// the platform's when the route has none. A single entry means there is
// nothing to choose.
func (c *Config) ProfileChoices(conv core.ConversationKey) []string {
	def := c.ProfileFor(conv)
	var list []string
	for _, r := range c.Routes {
		if r.Matches(conv) {
			list = r.Profiles
			break
		}
	}
	if len(list) == 0 {
		for _, a := range c.Accounts {
			if a.Name == conv.Platform {
				list = a.Section.Shared().Profiles
			}
		}
	}
	out := []string{def}
	for _, p := range list {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// Warnings returns legal but doubtful settings worth logging at startup: a
// secret written literally in the file, a wildcard access list, an enabled
// platform nobody may use, a metrics listener beyond loopback.
func (c *Config) Warnings() []*FieldError { return slices.Clone(c.warnings) }

// Secrets returns every secret the file set (tokens, signing secrets,
// whatever the field), so that what shows the bridge's state can make
// sure none of them is shown.
func (c *Config) Secrets() []core.Secret {
	if c.secrets == nil {
		return nil
	}
	return c.secrets()
}

// Problem returns a problem of the setting at YAML path, such as
// "profiles.claude", found after loading (a profile file that does not
// load, say), at the line of the file that sets it.
func (c *Config) Problem(path, format string, args ...any) *FieldError {
	line := c.lines[path]
	if line == 0 {
		line = 1
	}
	return &FieldError{File: c.file, Line: line, Path: path, Problem: fmt.Sprintf(format, args...)}
}

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

// Options say what a configuration file may hold beyond the bridge's own
// settings, and where its ${VAR} references come from.
type Options struct {
	// Platforms are the platform kinds whose sections the file may hold
	// (package platforms lists them). Without them every platform section
	// is an unknown field.
	Platforms []Kind
	// LookupEnv resolves ${VAR} references; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// Load reads and parses the configuration file at path.
func Load(path string, opts Options) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	return Parse(data, path, opts)
}

// Parse parses and validates a configuration file's contents. path is used
// in error messages and to resolve relative paths. Every problem found is
// returned at once, joined with errors.Join, each a *FieldError.
func Parse(data []byte, path string, opts Options) (*Config, error) {
	c, err := Inspect(data, path, opts)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Inspect is Parse for checking a file rather than using it: along with
// the problems it returns the configuration as far as it could be decoded
// (nil only when the file is not YAML), so that the profiles a broken file
// names can be checked in the same run. A configuration returned with
// errors must not be served.
func Inspect(data []byte, path string, opts Options) (*Config, error) {
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	return parse(data, path, opts)
}

// Default returns the configuration an empty file would give, before paths
// are resolved: what a bridge run without a config file (the terminal
// chat) starts from.
func Default() *Config {
	c := defaults()
	return &c
}

// defaults returns the configuration an empty file would give, before
// paths are resolved.
func defaults() Config {
	return Config{
		Store:              "agentbridge.db",
		QueueDepth:         5,
		MaxConcurrentTurns: engine.DefaultMaxTurns,
		OnSaturated:        agentproc.SaturatedQueue,
		DedupTTL:           24 * time.Hour,
		ShutdownGrace:      30 * time.Second,
		Presenter: Presenter{
			PlaceholderDelay: 1500 * time.Millisecond,
			Thinking:         ThinkingShow,
		},
		Files: Files{MaxPerTurn: outfile.DefaultMaxFiles, MaxBytesPerTurn: outfile.DefaultMaxBytes},
		Log:   Log{Level: "info", Format: FormatText},
	}
}
