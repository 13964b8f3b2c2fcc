package live

import (
	"path/filepath"
	"testing"

	"github.com/agentbridge/agentbridge/core/agentproc"
)

// The shipped profiles parse strictly and run the right shim.
func TestProfilesLoad(t *testing.T) {
	for _, tc := range []struct {
		dir, shim  string
		permission bool
	}{
		{"claude-code", "claude", true},
		{"qwen-code", "qwen", true},
		{"codex", "codex", true},
		{"gemini-cli", "gemini", false},
	} {
		p, err := agentproc.LoadProfile(filepath.Join(repoRoot, "profiles", tc.dir, "profile.yaml"))
		if err != nil {
			t.Errorf("%s: %v", tc.dir, err)
			continue
		}
		if p.Command != "agentbridge" || len(p.Args) < 2 || p.Args[0] != "shim" || p.Args[1] != tc.shim {
			t.Errorf("%s: command %q args %q, want agentbridge shim %s", tc.dir, p.Command, p.Args, tc.shim)
		}
		if !p.Streaming || p.Permission != tc.permission {
			t.Errorf("%s: streaming %v permission %v, want true %v", tc.dir, p.Streaming, p.Permission, tc.permission)
		}
		for k := range p.Env {
			if v := p.Env[k]; len(v) > 2 && v[:2] == "${" {
				found := false
				for _, a := range p.EnvAllowlist {
					found = found || "${"+a+"}" == v
				}
				if !found {
					t.Errorf("%s: env %s = %s is not in env_allowlist", tc.dir, k, v)
				}
			}
		}
	}
}
