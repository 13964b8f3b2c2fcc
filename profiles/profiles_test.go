package profiles

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/core/agentproc"
)

// exe is the running binary (this test's, not named agentbridge).
func exe(t *testing.T) string {
	t.Helper()
	p, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestShimCLI(t *testing.T) {
	for _, tt := range []struct {
		command string
		args    []string
		want    string
	}{
		{"agentbridge", []string{"shim", "claude"}, "claude"},
		{"/usr/local/bin/agentbridge", []string{"shim", "codex", "--", "--bin", "x"}, "codex"},
		{"agentbridge", []string{"shim", "gemini", "--bin", "/opt/gemini"}, "/opt/gemini"},
		{"agentbridge", []string{"shim", "qwen", "--bin=qwen2"}, "qwen2"},
		{"agentbridge", []string{"shim", "qwen", "-bin", "q3", "--", "-bin", "no"}, "q3"},
		{"agentbridge", []string{"shim"}, ""},
		{"agentbridge", []string{"demo-agent"}, ""},
		{"python3", []string{"shim", "claude"}, ""},
		{exe(t), []string{"shim", "claude"}, "claude"},
	} {
		if got := shimCLI(&agentproc.Profile{Command: tt.command, Args: tt.args}); got != tt.want {
			t.Errorf("shimCLI(%s %v) = %q, want %q", tt.command, tt.args, got, tt.want)
		}
	}
}

func TestIsolateClient(t *testing.T) {
	for _, tt := range []struct {
		command string
		args    []string
		want    string
	}{
		{"agentbridge", []string{"isolate", "kubectl", "--image", "i", "--", "shim", "claude"}, "kubectl"},
		{"/usr/local/bin/agentbridge", []string{"isolate", "podman"}, "podman"},
		{"agentbridge", []string{"isolate"}, ""},
		{"agentbridge", []string{"shim", "claude"}, ""},
		{"docker", []string{"isolate", "docker"}, ""},
		// Open turns `command: agentbridge` into the running binary, whatever
		// its name: still this binary's isolate, as for a shim.
		{exe(t), []string{"isolate", "docker"}, "docker"},
	} {
		if got := isolateClient(&agentproc.Profile{Command: tt.command, Args: tt.args}); got != tt.want {
			t.Errorf("isolateClient(%s %v) = %q, want %q", tt.command, tt.args, got, tt.want)
		}
	}
}

// The ready variants load as valid AgentProc profiles, carry a description
// for the /agent menu and pass the CLI the flag that makes them what they
// are.
func TestShippedVariants(t *testing.T) {
	for _, tt := range []struct {
		dir, name string
		flags     []string
	}{
		{"claude-code-plan", "claude-plan", []string{"--", "--permission-mode", "plan"}},
		{"claude-code-model", "claude-sonnet", []string{"--", "--model", "sonnet"}},
		{"codex-read-only", "codex-read-only", []string{"--", "-c", `sandbox_mode="read-only"`}},
	} {
		p, err := agentproc.LoadProfile(filepath.Join(tt.dir, "profile.yaml"))
		if err != nil {
			t.Errorf("%s: %v", tt.dir, err)
			continue
		}
		if p.Name != tt.name || p.Description == "" || p.Command != "agentbridge" {
			t.Errorf("%s: name %q, description %q, command %q", tt.dir, p.Name, p.Description, p.Command)
		}
		joined := strings.Join(p.Args, "\x00")
		if !strings.Contains(joined, strings.Join(tt.flags, "\x00")) {
			t.Errorf("%s: args %q lack %q", tt.dir, p.Args, tt.flags)
		}
		if shimCLI(p) == "" {
			t.Errorf("%s: not recognised as a shim profile", tt.dir)
		}
	}
}
