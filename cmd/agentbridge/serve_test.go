package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestServeRefusesConfigWithoutPlatforms(t *testing.T) {
	cfg := writeConfig(t, "profiles: {demo: builtin:demo}\ndefault_profile: demo\n")
	var stderr bytes.Buffer
	err := run(t.Context(), []string{"serve", "--config", cfg}, nil, &bytes.Buffer{}, &stderr)
	if code := exitStatus(err, &stderr); code != 2 || !strings.Contains(stderr.String(), "no platform is enabled") {
		t.Fatalf("exit %d, stderr %q; want 2 and a clear message", code, stderr.String())
	}
}

func TestServeAndValidateReportEveryConfigProblem(t *testing.T) {
	cfg := writeConfig(t, "profiles: {demo: builtin:demo}\ndefault_profile: nope\nqueue_depth: lots\nbogus: 1\n")
	for _, args := range [][]string{{"serve", "--config", cfg}, {"validate", cfg}} {
		var stderr bytes.Buffer
		err := run(t.Context(), args, nil, &bytes.Buffer{}, &stderr)
		if code := exitStatus(err, &stderr); code == 0 {
			t.Fatalf("%s: exit 0 for a bad config", args[0])
		}
		for _, want := range []string{"config.yaml:2", "default_profile", "config.yaml:3", "queue_depth", "config.yaml:4", "bogus"} {
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("%s: stderr lacks %q:\n%s", args[0], want, stderr.String())
			}
		}
	}
}

func TestValidateExampleConfig(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"validate", "../../config.example.yaml"}, nil, &stdout, &stderr)
	if err != nil || !strings.Contains(stdout.String(), "is valid") {
		t.Fatalf("validate config.example.yaml: %v\n%s%s", err, stdout.String(), stderr.String())
	}
}

// TestValidateWarnsAboutAgentsThatCannotStart: a profile whose command is
// not on PATH (or whose cwd is missing) is valid YAML, but validate says
// its turns will fail, naming the profile; the config is still valid.
func TestValidateWarnsAboutAgentsThatCannotStart(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "missing.yaml")
	if err := os.WriteFile(prof, []byte("command: no-such-agent-xyz\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, "profiles: {demo: builtin:demo, missing: "+prof+"}\ndefault_profile: demo\n")
	var stdout, stderr bytes.Buffer
	if err := run(t.Context(), []string{"validate", cfg}, nil, &stdout, &stderr); err != nil {
		t.Fatalf("validate: %v\n%s", err, stderr.String())
	}
	want := `warning: profile missing: agent command "no-such-agent-xyz" not found on PATH; its turns will fail until that is fixed`
	if !strings.Contains(stderr.String(), want) || strings.Contains(stderr.String(), "profile demo:") {
		t.Errorf("stderr = %q; want only the missing profile's warning", stderr.String())
	}
}
