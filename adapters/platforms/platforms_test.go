package platforms_test

import (
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/adapters/platforms"
	"github.com/agentbridge/agentbridge/config"
)

// TestKinds: every kind has a distinct name that can be a section key (no
// '/', which starts an account name), and every kind with a section can
// build its adapter from it.
func TestKinds(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range platforms.All() {
		if k.Name == "" || strings.ContainsAny(k.Name, "/. ") || seen[k.Name] {
			t.Errorf("kind name %q is empty, taken or not a plain key", k.Name)
		}
		seen[k.Name] = true
		if (k.NewSection == nil) != (k.NewAdapter == nil) {
			t.Errorf("%s: a section without a factory, or a factory without a section", k.Name)
		}
		if k.NewSection != nil && k.NewSection().Shared().Enabled {
			t.Errorf("%s is enabled by default", k.Name)
		}
	}
	// An enabled section with nothing set is refused by the platform's own
	// checks, and a KIND/NAME section by the same ones.
	for _, k := range platforms.All() {
		if k.NewSection == nil {
			continue
		}
		for _, section := range []string{k.Name, k.Name + "/second"} {
			_, err := config.Parse([]byte("profiles: {demo: builtin:demo}\ndefault_profile: demo\n"+section+": {enabled: true}\n"), "c.yaml", config.Options{Platforms: platforms.All()})
			if err == nil || !strings.Contains(err.Error(), section+".") || !strings.Contains(err.Error(), "is required when "+section+" is enabled") {
				t.Errorf("%s enabled with nothing set: %v", section, err)
			}
		}
	}
}
