package config_test

import (
	"slices"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/core"
)

// tg is an enabled Telegram section; cases add their transcribe lines.
const tg = head + "telegram:\n  enabled: true\n  token: ${TG}\n  allow_users: [\"1\"]\n"

func TestTranscribeErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		env        map[string]string
		want       []string
	}{
		{"no engine", tg + "  transcribe: {timeout: 30s}\n", nil,
			[]string{"c.yaml:7: telegram.transcribe: names no engine: set api_url (an OpenAI-compatible endpoint) or command (a local program), or enabled: false"}},
		{"both engines", tg + "  transcribe: {api_url: \"http://127.0.0.1:8080/v1\", model: m, command: [stt, \"{{FILE}}\"]}\n", nil,
			[]string{"c.yaml:7: telegram.transcribe.command: set api_url or command, not both"}},
		{"no model", tg + "  transcribe: {api_url: \"https://api.openai.com/v1\"}\n", nil,
			[]string{"c.yaml:7: telegram.transcribe.model: is required with api_url: the endpoint's model, e.g. whisper-1"}},
		{"bad url", tg + "  transcribe: {api_url: \"ftp://x\", model: m}\n", nil,
			[]string{"c.yaml:7: telegram.transcribe.api_url: must be an absolute http or https URL"}},
		{"key unset", tg + "  transcribe: {api_url: \"https://api.openai.com/v1\", model: whisper-1, api_key: \"${OPENAI_API_KEY}\"}\n", nil,
			[]string{"c.yaml:7: telegram.transcribe.api_key: environment variable OPENAI_API_KEY is not set"}},
		{"no {{FILE}}", tg + "  transcribe: {command: [whisper-cli, -f, audio.ogg]}\n", nil,
			[]string{`c.yaml:7: telegram.transcribe.command: must pass the audio file: put {{FILE}} (the note as sent) or {{WAV}} (made 16 kHz WAV by ffmpeg) in an argument, e.g. [whisper-cli, -m, model.bin, -f, "{{WAV}}"]`}},
		{"{{FILE}} as the program", tg + "  transcribe: {command: [\"{{FILE}}\"]}\n", nil,
			[]string{"c.yaml:7: telegram.transcribe.command: the first entry is the program; {{FILE}} or {{WAV}} goes in its arguments"}},
		{"model with a command", tg + "  transcribe: {command: [stt, \"{{FILE}}\"], model: x}\n", nil,
			[]string{"c.yaml:7: telegram.transcribe.model: belongs with api_url; a command gets only the audio file"}},
		{"bad limits", tg + "  transcribe: {command: [stt, \"{{FILE}}\"], timeout: 0s, max_bytes: 0}\n", nil,
			[]string{"c.yaml:7: telegram.transcribe.timeout: must be positive", "c.yaml:7: telegram.transcribe.max_bytes: must be at least 1, got 0"}},
		{"unknown key", tg + "  transcribe: {comand: [stt]}\n", nil,
			[]string{"c.yaml:7: telegram.transcribe.comand: unknown field; did you mean command?"}},
		{"route", head + "routes:\n  - {platform: telegram, profile: demo, transcribe: {api_url: \"https://x/v1\"}}\n", nil,
			[]string{"c.yaml:4: routes[0].transcribe.model: is required with api_url: the endpoint's model, e.g. whisper-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vars := map[string]string{"TG": tgToken}
			for k, v := range tc.env {
				vars[k] = v
			}
			_, err := parse([]byte(tc.yaml), "c.yaml", env(vars))
			if got := problems(t, err); !slices.Equal(got, tc.want) {
				t.Errorf("problems:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestTranscribeFor(t *testing.T) {
	file := tg + `  transcribe:
    api_url: https://api.openai.com/v1
    model: whisper-1
    api_key: ${OPENAI_API_KEY}
    language: en
    timeout: 45s
    max_duration: 5m
    max_bytes: 1000000
routes:
  - {platform: telegram, channel: "42", profile: demo, transcribe: {command: [stt, -f, "{{FILE}}"]}}
  - {platform: telegram, channel: "43", profile: demo, transcribe: {enabled: false}}
  - {platform: telegram, channel: "44", profile: other}
`
	cfg, err := parse([]byte(file), "c.yaml", env(map[string]string{"TG": tgToken, "OPENAI_API_KEY": "sk-live"}))
	if err != nil {
		t.Fatal(err)
	}
	platform := cfg.TranscribeFor(core.ConversationKey{Platform: "telegram", Channel: "44"})
	if !platform.On() || platform.APIURL != "https://api.openai.com/v1" || platform.APIKey.Reveal() != "sk-live" || platform.Language != "en" ||
		platform.Timeout != 45*time.Second || platform.MaxDuration != 5*time.Minute || platform.MaxBytes != 1000000 {
		t.Errorf("platform's = %+v", platform)
	}
	if r := cfg.TranscribeFor(core.ConversationKey{Platform: "telegram", Channel: "42"}); !r.On() || !slices.Equal(r.Command, []string{"stt", "-f", "{{FILE}}"}) || r.APIURL != "" {
		t.Errorf("the route's = %+v; want its command alone", r)
	}
	if r := cfg.TranscribeFor(core.ConversationKey{Platform: "telegram", Channel: "43"}); r.On() {
		t.Errorf("the route that turns it off = %+v", r)
	}
	if r := cfg.TranscribeFor(core.ConversationKey{Platform: "slack", Channel: "42"}); r.On() {
		t.Errorf("slack, which sets none = %+v; want off", r)
	}
	var _ config.Transcribe = platform
}
