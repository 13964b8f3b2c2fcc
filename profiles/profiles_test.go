package profiles

import (
	"testing"

	"github.com/agentbridge/agentbridge/core/agentproc"
)

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
	} {
		if got := isolateClient(&agentproc.Profile{Command: tt.command, Args: tt.args}); got != tt.want {
			t.Errorf("isolateClient(%s %v) = %q, want %q", tt.command, tt.args, got, tt.want)
		}
	}
}
