package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/adapters/platforms"
	"github.com/agentbridge/agentbridge/config"
)

// TestReadmeFirstBotConfigs: each config of the README's five-minute paths
// (a yaml block starting "# agentbridge.yaml") is valid as printed, enables
// its platform, draws no warning, and every ${VAR} it reads is exported in
// the shell block after it.
func TestReadmeFirstBotConfigs(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(# agentbridge\\.yaml\n.*?)```\\s*```sh\n(.*?)```").FindAllStringSubmatch(string(b), -1)
	var enabled []string
	for _, m := range blocks {
		yaml, sh := m[1], m[2]
		c, err := config.Parse([]byte(yaml), filepath.Join(t.TempDir(), "agentbridge.yaml"), config.Options{
			Platforms: platforms.All(),
			LookupEnv: func(name string) (string, bool) {
				if !strings.Contains(yaml, "${"+name+"}") {
					return "", false // the bridge's own, such as AGENTBRIDGE_STATE_DIR
				}
				if !regexp.MustCompile(`(?m)^export .*\b` + name + `=`).MatchString(sh) {
					t.Errorf("the config reads ${%s}, which the commands after it do not export:\n%s", name, sh)
				}
				return "x", true
			},
		})
		if err != nil {
			t.Errorf("README config is invalid: %v\n%s", err, yaml)
			continue
		}
		for _, w := range c.Warnings() {
			t.Errorf("README config draws a warning: %v", w)
		}
		for _, a := range c.Enabled() {
			enabled = append(enabled, a.Name)
		}
		if !strings.Contains(sh, "serve --config agentbridge.yaml") {
			t.Errorf("the commands after a README config do not serve it:\n%s", sh)
		}
	}
	if got := strings.Join(enabled, " "); got != "slack discord telegram" {
		t.Errorf("the README's first-bot configs enable %q, want one each for slack, discord and telegram", got)
	}
}
