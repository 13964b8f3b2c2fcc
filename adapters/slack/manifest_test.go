package slack_test

import (
	"os"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/agentbridge/agentbridge/adapters/slack"
	"github.com/agentbridge/agentbridge/core"
)

// The app manifest in the README registers the /agent slash command with
// every bridge command in its usage hint, so an operator who pastes it
// gets the commands the engine runs.
func TestREADMEManifestListsTheCommands(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "```yaml\ndisplay_information:")
	if !ok {
		t.Fatal("README has no app manifest")
	}
	body, _, _ := strings.Cut(rest, "```")
	var manifest struct {
		Features struct {
			SlashCommands []struct {
				Command   string `yaml:"command"`
				UsageHint string `yaml:"usage_hint"`
			} `yaml:"slash_commands"`
		} `yaml:"features"`
		OAuth struct {
			Scopes struct {
				Bot []string `yaml:"bot"`
			} `yaml:"scopes"`
		} `yaml:"oauth_config"`
	}
	if err := yaml.Unmarshal([]byte("display_information:"+body), &manifest); err != nil {
		t.Fatalf("the README's manifest is not YAML: %v", err)
	}
	if len(manifest.Features.SlashCommands) != 1 || manifest.Features.SlashCommands[0].Command != "/agent" {
		t.Fatalf("manifest slash commands = %+v, want one /agent", manifest.Features.SlashCommands)
	}
	hint := manifest.Features.SlashCommands[0].UsageHint
	if hint != slack.UsageHint() {
		t.Errorf("manifest usage_hint = %q, want %q (from core.Commands)", hint, slack.UsageHint())
	}
	for _, c := range core.Commands {
		if !strings.Contains(hint, c.Name) {
			t.Errorf("usage_hint lacks %s", c.Name)
		}
	}
	hasCommands := false
	for _, s := range manifest.OAuth.Scopes.Bot {
		hasCommands = hasCommands || s == "commands"
	}
	if !hasCommands {
		t.Error("manifest lacks the commands scope the slash command needs")
	}
}
