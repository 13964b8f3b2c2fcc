package config_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/core"
)

const exampleFile = "../config.example.yaml"

// dummyEnv sets every variable the example references, as an operator
// following it would; AGENTBRIDGE_STATE_DIR, which moves the store, stays unset.
func dummyEnv(name string) (string, bool) {
	if name == config.StateDirEnv {
		return "", false
	}
	return "dummy_" + strings.ToLower(name), true
}

// TestExampleConfig keeps config.example.yaml loadable: it is the
// documentation operators copy.
func TestExampleConfig(t *testing.T) {
	cfg, err := load(exampleFile, dummyEnv)
	if err != nil {
		t.Fatalf("%s does not load:\n%v", exampleFile, err)
	}
	dir, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Store != filepath.Join(dir, "agentbridge.db") {
		t.Errorf("Store = %q, want it next to the example", cfg.Store)
	}
	if got := cfg.ProfileFor(cfgKey("slack")); got != cfg.DefaultProfile || got != "demo" {
		t.Errorf("ProfileFor = %q, want the default demo", got)
	}
	// The example spells out every default, so it must equal an empty file's.
	def, err := parse([]byte(head), "", dummyEnv)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.QueueDepth != def.QueueDepth || cfg.MaxConcurrentTurns != def.MaxConcurrentTurns ||
		cfg.MaxConcurrentTurnsPerUser != def.MaxConcurrentTurnsPerUser || cfg.OnSaturated != def.OnSaturated || cfg.Presenter != def.Presenter || cfg.Log != def.Log ||
		slackOf(cfg).Mode != slackOf(def).Mode || telegramOf(cfg).MaxFileBytes != telegramOf(def).MaxFileBytes ||
		discordOf(cfg).SessionScope != discordOf(def).SessionScope || telegramOf(cfg).Drafts != telegramOf(def).Drafts ||
		slackOf(cfg).NativeStreaming != slackOf(def).NativeStreaming || slackOf(cfg).Busy != "queue" {
		t.Errorf("the example's values differ from the defaults:\n%+v", cfg)
	}
	if w := cfg.Warnings(); len(w) != 0 {
		t.Errorf("the example draws warnings: %v", w)
	}
}

// TestExampleEnabled enables every platform of the example, as an operator
// would, and checks it still loads once the variables are set and that each
// unset token is named.
func TestExampleEnabled(t *testing.T) {
	data, err := os.ReadFile(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	enabled := bytes.ReplaceAll(data, []byte("enabled: false"), []byte("enabled: true"))
	if n := bytes.Count(enabled, []byte("enabled: true")); n != 3 {
		t.Fatalf("found %d platform sections to enable, want 3", n)
	}
	cfg, err := parse(enabled, exampleFile, dummyEnv)
	if err != nil {
		t.Fatalf("the example with every platform enabled does not load:\n%v", err)
	}
	if len(cfg.Enabled()) != 3 {
		t.Errorf("platforms not enabled: %+v", cfg)
	}
	if got := discordOf(cfg).Token.Reveal(); got != "dummy_discord_bot_token" {
		t.Errorf("discord token = %q, want the dummy", got)
	}

	_, err = parse(enabled, exampleFile, func(string) (string, bool) { return "", false })
	var got []string
	for _, p := range problems(t, err) {
		_, after, _ := strings.Cut(p, ": ") // drop file:line, which moves as the example is edited
		got = append(got, after)
	}
	want := []string{
		"slack.bot_token: environment variable SLACK_BOT_TOKEN is not set",
		"slack.app_token: environment variable SLACK_APP_TOKEN is not set",
		"discord.token: environment variable DISCORD_BOT_TOKEN is not set",
		"telegram.token: environment variable TELEGRAM_BOT_TOKEN is not set",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("with no environment, got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func FuzzParse(f *testing.F) {
	if data, err := os.ReadFile(exampleFile); err == nil {
		f.Add(data)
	}
	for _, seed := range []string{
		"",
		head,
		head + "queue_depth: lots\nslack: {enabled: true, mode: events}\n",
		head + "routes:\n  - {platform: slack, profile: demo}\n  - *a\n",
		"a: &a [*a]\n",
		"x: &x {y: *x}\nprofiles: *x\n",
		head + "slack:\n  enabled: true\n  bot_token: ${A}${B\n",
		head + "telegram: {enabled: true, mode: webhook, webhook_url: 'http://${H}', token: '${T}'}\n",
		"? [a]\n: b\n",
		"---\n---\n",
		"!!binary x: 1\n",
		"<<: {store: x}\n",
		head + "telegram/work: {enabled: true, token: t}\ntelegram/: {}\nslack/a/b: {enabled: true}\nroutes: [{platform: telegram/work, profile: demo}]\n",
	} {
		f.Add([]byte(seed))
	}
	lookup := func(name string) (string, bool) {
		if strings.HasPrefix(name, "U") {
			return "", false
		}
		return "v", true
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := parse(data, "f.yaml", lookup)
		if (cfg == nil) == (err == nil) {
			t.Fatalf("Parse returned config %v and error %v; want exactly one", cfg != nil, err)
		}
		if err == nil {
			// A valid config is internally consistent.
			if _, ok := cfg.Profiles[cfg.DefaultProfile]; !ok {
				t.Fatalf("default profile %q is not among %v", cfg.DefaultProfile, cfg.Profiles)
			}
			for _, r := range cfg.Routes {
				if _, ok := cfg.Profiles[r.Profile]; !ok {
					t.Fatalf("route profile %q is not among %v", r.Profile, cfg.Profiles)
				}
			}
			if cfg.QueueDepth < 1 || cfg.QueueDepth > 100 || cfg.DedupTTL <= 0 || !filepath.IsAbs(cfg.Store) {
				t.Fatalf("invalid values accepted: %+v", cfg)
			}
			return
		}
		for _, p := range problems(t, err) {
			if !strings.HasPrefix(p, "f.yaml:") {
				t.Fatalf("problem %q does not start with the file name", p)
			}
		}
	})
}

func cfgKey(platform string) core.ConversationKey {
	return core.ConversationKey{Platform: platform, Workspace: "T1", Channel: "C1"}
}

func BenchmarkParseExample(b *testing.B) {
	data, err := os.ReadFile(exampleFile)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := parse(data, exampleFile, dummyEnv); err != nil {
			b.Fatal(err)
		}
	}
}

// TestExampleSchedulesAndTrigger loads the example with its commented
// schedules and trigger switched on, as an operator would: the entries it
// documents are valid.
func TestExampleSchedulesAndTrigger(t *testing.T) {
	data, err := os.ReadFile(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	in := ""
	for i, l := range lines {
		switch {
		case l == "schedules: []":
			lines[i], in = "schedules:", "schedules"
		case strings.HasPrefix(l, "trigger:"):
			in = "trigger"
		case in != "" && strings.HasPrefix(l, "#  "):
			lines[i] = strings.TrimPrefix(l, "#")
		case in == "trigger" && strings.HasPrefix(l, "  listen:"):
			lines[i] = "  listen: 127.0.0.1:8787"
		case !strings.HasPrefix(l, " "):
			in = ""
		}
	}
	text := strings.ReplaceAll(strings.Join(lines, "\n"), "enabled: false", "enabled: true")
	cfg, err := parse([]byte(text), exampleFile, dummyEnv)
	if err != nil {
		t.Fatalf("the example's schedules and trigger do not load:\n%v\n%s", err, text)
	}
	if len(cfg.Schedules) != 2 || cfg.Schedules[0].Name != "ci-morning" || cfg.Schedules[0].Location.String() != "Europe/Berlin" ||
		cfg.Schedules[1].Cron != "@weekly" || cfg.Schedules[1].CatchUp != time.Hour {
		t.Errorf("schedules = %+v", cfg.Schedules)
	}
	if cfg.Trigger.Listen != "127.0.0.1:8787" || cfg.Trigger.Token.Reveal() != "dummy_agentbridge_trigger_token" {
		t.Errorf("trigger = %+v", cfg.Trigger)
	}
}
