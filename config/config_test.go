package config_test

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentbridge/agentbridge/adapters/discord"
	"github.com/agentbridge/agentbridge/adapters/platforms"
	"github.com/agentbridge/agentbridge/adapters/slack"
	"github.com/agentbridge/agentbridge/adapters/telegram"
	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/core"
)

// parse is config.Parse with every platform this build knows.
func parse(data []byte, path string, lookup func(string) (string, bool)) (*config.Config, error) {
	return config.Parse(data, path, config.Options{Platforms: platforms.All(), LookupEnv: lookup})
}

// load is config.Load with every platform this build knows.
func load(path string, lookup func(string) (string, bool)) (*config.Config, error) {
	return config.Load(path, config.Options{Platforms: platforms.All(), LookupEnv: lookup})
}

// slackOf, discordOf and telegramOf return a config's first account of
// each platform (always there).
func slackOf(cfg *config.Config) *slack.Config { return sectionOf(cfg, "slack").(*slack.Config) }
func discordOf(cfg *config.Config) *discord.Config {
	return sectionOf(cfg, "discord").(*discord.Config)
}
func telegramOf(cfg *config.Config) *telegram.Config {
	return sectionOf(cfg, "telegram").(*telegram.Config)
}

func sectionOf(cfg *config.Config, name string) config.Section {
	a, _ := cfg.Account(name)
	return a.Section
}

// env returns a lookupEnv over a fixed map, so tests never read the real
// environment.
func env(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// head is the smallest valid file; bad cases append to it, so their
// problems start at line 3.
const head = "profiles: {demo: builtin:demo, other: builtin:other}\ndefault_profile: demo\n"

// problems returns err's messages, one per *config.FieldError, failing the test on
// anything that is not one.
func problems(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var out []string
	for _, e := range errs {
		var fe *config.FieldError
		if !errors.As(e, &fe) {
			t.Fatalf("error %q (%T) is not a *FieldError", e, e)
		}
		out = append(out, fe.Error())
	}
	return out
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		env  map[string]string
		want []string
	}{
		{"syntax error", "profiles: [\n", nil,
			[]string{"c.yaml:1: invalid YAML: did not find expected node content"}},
		{"tab indentation", head + "log:\n\tlevel: info\n", nil,
			[]string{"c.yaml:4: invalid YAML: found character that cannot start any token"}},
		{"second document", head + "---\nstore: x\n", nil,
			[]string{"c.yaml:3: a second YAML document; a config file holds one"}},
		{"not a mapping", "- a\n- b\n", nil,
			[]string{"c.yaml:1: expected a mapping of settings, got a list"}},
		{"empty file", "", nil, []string{
			"c.yaml:1: profiles: is required: name at least one profile, e.g. demo: builtin:demo",
			"c.yaml:1: default_profile: is required: name the profile to use when no route matches",
		}},
		{"unknown key with suggestion", head + "queue_dept: 3\n", nil,
			[]string{"c.yaml:3: queue_dept: unknown field; did you mean queue_depth?"}},
		{"unknown nested key", head + "slack:\n  bot_tokn: x\n", nil,
			[]string{"c.yaml:4: slack.bot_tokn: unknown field; did you mean bot_token?"}},
		{"unknown key far from any", head + "colour: blue\n", nil,
			[]string{"c.yaml:3: colour: unknown field"}},
		{"duplicate key", head + "queue_depth: 3\nqueue_depth: 4\n", nil,
			[]string{"c.yaml:4: queue_depth: set twice (first at line 3)"}},
		{"merge key", head + "log:\n  <<: {level: info}\n", nil,
			[]string{"c.yaml:4: log: merge keys (<<) are not supported; write the fields out"}},
		{"wrong type int", head + "queue_depth: lots\n", nil,
			[]string{`c.yaml:3: queue_depth: expected an integer, got the string "lots"`}},
		{"wrong type float for int", head + "queue_depth: 2.5\n", nil,
			[]string{`c.yaml:3: queue_depth: expected an integer, got the number "2.5"`}},
		{"int out of range", head + "queue_depth: 101\n", nil,
			[]string{"c.yaml:3: queue_depth: must be between 1 and 100, got 101"}},
		{"int below minimum", head + "telegram: {max_file_bytes: 0}\n", nil,
			[]string{"c.yaml:3: telegram.max_file_bytes: must be at least 1, got 0"}},
		{"wrong type bool", head + "presenter: {usage_footer: yes}\n", nil,
			[]string{`c.yaml:3: presenter.usage_footer: expected true or false, got the string "yes"`}},
		{"wrong type mapping for string", head + "store: {path: x}\n", nil,
			[]string{"c.yaml:3: store: expected a string, got a mapping"}},
		{"wrong type string for mapping", head + "log: loud\n", nil,
			[]string{`c.yaml:3: log: expected a mapping, got the string "loud"`}},
		{"wrong type scalar for list", head + "slack: {allow_users: U1}\n", nil,
			[]string{`c.yaml:3: slack.allow_users: expected a list, got the string "U1"`}},
		{"bad list item", head + "discord:\n  allow_users:\n    - 123\n    - [U2]\n    - \"\"\n    -\n", nil, []string{
			"c.yaml:6: discord.allow_users[1]: expected a string, got a list",
			"c.yaml:7: discord.allow_users[2]: must not be empty",
			"c.yaml:8: discord.allow_users[3]: must not be empty",
		}},
		{"bad duration", head + "dedup_ttl: 1 day\n", nil,
			[]string{`c.yaml:3: dedup_ttl: invalid duration "1 day": write a number with a unit, such as "30s" or "1h30m"`}},
		{"duration without unit", head + "shutdown_grace: 30\n", nil,
			[]string{`c.yaml:3: shutdown_grace: invalid duration "30": write a number with a unit, such as "30s" or "1h30m"`}},
		{"negative duration", head + "presenter: {placeholder_delay: -1s}\n", nil,
			[]string{"c.yaml:3: presenter.placeholder_delay: must not be negative, got -1s"}},
		{"negative idle timeout", head + "idle_timeout: -5m\n", nil,
			[]string{"c.yaml:3: idle_timeout: must not be negative, got -5m"}},
		{"zero dedup ttl", head + "dedup_ttl: 0s\n", nil,
			[]string{"c.yaml:3: dedup_ttl: must be positive"}},
		{"bad enum", head + "log: {level: verbose}\n", nil,
			[]string{`c.yaml:3: log.level: must be one of debug, info, warn, error, got "verbose"`}},
		{"long value not echoed", head + "log: {level: " + strings.Repeat("x", 40) + "}\n", nil,
			[]string{"c.yaml:3: log.level: must be one of debug, info, warn, error, got (40 characters, not shown)"}},
		{"empty store", head + "store: \"\"\n", nil,
			[]string{"c.yaml:3: store: must not be empty"}},
		{"bad session scope", head + "telegram:\n  session_scope: chat\n", nil,
			[]string{`c.yaml:4: telegram.session_scope: must be one of thread, channel, user, got "chat"`}},
		{"missing default profile", "profiles: {demo: builtin:demo}\n", nil,
			[]string{"c.yaml:1: default_profile: is required: name the profile to use when no route matches"}},
		{"default profile names nothing", "profiles: {demo: builtin:demo}\ndefault_profile: claude\n", nil,
			[]string{`c.yaml:2: default_profile: names no profile: "claude" is not one of demo`}},
		{"wrong type profiles reported once", "profiles: [demo]\ndefault_profile: demo\n", nil,
			[]string{"c.yaml:1: profiles: expected a mapping of profile names to profile files, got a list"}},
		{"wrong type default profile reported once", "profiles: {demo: builtin:demo}\ndefault_profile: [demo]\n", nil,
			[]string{"c.yaml:2: default_profile: expected a string, got a list"}},
		{"empty profiles", "profiles: {}\ndefault_profile: demo\n", nil,
			[]string{"c.yaml:1: profiles: must name at least one profile, e.g. demo: builtin:demo"}},
		{"duplicate section", head + "profiles: {}\n", nil,
			[]string{"c.yaml:3: profiles: set twice (first at line 1)"}},
		{"profile name and values", "profiles:\n  demo: builtin:demo\n  -x: a.yaml\n  empty: \"\"\n  bare: \"builtin:\"\ndefault_profile: demo\n", nil, []string{
			"c.yaml:3: profiles.-x: a profile name is letters, digits, '.', '_' and '-', starting with a letter or digit",
			"c.yaml:4: profiles.empty: is empty: give a profile file path or builtin:NAME",
			"c.yaml:5: profiles.bare: builtin: must be followed by a builtin profile name",
		}},
		{"route problems", head + "routes:\n  - {platform: slak, profile: demo}\n  - {channel: C1}\n  - {profile: nope}\n  - {profile: demo, thread: T}\n  -\n", nil, []string{
			`c.yaml:4: routes[0].platform: must be one of slack, discord, telegram, console, got "slak"`,
			"c.yaml:5: routes[1].profile: is required",
			`c.yaml:6: routes[2].profile: names no profile: "nope" is not one of demo, other`,
			"c.yaml:7: routes[3].thread: unknown field",
			"c.yaml:8: routes[4]: expected a route mapping, got nothing",
		}},
		{"profile choices", head + "routes:\n  - {profile: demo, profiles: [other, nope]}\n  - {profile: demo, profiles: [other, other]}\ntelegram:\n  profiles: [ghost]\n", nil, []string{
			`c.yaml:4: routes[0].profiles: entry 2 names no profile: "nope" is not one of demo, other`,
			`c.yaml:5: routes[1].profiles: lists "other" twice`,
			`c.yaml:7: telegram.profiles: entry 1 names no profile: "ghost" is not one of demo, other`,
		}},
		{"limits", head + "telegram:\n  max_turns_per_hour: -1\n  max_cost_per_day_usd: lots\nroutes:\n  - {profile: demo, max_cost_per_day_usd: -2, max_reply_bytes: 100}\n", nil, []string{
			"c.yaml:4: telegram.max_turns_per_hour: must be between 0 and 1000000, got -1",
			`c.yaml:5: telegram.max_cost_per_day_usd: expected an amount in US dollars such as 2.50, got the string "lots"`,
			"c.yaml:7: routes[0].max_cost_per_day_usd: must be a non-negative amount, got -2",
			"c.yaml:7: routes[0].max_reply_bytes: must be between 1024 and 1073741824, got 100",
		}},
		{"var in a plain field", head + "store: ${HOME}/bridge.db\n", nil,
			[]string{"c.yaml:3: store: ${VAR} is expanded only in secret and URL fields"}},
		{"malformed reference", head + "slack: {bot_token: \"${SLACK BOT}\"}\n", nil,
			[]string{"c.yaml:3: slack.bot_token: malformed ${...} reference: a variable name is letters, digits and _, not starting with a digit"}},
		{"unterminated reference", head + "discord: {token: \"${DISCORD_BOT_TOKEN\"}\n", nil,
			[]string{"c.yaml:3: discord.token: unterminated ${ reference: write ${NAME}"}},
		{"secret of wrong type", head + "discord: {enabled: true, token: [a]}\n", nil,
			[]string{"c.yaml:3: discord.token: expected a string"}},
		{"required secret env unset", head + "slack:\n  enabled: true\n  bot_token: ${SLACK_BOT_TOKEN}\n  app_token: ${SLACK_APP_TOKEN}\n", noEnvMap(), []string{
			"c.yaml:5: slack.bot_token: environment variable SLACK_BOT_TOKEN is not set",
			"c.yaml:6: slack.app_token: environment variable SLACK_APP_TOKEN is not set",
		}},
		{"required secret env empty", head + "discord:\n  enabled: true\n  token: ${DISCORD_BOT_TOKEN}\n", map[string]string{"DISCORD_BOT_TOKEN": ""},
			[]string{"c.yaml:5: discord.token: environment variable DISCORD_BOT_TOKEN is empty"}},
		{"required secret from two vars", head + "discord:\n  enabled: true\n  token: ${A}.${B}\n", nil,
			[]string{"c.yaml:5: discord.token: environment variables A, B are not set"}},
		{"required secret missing", head + "telegram:\n  enabled: true\n", nil,
			[]string{"c.yaml:3: telegram.token: is required when telegram is enabled"}},
		{"slack events mode", head + "slack:\n  enabled: true\n  mode: events\n  bot_token: xoxb-1\n  events_listen: \"\"\n", nil, []string{
			"c.yaml:3: slack.signing_secret: is required in events mode",
			"c.yaml:7: slack.events_listen: is required in events mode",
		}},
		{"swapped slack tokens", head + "slack:\n  enabled: true\n  bot_token: ${A}\n  app_token: ${B}\n", map[string]string{"A": "xapp-1-2", "B": "xoxb-3-4"}, []string{
			"c.yaml:5: slack.bot_token: holds an app-level token (xapp-); bot_token takes the bot token (xoxb-)",
			"c.yaml:6: slack.app_token: holds a bot token (xoxb-); app_token takes the app-level token (xapp-)",
		}},
		{"telegram webhook needs", head + "telegram:\n  enabled: true\n  token: t\n  mode: webhook\n", nil, []string{
			"c.yaml:3: telegram.webhook_url: is required in webhook mode",
			"c.yaml:3: telegram.webhook_listen: is required in webhook mode",
			"c.yaml:3: telegram.webhook_secret: is required in webhook mode",
		}},
		{"telegram webhook bad values", head + "telegram:\n  enabled: true\n  token: t\n  mode: webhook\n  webhook_url: ftp://x/hook\n  webhook_listen: \"8443\"\n  webhook_secret: \"not allowed!\"\n", nil, []string{
			"c.yaml:7: telegram.webhook_url: must be an absolute http or https URL",
			`c.yaml:8: telegram.webhook_listen: must be host:port, such as "127.0.0.1:9464" or ":3000", got "8443"`,
			"c.yaml:9: telegram.webhook_secret: must be 1-256 characters of A-Z, a-z, 0-9, _ and - (Telegram's rule)",
		}},
		{"bad api url", head + "discord:\n  enabled: true\n  token: t\n  api_url: /api/v10\n", nil,
			[]string{"c.yaml:6: discord.api_url: must be an absolute http or https URL"}},
		{"partly unset api url", head + "discord:\n  enabled: true\n  token: t\n  api_url: http://${API_HOST}/api\n", nil,
			[]string{"c.yaml:6: discord.api_url: environment variable API_HOST is not set"}},
		{"bad port", head + "metrics: {listen: \"127.0.0.1:http\"}\n", nil,
			[]string{`c.yaml:3: metrics.listen: port must be a number from 0 to 65535, got "http"`}},
		{"approver wildcard", head + "slack:\n  approvers: [\"*\"]\n", nil,
			[]string{`c.yaml:4: slack.approvers: "*" is not allowed here: list the user ids who may answer anyone's permission prompts`}},
		{"empty command prefix", head + "discord: {command_prefix: \"\"}\n", nil,
			[]string{"c.yaml:3: discord.command_prefix: must be non-empty and without spaces"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parse([]byte(tt.yaml), "c.yaml", env(tt.env))
			if err == nil {
				t.Fatalf("Parse succeeded with %+v, want errors", cfg)
			}
			if cfg != nil {
				t.Errorf("Parse returned a config along with errors")
			}
			if diff := cmp.Diff(tt.want, problems(t, err)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func noEnvMap() map[string]string { return map[string]string{} }

func TestAllProblemsAtOnce(t *testing.T) {
	const file = `profiles:
  demo: builtin:demo
default_profile: demo
queue_depth: lots
log:
  levle: debug
slack:
  enabled: true
  bot_token: ${SLACK_BOT_TOKEN}
  app_token: ${SLACK_APP_TOKEN}
  mode: sockets
`
	_, err := parse([]byte(file), "bridge.yaml", env(map[string]string{"SLACK_APP_TOKEN": "xapp-1"}))
	want := []string{
		`bridge.yaml:4: queue_depth: expected an integer, got the string "lots"`,
		"bridge.yaml:6: log.levle: unknown field; did you mean level?",
		"bridge.yaml:9: slack.bot_token: environment variable SLACK_BOT_TOKEN is not set",
		`bridge.yaml:11: slack.mode: must be one of socket, events, got "sockets"`,
	}
	if diff := cmp.Diff(want, problems(t, err)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	// errors.Join keeps each problem reachable to callers.
	var fe *config.FieldError
	if !errors.As(err, &fe) || fe.Line != 4 || fe.Path != "queue_depth" || fe.File != "bridge.yaml" {
		t.Errorf("errors.As gave %+v, want the queue_depth problem first", fe)
	}
}

func TestDefaults(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bridge.yaml")
	cfg, err := parse([]byte("profiles: {demo: builtin:demo}\ndefault_profile: demo\n"), path, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	const mib20 = 20 << 20
	want := &config.Config{
		Path:           path,
		Store:          filepath.Join(dir, "agentbridge.db"),
		Profiles:       map[string]string{"demo": "builtin:demo"},
		DefaultProfile: "demo",
		QueueDepth:     5,
		DedupTTL:       24 * time.Hour,
		ShutdownGrace:  30 * time.Second,
		Presenter:      config.Presenter{PlaceholderDelay: 1500 * time.Millisecond, Thinking: "show"},
		Files:          config.Files{MaxPerTurn: 10, MaxBytesPerTurn: 50_000_000},

		MaxConcurrentTurns: 20,
		OnSaturated:        "queue",
		Log:                config.Log{Level: "info", Format: "text"},
	}
	if diff := cmp.Diff(want, cfg, cmpopts.IgnoreUnexported(config.Config{}), cmpopts.IgnoreFields(config.Config{}, "Accounts")); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	// Every platform has its first account, disabled, with its defaults.
	sections := map[string]config.Section{}
	for _, a := range cfg.Accounts {
		sections[a.Name] = a.Section
	}
	wantSections := map[string]config.Section{
		"slack": &slack.Config{
			Platform:     config.Platform{SessionScope: core.ScopeThread, CommandPrefix: "!", MaxFileBytes: mib20},
			Mode:         "socket",
			EventsListen: ":3000",
		},
		"discord": &discord.Config{
			Platform: config.Platform{SessionScope: core.ScopeThread, CommandPrefix: "!", MaxFileBytes: mib20},
		},
		"telegram": &telegram.Config{
			Platform:     config.Platform{SessionScope: core.ScopeThread, CommandPrefix: "/", MaxFileBytes: mib20},
			Mode:         "polling",
			GroupTrigger: "mention",
			Drafts:       true,
		},
	}
	if diff := cmp.Diff(wantSections, sections); diff != "" {
		t.Errorf("platform defaults (-want +got):\n%s", diff)
	}
	if w := cfg.Warnings(); len(w) != 0 {
		t.Errorf("Warnings() = %v, want none", w)
	}
	if got := cfg.Log.SlogLevel().String(); got != "INFO" {
		t.Errorf("SlogLevel() = %s, want INFO", got)
	}
}

// TestNullsKeepDefaults: an empty value (YAML null) means "not set", so
// a half-filled copy of the example keeps working.
func TestNullsKeepDefaults(t *testing.T) {
	cfg, err := parse([]byte(head+"queue_depth:\npresenter:\nslack:\n  command_prefix:\n  allow_users:\n"), "c.yaml", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.QueueDepth != 5 || slackOf(cfg).CommandPrefix != "!" || cfg.Presenter.Thinking != "show" || slackOf(cfg).AllowUsers != nil {
		t.Errorf("nulls changed defaults: queue_depth %d, prefix %q, thinking %q, allow_users %v",
			cfg.QueueDepth, slackOf(cfg).CommandPrefix, cfg.Presenter.Thinking, slackOf(cfg).AllowUsers)
	}
}

func TestValues(t *testing.T) {
	const file = `store: /var/lib/agentbridge/state.db
profiles:
  demo: builtin:demo
  claude: profiles/claude/profile.yaml
  abs: /etc/agentbridge/codex.yaml
default_profile: claude
routes:
  - {platform: slack, workspace: T0123, channel: C0456, profile: demo}
queue_depth: 0x10
dedup_ttl: 1h30m
shutdown_grace: 0
presenter: {placeholder_delay: 0s, thinking: hide, usage_footer: true, min_edit_interval: 250ms}
log: {level: debug, format: json}
metrics: {listen: "127.0.0.1:9464"}
discord:
  enabled: true
  token: ${DISCORD_BOT_TOKEN}
  allow_users: [123456789012345678, "U2"]
  allow_chats: ["*"]
  slash_commands_guilds: [42]
  message_content: true
  max_file_bytes: 1_000
telegram:
  enabled: true
  token: ${TELEGRAM_BOT_TOKEN}
  mode: webhook
  webhook_listen: 127.0.0.1:8443
  webhook_url: https://${PUBLIC_HOST}/tg
  webhook_secret: ${TELEGRAM_WEBHOOK_SECRET}
  allow_chats: [-1001234567890]
  group_trigger: all
  drafts: false
slack:
  native_streaming: true
`
	dir := t.TempDir()
	cfg, err := parse([]byte(file), filepath.Join(dir, "c.yaml"), env(map[string]string{
		"DISCORD_BOT_TOKEN":       "discord-token",
		"TELEGRAM_BOT_TOKEN":      "123:tg-token",
		"PUBLIC_HOST":             "bridge.example.com",
		"TELEGRAM_WEBHOOK_SECRET": "s3cret_-",
	}))
	if err != nil {
		t.Fatal(err)
	}
	type summary struct {
		Store, Default        string
		Profiles              map[string]string
		Routes                []config.Route
		Queue                 int
		TTL, Grace            time.Duration
		Presenter             config.Presenter
		Log                   config.Log
		Listen                string
		DiscordToken          string
		DiscordAccess         config.Access
		Guilds                []string
		MessageContent        bool
		DiscordMax            int64
		TGToken, TGSecret     string
		TGMode, TGURL, TGList string
		TGChats               []string
		Trigger               string
		Drafts                bool
		SlackNative           bool
	}
	got := summary{
		cfg.Store, cfg.DefaultProfile, cfg.Profiles, cfg.Routes, cfg.QueueDepth, cfg.DedupTTL, cfg.ShutdownGrace,
		cfg.Presenter, cfg.Log, cfg.Metrics.Listen,
		discordOf(cfg).Token.Reveal(), discordOf(cfg).Access, discordOf(cfg).SlashCommandsGuilds, discordOf(cfg).MessageContent, discordOf(cfg).MaxFileBytes,
		telegramOf(cfg).Token.Reveal(), telegramOf(cfg).WebhookSecret.Reveal(),
		telegramOf(cfg).Mode, telegramOf(cfg).WebhookURL, telegramOf(cfg).WebhookListen,
		telegramOf(cfg).AllowChats, telegramOf(cfg).GroupTrigger, telegramOf(cfg).Drafts,
		slackOf(cfg).NativeStreaming,
	}
	want := summary{
		Store:   "/var/lib/agentbridge/state.db",
		Default: "claude",
		Profiles: map[string]string{
			"demo":   "builtin:demo",
			"claude": filepath.Join(dir, "profiles/claude/profile.yaml"),
			"abs":    "/etc/agentbridge/codex.yaml",
		},
		Routes:         []config.Route{{Platform: "slack", Workspace: "T0123", Channel: "C0456", Profile: "demo"}},
		Queue:          16,
		TTL:            90 * time.Minute,
		Grace:          0,
		Presenter:      config.Presenter{PlaceholderDelay: 0, Thinking: "hide", UsageFooter: true, MinEditInterval: 250 * time.Millisecond},
		Log:            config.Log{Level: "debug", Format: "json"},
		Listen:         "127.0.0.1:9464",
		DiscordToken:   "discord-token",
		DiscordAccess:  config.Access{AllowUsers: []string{"123456789012345678", "U2"}, AllowChats: []string{"*"}},
		Guilds:         []string{"42"},
		MessageContent: true,
		DiscordMax:     1000,
		TGToken:        "123:tg-token",
		TGSecret:       "s3cret_-",
		TGMode:         "webhook",
		TGURL:          "https://bridge.example.com/tg",
		TGList:         "127.0.0.1:8443",
		TGChats:        []string{"-1001234567890"},
		Trigger:        "all",
		Drafts:         false,
		SlackNative:    true,
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	if cfg.Log.SlogLevel().String() != "DEBUG" {
		t.Errorf("SlogLevel() = %v, want DEBUG", cfg.Log.SlogLevel())
	}
}

func TestEnvExpansion(t *testing.T) {
	vars := map[string]string{
		"SLACK_BOT_TOKEN": "xoxb-1-2-abc",
		"SLACK_APP_TOKEN": "xapp-1-A-xyz",
		"EMPTY":           "",
	}
	tests := []struct {
		name  string
		slack string
		check func(*slack.Config) string // describes a mismatch, "" when fine
	}{
		{"whole value", "bot_token: ${SLACK_BOT_TOKEN}\n  app_token: ${SLACK_APP_TOKEN}", func(s *slack.Config) string {
			if s.BotToken.Reveal() != "xoxb-1-2-abc" || s.AppToken.Reveal() != "xapp-1-A-xyz" {
				return "tokens not expanded: " + s.BotToken.Reveal() + " " + s.AppToken.Reveal()
			}
			return ""
		}},
		{"dollar without braces stays literal", "bot_token: xoxb-pa$$w$RD\n  app_token: ${SLACK_APP_TOKEN}", func(s *slack.Config) string {
			if s.BotToken.Reveal() != "xoxb-pa$$w$RD" {
				return "got " + s.BotToken.Reveal()
			}
			return ""
		}},
		{"embedded reference", "bot_token: ${SLACK_BOT_TOKEN}\n  app_token: pre-${SLACK_APP_TOKEN}-post", func(s *slack.Config) string {
			if s.AppToken.Reveal() != "pre-xapp-1-A-xyz-post" {
				return "got " + s.AppToken.Reveal()
			}
			return ""
		}},
		{"unset optional url is not configured", "bot_token: ${SLACK_BOT_TOKEN}\n  app_token: ${SLACK_APP_TOKEN}\n  api_url: ${SLACK_API_URL}", func(s *slack.Config) string {
			if s.APIURL != "" {
				return "api_url = " + s.APIURL
			}
			return ""
		}},
		{"unneeded secret may be unset", "bot_token: ${SLACK_BOT_TOKEN}\n  app_token: ${SLACK_APP_TOKEN}\n  signing_secret: ${SLACK_SIGNING_SECRET}", func(s *slack.Config) string {
			if !s.SigningSecret.IsZero() {
				return "signing secret set"
			}
			return ""
		}},
		{"url expanded", "bot_token: ${SLACK_BOT_TOKEN}\n  app_token: ${SLACK_APP_TOKEN}\n  api_url: http://127.0.0.1:${EMPTY}8080/api/", func(s *slack.Config) string {
			if s.APIURL != "http://127.0.0.1:8080/api/" {
				return "api_url = " + s.APIURL
			}
			return ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parse([]byte(head+"slack:\n  enabled: true\n  "+tt.slack+"\n"), "c.yaml", env(vars))
			if err != nil {
				t.Fatal(err)
			}
			if msg := tt.check(slackOf(cfg)); msg != "" {
				t.Error(msg)
			}
		})
	}

	// A disabled platform's secrets are not needed, so unset variables
	// there are no error.
	t.Run("disabled platform", func(t *testing.T) {
		cfg, err := parse([]byte(head+"discord:\n  enabled: false\n  token: ${NOPE}\n  api_url: http://${NOPE}/x\n"), "c.yaml", env(nil))
		if err != nil {
			t.Fatal(err)
		}
		if !discordOf(cfg).Token.IsZero() {
			t.Errorf("token = %q, want empty", discordOf(cfg).Token.Reveal())
		}
	})
	t.Run("lookup nil uses the process environment", func(t *testing.T) {
		t.Setenv("AGENTBRIDGE_CONFIG_TEST_TOKEN", "from-env")
		cfg, err := parse([]byte(head+"discord:\n  enabled: true\n  token: ${AGENTBRIDGE_CONFIG_TEST_TOKEN}\n"), "c.yaml", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := discordOf(cfg).Token.Reveal(); got != "from-env" {
			t.Errorf("token = %q, want from-env", got)
		}
	})
}

func TestProfileFor(t *testing.T) {
	const file = `profiles: {demo: builtin:demo, a: builtin:a, b: builtin:b, c: builtin:c, d: builtin:d}
default_profile: demo
routes:
  - {platform: slack, workspace: T1, channel: C1, profile: a}
  - {platform: slack, workspace: T1, profile: b}
  - {channel: C1, profile: c}
  - {platform: telegram, profile: d}
  - {platform: telegram, channel: "42", profile: a}
`
	cfg, err := parse([]byte(file), "c.yaml", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		conv core.ConversationKey
		want string
	}{
		{core.ConversationKey{Platform: "slack", Workspace: "T1", Channel: "C1", Thread: "1.2"}, "a"},
		{core.ConversationKey{Platform: "slack", Workspace: "T1", Channel: "C2"}, "b"},
		{core.ConversationKey{Platform: "slack", Workspace: "T2", Channel: "C1"}, "c"},
		{core.ConversationKey{Platform: "discord", Workspace: "G", Channel: "C1"}, "c"},
		{core.ConversationKey{Platform: "telegram", Channel: "42"}, "d"}, // first match wins
		{core.ConversationKey{Platform: "discord", Workspace: "G", Channel: "C9"}, "demo"},
		{core.ConversationKey{}, "demo"},
	}
	for _, tt := range tests {
		if got := cfg.ProfileFor(tt.conv); got != tt.want {
			t.Errorf("ProfileFor(%v) = %q, want %q", tt.conv, got, tt.want)
		}
	}
}

// ProfileChoices: the default first, then the matching route's list, or
// the platform's when the route has none.
func TestProfileChoices(t *testing.T) {
	const file = `profiles: {demo: builtin:demo, a: builtin:a, b: builtin:b, c: builtin:c}
default_profile: demo
telegram: {profiles: [b, demo]}
routes:
  - {platform: slack, channel: C1, profile: a, profiles: [b, c]}
  - {platform: telegram, channel: "42", profile: c}
`
	cfg, err := parse([]byte(file), "c.yaml", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		conv core.ConversationKey
		want string
	}{
		{core.ConversationKey{Platform: "slack", Channel: "C1"}, "a b c"},
		{core.ConversationKey{Platform: "slack", Channel: "C2"}, "demo"},
		{core.ConversationKey{Platform: "telegram", Channel: "42"}, "c b demo"},
		{core.ConversationKey{Platform: "telegram", Channel: "7"}, "demo b"},
	} {
		if got := strings.Join(cfg.ProfileChoices(tt.conv), " "); got != tt.want {
			t.Errorf("ProfileChoices(%v) = %q, want %q", tt.conv, got, tt.want)
		}
	}
	// Discord's slash choices: everything the account's conversations may offer.
	if got := strings.Join(cfg.OfferedProfiles("telegram"), " "); got != "b c demo" {
		t.Errorf("OfferedProfiles(telegram) = %q", got)
	}
	if got := strings.Join(cfg.OfferedProfiles("slack"), " "); got != "a b c demo" {
		t.Errorf("OfferedProfiles(slack) = %q", got)
	}
}

// LimitsFor: the platform's limits, overridden field by field by the first
// matching route's.
func TestLimitsFor(t *testing.T) {
	const file = `profiles: {demo: builtin:demo}
default_profile: demo
telegram: {max_turns_per_hour: 20, max_cost_per_day_usd: 5, max_reply_bytes: 4096}
routes:
  - {platform: telegram, channel: "42", profile: demo, max_cost_per_day_usd: 0.5, max_reply_bytes: 1048576}
`
	cfg, err := parse([]byte(file), "c.yaml", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		conv core.ConversationKey
		want config.Limits
	}{
		{core.ConversationKey{Platform: "telegram", Channel: "42"}, config.Limits{TurnsPerHour: 20, CostPerDayUSD: 0.5, ReplyBytes: 1 << 20}},
		{core.ConversationKey{Platform: "telegram", Channel: "7"}, config.Limits{TurnsPerHour: 20, CostPerDayUSD: 5, ReplyBytes: 4096}},
		{core.ConversationKey{Platform: "slack", Channel: "42"}, config.Limits{}},
	} {
		if got := cfg.LimitsFor(tt.conv); got != tt.want {
			t.Errorf("LimitsFor(%v) = %+v, want %+v", tt.conv, got, tt.want)
		}
	}
}

// BusyFor: the platform's busy mode, overridden by the first matching
// route's where it sets one; queue where neither does. A value that is not
// a mode, and on_saturated's, are reported at their line.
func TestBusyFor(t *testing.T) {
	const file = `profiles: {demo: builtin:demo}
default_profile: demo
on_saturated: reject
telegram: {busy: collect}
routes:
  - {platform: telegram, channel: "42", profile: demo, busy: interrupt}
  - {platform: telegram, channel: "7", profile: demo}
`
	cfg, err := parse([]byte(file), "c.yaml", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OnSaturated != "reject" {
		t.Errorf("OnSaturated = %q, want reject", cfg.OnSaturated)
	}
	for _, tt := range []struct {
		conv core.ConversationKey
		want string
	}{
		{core.ConversationKey{Platform: "telegram", Channel: "42"}, "interrupt"},
		{core.ConversationKey{Platform: "telegram", Channel: "7"}, "collect"},
		{core.ConversationKey{Platform: "telegram", Channel: "9"}, "collect"},
		{core.ConversationKey{Platform: "slack", Channel: "42"}, "queue"},
	} {
		if got := cfg.BusyFor(tt.conv); got != tt.want {
			t.Errorf("BusyFor(%v) = %q, want %q", tt.conv, got, tt.want)
		}
	}
	_, err = parse([]byte(head+"on_saturated: drop\nslack: {busy: steer}\nroutes: [{profile: demo, busy: later}]\n"), "c.yaml", env(nil))
	for _, want := range []string{
		`c.yaml:3: on_saturated: must be one of queue, reject, got "drop"`,
		`c.yaml:4: slack.busy: must be one of queue, interrupt, collect, got "steer"`,
		`c.yaml:5: routes[0].busy: must be one of queue, interrupt, collect, got "later"`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not contain %q", err, want)
		}
	}
}

// Real-looking tokens; none may ever show in an error or in formatted output.
const (
	slackBot   = "xoxb-2712345678-7712345678901-AbCdEfGhIjKlMnOpQrStUvWx"
	slackApp   = "xapp-1-A07ABCDEFGH-7712345678901-0123456789abcdef0123456789abcdef"
	discordTok = "MTIzNDU2Nzg5MDEyMzQ1Njc4.GAbCdE.abcdefghijklmnopqrstuvwxyz0123456789AB"
	tgToken    = "7123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw4"
)

func TestSecretsNotInErrors(t *testing.T) {
	file := head + `queue_depth: 0
slack:
  enabled: true
  bot_token: ` + slackBot + `
  app_token: ` + slackApp + `
  mode: sockett
  bot_tokn: ` + slackBot + `
  api_url: https://user:` + discordTok + `@[bad
discord:
  enabled: true
  token: ` + discordTok + `
  session_scope: ` + discordTok + `
  command_prefix: [` + discordTok + `]
telegram:
  enabled: true
  token: {value: ` + tgToken + `}
  mode: webhook
  webhook_secret: ` + tgToken + `
`
	_, err := parse([]byte(file), "c.yaml", env(nil))
	if err == nil {
		t.Fatal("Parse succeeded, want errors")
	}
	msg := err.Error()
	for _, secret := range []string{slackBot, slackApp, discordTok, tgToken, "AbCdEf", "AAHdqT"} {
		if strings.Contains(msg, secret) {
			t.Errorf("error text contains secret %q:\n%s", secret, msg)
		}
	}
	// The errors must still be there to read.
	if n := len(problems(t, err)); n < 6 {
		t.Errorf("got %d problems, want at least 6:\n%s", n, msg)
	}
}

func TestSecretsNotFormatted(t *testing.T) {
	file := head + `slack:
  enabled: true
  bot_token: ${SLACK_BOT_TOKEN}
  app_token: ${SLACK_APP_TOKEN}
  signing_secret: plain-signing-secret-value
discord:
  enabled: true
  token: ${DISCORD_BOT_TOKEN}
telegram:
  enabled: true
  token: ${TELEGRAM_BOT_TOKEN}
  mode: webhook
  webhook_url: https://example.com/hook
  webhook_listen: 127.0.0.1:8443
  webhook_secret: ${TELEGRAM_WEBHOOK_SECRET}
`
	cfg, err := parse([]byte(file), "c.yaml", env(map[string]string{
		"SLACK_BOT_TOKEN":         slackBot,
		"SLACK_APP_TOKEN":         slackApp,
		"DISCORD_BOT_TOKEN":       discordTok,
		"TELEGRAM_BOT_TOKEN":      tgToken,
		"TELEGRAM_WEBHOOK_SECRET": "webhook_secret_value",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if slackOf(cfg).BotToken.Reveal() != slackBot {
		t.Fatalf("bot token not loaded")
	}
	secrets := []string{slackBot, slackApp, discordTok, tgToken, "webhook_secret_value", "plain-signing-secret-value"}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		out := fmt.Sprintf(verb, cfg)
		if verb != "%s" && !strings.Contains(out, "REDACTED") {
			t.Errorf("%s output has no REDACTED marker:\n%s", verb, out)
		}
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("%s output contains secret %q", verb, s)
			}
		}
	}
	for _, w := range cfg.Warnings() {
		for _, s := range secrets {
			if strings.Contains(w.Error(), s) {
				t.Errorf("warning %q contains a secret", w)
			}
		}
	}
}

func TestWarnings(t *testing.T) {
	file := head + `metrics: {listen: ":9464"}
slack:
  enabled: true
  bot_token: xoxb-literal
  app_token: ${SLACK_APP_TOKEN}
  allow_users: ["*"]
discord:
  enabled: true
  token: ${DISCORD_BOT_TOKEN}
telegram:
  token: literal-but-disabled
  allow_chats: ["*"]
`
	cfg, err := parse([]byte(file), "c.yaml", env(map[string]string{"SLACK_APP_TOKEN": "xapp-1", "DISCORD_BOT_TOKEN": "d"}))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range cfg.Warnings() {
		got = append(got, w.Error())
	}
	want := []string{
		"c.yaml:3: metrics.listen: not a loopback address: /metrics and /healthz are reachable from other hosts",
		"c.yaml:6: slack.bot_token: secret written in the file; prefer a ${VAR} reference",
		`c.yaml:8: slack.allow_users: "*" lets anyone use the bot`,
		"c.yaml:9: discord: enabled, but allow_users and allow_chats are empty, so nobody may use the bot",
		"c.yaml:13: telegram.token: secret written in the file; prefer a ${VAR} reference",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bridge.yaml")
	if err := os.WriteFile(path, []byte("store: data/state.db\nprofiles: {p: ../shared/p.yaml}\ndefault_profile: p\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := load(path, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{path, filepath.Join(dir, "data/state.db"), filepath.Join(filepath.Dir(dir), "shared/p.yaml")}
	if diff := cmp.Diff(want, []string{cfg.Path, cfg.Store, cfg.Profiles["p"]}); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}

	t.Run("relative config path", func(t *testing.T) {
		t.Chdir(dir)
		cfg, err := load("bridge.yaml", env(nil))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Store != filepath.Join(dir, "data/state.db") || cfg.Path != path {
			t.Errorf("Path %q, Store %q; want both under %s", cfg.Path, cfg.Store, dir)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		_, err := load(filepath.Join(dir, "nope.yaml"), env(nil))
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Load of a missing file = %v, want fs.ErrNotExist", err)
		}
	})
	t.Run("errors name the path as given", func(t *testing.T) {
		bad := filepath.Join(dir, "bad.yaml")
		if err := os.WriteFile(bad, []byte(head+"queue_depth: 0\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := load(bad, env(nil))
		if want := bad + ":3: queue_depth: must be between 1 and 100, got 0"; err == nil || err.Error() != want {
			t.Errorf("Load error = %v, want %s", err, want)
		}
	})
}

func TestAliases(t *testing.T) {
	// Anchors and aliases are plain YAML and work; merge keys do not.
	file := head + "slack:\n  allow_users: &team [U1, U2]\n  approvers: *team\n"
	cfg, err := parse([]byte(file), "c.yaml", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"U1", "U2"}, slackOf(cfg).Approvers); diff != "" {
		t.Errorf("approvers via alias (-want +got):\n%s", diff)
	}
}

func TestFieldErrorWithoutFile(t *testing.T) {
	_, err := parse([]byte(head+"queue_depth: 0\n"), "", env(nil))
	if want := "line 3: queue_depth: must be between 1 and 100, got 0"; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %s", err, want)
	}
}

func TestSlogLevel(t *testing.T) {
	for level, want := range map[string]slog.Level{
		"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError,
	} {
		cfg, err := parse([]byte(head+"log: {level: "+level+"}\n"), "c.yaml", env(nil))
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.Log.SlogLevel(); got != want {
			t.Errorf("level %s: SlogLevel() = %v, want %v", level, got, want)
		}
	}
}

// TestIdleTimeout: off unless set; a duration when set.
func TestIdleTimeout(t *testing.T) {
	for yaml, want := range map[string]time.Duration{head: 0, head + "idle_timeout: 15m\n": 15 * time.Minute} {
		cfg, err := parse([]byte(yaml), "c.yaml", env(nil))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.IdleTimeout != want {
			t.Errorf("idle_timeout from %q = %v; want %v", yaml, cfg.IdleTimeout, want)
		}
	}
}

// TestAccounts: a KIND/NAME section is another account of that platform,
// with every key of the platform's own section, checked the same way, and
// its own name for routes.
func TestAccounts(t *testing.T) {
	file := head + `telegram:
  enabled: true
  token: ${TG_ONE}
  allow_users: ["1"]
telegram/work:
  enabled: true
  token: ${TG_TWO}
  allow_users: ["2"]
  command_prefix: "!"
slack/other:
  bot_token: ${NOPE}
routes:
  - {platform: telegram/work, profile: other}
`
	cfg, err := parse([]byte(file), "c.yaml", env(map[string]string{"TG_ONE": "1:a", "TG_TWO": "2:b"}))
	if err != nil {
		t.Fatal(err)
	}
	var names, enabled []string
	for _, a := range cfg.Accounts {
		names = append(names, a.Name+"="+a.Kind.Name)
	}
	for _, a := range cfg.Enabled() {
		enabled = append(enabled, a.Name)
	}
	if diff := cmp.Diff([]string{"slack=slack", "discord=discord", "telegram=telegram", "telegram/work=telegram", "slack/other=slack"}, names); diff != "" {
		t.Errorf("accounts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"telegram", "telegram/work"}, enabled); diff != "" {
		t.Errorf("enabled (-want +got):\n%s", diff)
	}
	work := sectionOf(cfg, "telegram/work").(*telegram.Config)
	if work.Token.Reveal() != "2:b" || work.CommandPrefix != "!" || work.Mode != "polling" || !slices.Equal(work.AllowUsers, []string{"2"}) {
		t.Errorf("telegram/work = %+v (token %q)", work, work.Token.Reveal())
	}
	if telegramOf(cfg).Token.Reveal() != "1:a" || telegramOf(cfg).CommandPrefix != "/" {
		t.Errorf("telegram = %+v", telegramOf(cfg))
	}
	if got := cfg.ProfileFor(core.ConversationKey{Platform: "telegram/work", Channel: "2"}); got != "other" {
		t.Errorf("route for telegram/work = %q, want other", got)
	}
	if got := cfg.ProfileFor(core.ConversationKey{Platform: "telegram", Channel: "2"}); got != "demo" {
		t.Errorf("route for telegram = %q, want demo (routes name one account)", got)
	}

	_, err = parse([]byte(head+`telegram/work:
  enabled: true
telegram/work:
  enabled: false
telegram/:
  enabled: true
discord/a b:
  token: x
matrix/x:
  enabled: true
slack/ops:
  enabled: true
  bot_token: xoxb-1
  mode: events
routes:
  - {platform: telegram/home, profile: demo}
`), "c.yaml", env(nil))
	want := []string{
		"c.yaml:3: telegram/work.token: is required when telegram/work is enabled",
		"c.yaml:5: telegram/work: set twice (first at line 3)",
		"c.yaml:7: telegram/: another telegram account is a section telegram/NAME, NAME being letters, digits, '.', '_' and '-', starting with a letter or digit",
		"c.yaml:9: discord/a b: another discord account is a section discord/NAME, NAME being letters, digits, '.', '_' and '-', starting with a letter or digit",
		"c.yaml:11: matrix/x: unknown field",
		"c.yaml:13: slack/ops.signing_secret: is required in events mode",
		`c.yaml:18: routes[0].platform: must be one of slack, discord, telegram, console, telegram/work, slack/ops, got "telegram/home"`,
	}
	if diff := cmp.Diff(want, problems(t, err)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

// TestAccountsCannotShare: two enabled accounts of a platform with one
// token, or two listeners on one address, are errors naming both places
// and never the token.
func TestAccountsCannotShare(t *testing.T) {
	file := head + `metrics: {listen: "127.0.0.1:3000"}
telegram:
  enabled: true
  token: ${TG}
  mode: webhook
  webhook_url: https://example.com/a
  webhook_listen: "127.0.0.1:8443"
  webhook_secret: s1
telegram/work:
  enabled: true
  token: ${TG}
  mode: webhook
  webhook_url: https://example.com/b
  webhook_listen: "127.0.0.1:8443"
  webhook_secret: s2
slack:
  enabled: true
  bot_token: ${SB}
  signing_secret: ${SS}
  mode: events
  events_listen: "127.0.0.1:3000"
slack/other:
  enabled: true
  bot_token: ${SB2}
  app_token: ${SA}
discord/a:
  token: ${TG}
`
	_, err := parse([]byte(file), "c.yaml", env(map[string]string{"TG": "123:SHARED-SECRET", "SB": "xoxb-1", "SB2": "xoxb-2", "SS": "s", "SA": "xapp-1"}))
	want := []string{
		"c.yaml:13: telegram/work.token: the same as telegram.token (line 6): each account needs its own",
		"c.yaml:16: telegram/work.webhook_listen: the same address as telegram.webhook_listen (line 9): two listeners cannot share one",
		"c.yaml:23: slack.events_listen: the same address as metrics.listen (line 3): two listeners cannot share one",
	}
	if diff := cmp.Diff(want, problems(t, err)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if strings.Contains(err.Error(), "SHARED-SECRET") {
		t.Errorf("a token in the errors: %v", err)
	}
}

// TestFiles: the per-turn limits on the files an agent sends back
// (spec/protocol.md X-FILE-4) are read, and a zero is refused.
func TestFiles(t *testing.T) {
	cfg, err := parse([]byte(head+"files: {max_per_turn: 3, max_bytes_per_turn: 1_000_000}\n"), "c.yaml", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if want := (config.Files{MaxPerTurn: 3, MaxBytesPerTurn: 1_000_000}); cfg.Files != want {
		t.Errorf("files = %+v, want %+v", cfg.Files, want)
	}
	_, err = parse([]byte(head+"files: {max_per_turn: 0}\n"), "c.yaml", env(nil))
	if got := problems(t, err); len(got) != 1 || !strings.Contains(got[0], "files.max_per_turn: must be") {
		t.Errorf("max_per_turn 0: %q", got)
	}
}
