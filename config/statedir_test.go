package config_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/config"
)

// TestStateDir: a relative store path resolves against AGENTBRIDGE_STATE_DIR
// when it is set (the images and the systemd unit set it), so a config
// mounted read-only in /etc keeps its store in the writable volume; an
// absolute store path and a config without the variable are unchanged.
func TestStateDir(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "etc", "config.yaml")
	state := filepath.Join(dir, "var", "lib", "agentbridge")
	abs := filepath.Join(dir, "elsewhere", "bridge.db")
	for _, tt := range []struct {
		name, store string
		env         map[string]string
		want        string
		warn        string
	}{
		{"default without the variable", "", nil, filepath.Join(dir, "etc", "agentbridge.db"), ""},
		{"default with the variable", "", map[string]string{config.StateDirEnv: state}, filepath.Join(state, "agentbridge.db"), ""},
		{"relative with the variable", "store: data/b.db\n", map[string]string{config.StateDirEnv: state}, filepath.Join(state, "data", "b.db"), ""},
		{"absolute wins over the variable", "store: " + abs + "\n", map[string]string{config.StateDirEnv: state}, abs, ""},
		{"empty variable is unset", "", map[string]string{config.StateDirEnv: ""}, filepath.Join(dir, "etc", "agentbridge.db"), ""},
		{"relative variable is ignored with a warning", "", map[string]string{config.StateDirEnv: "var/lib"}, filepath.Join(dir, "etc", "agentbridge.db"), config.StateDirEnv + " is not an absolute path"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parse([]byte(head+tt.store), cfgPath, env(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Store != tt.want {
				t.Errorf("store = %s, want %s", cfg.Store, tt.want)
			}
			var warned []string
			for _, w := range cfg.Warnings() {
				warned = append(warned, w.Error())
			}
			got := strings.Join(warned, "\n")
			if tt.warn == "" && got != "" {
				t.Errorf("unexpected warnings: %s", got)
			}
			if tt.warn != "" && !strings.Contains(got, tt.warn) {
				t.Errorf("warnings %q do not mention %q", got, tt.warn)
			}
		})
	}
}
