package config_test

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/core"
)

func TestSchedulesAndTrigger(t *testing.T) {
	cfg, err := parse([]byte(head+`slack: {enabled: true, bot_token: '${B}', app_token: '${A}', allow_users: [U1]}
schedules:
  - name: morning
    platform: slack
    workspace: T1
    channel: C1
    cron: "0 9 * * 1-5"
    time_zone: Europe/Berlin
    message: Summarize last night's CI failures.
    profile: other
    session: ci
    catch_up: 30m
  - {name: weekly, platform: telegram, channel: -1001, thread: 7, cron: "@weekly", message: deps}
trigger:
  listen: 127.0.0.1:8787
  token: ${TRIGGER_TOKEN}
`), "c.yaml", env(map[string]string{"B": "xoxb-1", "A": "xapp-1", "TRIGGER_TOKEN": "0123456789abcdef0123"}))
	if err != nil {
		t.Fatal(err)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	want := []config.Schedule{
		{Name: "morning", Platform: "slack", Workspace: "T1", Channel: "C1", Cron: "0 9 * * 1-5", TimeZone: "Europe/Berlin", Location: berlin,
			Message: "Summarize last night's CI failures.", Profile: "other", Session: "ci", CatchUp: 30 * time.Minute},
		{Name: "weekly", Platform: "telegram", Channel: "-1001", Thread: "7", Cron: "@weekly", Location: time.UTC, Message: "deps", CatchUp: time.Hour},
	}
	if diff := cmp.Diff(want, cfg.Schedules, cmp.Comparer(func(a, b *time.Location) bool { return a.String() == b.String() })); diff != "" {
		t.Errorf("schedules (-want +got):\n%s", diff)
	}
	if c := cfg.Schedules[1].Conv(); c != (core.ConversationKey{Platform: "telegram", Channel: "-1001", Thread: "7"}) {
		t.Errorf("Conv = %+v", c)
	}
	if cfg.Trigger.Listen != "127.0.0.1:8787" || cfg.Trigger.Token.Reveal() != "0123456789abcdef0123" {
		t.Errorf("trigger = %+v", cfg.Trigger)
	}
	var warned bool
	for _, w := range cfg.Warnings() {
		warned = warned || w.Path == "schedules[1].platform"
	}
	if !warned {
		t.Errorf("warnings %v; want one that telegram is not enabled", cfg.Warnings())
	}
}

func TestScheduleAndTriggerProblems(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string
	}{
		{"bad expression", "schedules:\n  - {name: a, platform: slack, channel: C1, message: m,\n     cron: \"61 * * * *\"}\n",
			[]string{"c.yaml:5: schedules[0].cron: invalid cron expression: end of range (61) above maximum (59): 61"}},
		{"unknown zone", "schedules:\n  - name: a\n    platform: slack\n    channel: C1\n    cron: \"0 9 * * *\"\n    time_zone: Mars/Olympus\n    message: m\n",
			[]string{`c.yaml:8: schedules[0].time_zone: unknown time zone "Mars/Olympus": give an IANA name such as Europe/Berlin or America/New_York`}},
		{"unknown platform", "schedules:\n  - {name: a, platform: irc, channel: C1, cron: \"@daily\", message: m}\n",
			[]string{`c.yaml:4: schedules[0].platform: must be one of slack, discord, telegram, got "irc"`}},
		{"unknown account", "schedules:\n  - {name: a, platform: slack/ops, channel: C1, cron: \"@daily\", message: m}\n",
			[]string{`c.yaml:4: schedules[0].platform: must be one of slack, discord, telegram, got "slack/ops"`}},
		{"unknown profile", "schedules:\n  - {name: a, platform: slack, channel: C1, cron: \"@daily\", message: m, profile: nope}\n",
			[]string{`c.yaml:4: schedules[0].profile: names no profile: "nope" is not one of demo, other`}},
		{"unknown field", "schedules:\n  - {name: a, platform: slack, channel: C1, cron: \"@daily\", message: m, chanel: C2}\n",
			[]string{`c.yaml:4: schedules[0].chanel: unknown field; did you mean channel?`}},
		{"missing fields", "schedules:\n  - {name: a}\n", []string{
			`c.yaml:4: schedules[0].platform: is required: the account section the conversation is on, e.g. slack`,
			`c.yaml:4: schedules[0].channel: is required: the Slack or Discord channel id or the Telegram chat id`,
			`c.yaml:4: schedules[0].cron: is required: a cron expression such as "0 9 * * 1-5"`,
			`c.yaml:4: schedules[0].message: is required: the message the agent is sent`,
		}},
		{"duplicate names", "schedules:\n  - {name: a, platform: slack, channel: C1, cron: \"@daily\", message: m}\n  - {name: a, platform: slack, channel: C1, cron: \"@daily\", message: m}\n",
			[]string{`c.yaml:5: schedules[1].name: the same name as schedules[0].name (line 4): each schedule needs its own`}},
		{"bad session and catch_up", "schedules:\n  - {name: a, platform: slack, channel: C1, cron: \"@daily\", message: m, session: \"no way\", catch_up: soon}\n", []string{
			`c.yaml:4: schedules[0].catch_up: invalid duration "soon": write a number with a unit, such as "30s" or "1h30m"`,
			`c.yaml:4: schedules[0].session: a session name is 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit`,
		}},
		{"not a list", "schedules: {name: a}\n", []string{"c.yaml:3: schedules: expected a list of schedules, got a mapping"}},
		{"trigger without token", "trigger: {listen: 127.0.0.1:8787}\n",
			[]string{"c.yaml:3: trigger.token: is required when trigger.listen is set: the bearer token callers must send"}},
		{"trigger token unset", "trigger: {listen: 127.0.0.1:8787, token: '${NOPE}'}\n",
			[]string{"c.yaml:3: trigger.token: environment variable NOPE is not set"}},
		{"trigger without listen", "trigger: {token: '${T}'}\n",
			[]string{"c.yaml:3: trigger.listen: is required when trigger.token is set: the host:port to serve POST /v1/turns on"}},
		{"trigger bad listen", "trigger: {listen: nowhere, token: '${T}'}\n",
			[]string{`c.yaml:3: trigger.listen: must be host:port, such as "127.0.0.1:9464" or ":3000", got "nowhere"`}},
		{"trigger on the metrics address", "metrics: {listen: 127.0.0.1:9464}\ntrigger: {listen: 127.0.0.1:9464, token: '${T}'}\n",
			[]string{"c.yaml:4: trigger.listen: the same address as metrics.listen (line 3): two listeners cannot share one"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse([]byte(head+tc.yaml), "c.yaml", env(map[string]string{"T": "0123456789abcdef0123"}))
			got := problems(t, err)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTriggerWarnings(t *testing.T) {
	cfg, err := parse([]byte(head+"trigger: {listen: 0.0.0.0:8787, token: short}\n"), "c.yaml", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, w := range cfg.Warnings() {
		paths = append(paths, w.Path)
	}
	for _, want := range []string{"trigger.listen", "trigger.token"} {
		if !slices.Contains(paths, want) {
			t.Errorf("warnings %v; want one about %s", cfg.Warnings(), want)
		}
	}
}
