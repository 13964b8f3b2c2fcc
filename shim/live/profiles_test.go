package live

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentbridge/agentbridge/core/agentproc"
)

// The shipped profiles parse strictly and run the right shim.
func TestProfilesLoad(t *testing.T) {
	for _, tc := range []struct {
		dir, shim  string
		permission bool
		knobs      []string // retry and timeout variables, passed on from the bridge (issue 10)
	}{
		{"claude-code", "claude", true, []string{"CLAUDE_CODE_MAX_RETRIES", "API_TIMEOUT_MS"}},
		{"qwen-code", "qwen", true, nil},
		{"codex", "codex", true, []string{"AGENTBRIDGE_API_RETRY_SECS"}},
		{"gemini-cli", "gemini", false, []string{"AGENTBRIDGE_API_RETRY_SECS"}},
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
		for _, k := range tc.knobs {
			if p.Env[k] != "${"+k+"}" || !slices.Contains(p.EnvAllowlist, k) {
				t.Errorf("%s: env %s = %q, want ${%s} and allowlisted, so an operator can set it", tc.dir, k, p.Env[k], k)
			}
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

// The qwen profile's timeout and retries are a settings file qwen reads as
// its lowest layer (QWEN_CODE_SYSTEM_DEFAULTS_PATH).
func TestQwenDefaults(t *testing.T) {
	p, err := agentproc.LoadProfile(filepath.Join(repoRoot, "profiles", "qwen-code", "profile.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Env["QWEN_CODE_SYSTEM_DEFAULTS_PATH"] != "{{PROFILE_DIR}}/qwen-defaults.json" {
		t.Fatalf("QWEN_CODE_SYSTEM_DEFAULTS_PATH = %q", p.Env["QWEN_CODE_SYSTEM_DEFAULTS_PATH"])
	}
	b, err := os.ReadFile(filepath.Join(repoRoot, "profiles", "qwen-code", "qwen-defaults.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Model struct {
			GenerationConfig struct {
				Timeout    int `json:"timeout"`
				MaxRetries int `json:"maxRetries"`
			} `json:"generationConfig"`
		} `json:"model"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if g := d.Model.GenerationConfig; g.Timeout <= 0 || g.Timeout > 30000 || g.MaxRetries < 0 || g.MaxRetries > 2 {
		t.Errorf("qwen defaults %+v: want a timeout and retries that end a dead API's turn within about a minute", g)
	}
}
