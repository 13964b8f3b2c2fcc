package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/internal/preflight"
)

// TestValidateReportsConfigAndProfilesAtOnce: one run names every problem
// of the config and of each profile it names, each broken profile at the
// config line that names it, and warns about a shim whose CLI is not on
// PATH and about a config that enables no platform.
func TestValidateReportsConfigAndProfilesAtOnce(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// PATH holds an agentbridge but no claude.
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	write("bin/agentbridge", "#!/bin/sh\n", 0o755)
	t.Setenv("PATH", bin)
	write("broken.yaml", "command: x\ncolour: blue\ntimeout_secs: soon\n", 0o600)
	write("claude.yaml", "command: agentbridge\nargs: [shim, claude, --, --model, m]\n", 0o600)
	write("codex.yaml", "command: agentbridge\nargs: [shim, codex, --bin, agentbridge]\n", 0o600)
	cfg := write("config.yaml", `profiles:
  missing: nope.yaml
  broken: broken.yaml
  claude: claude.yaml
  codex: codex.yaml
default_profile: claude
queue_depth: lots
bogus: 1
`, 0o600)

	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"validate", cfg}, nil, &stdout, &stderr)
	if code := exitStatus(err, &stderr); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	out := stderr.String()
	for _, want := range []string{
		cfg + " is invalid:",
		cfg + `:7: queue_depth: expected an integer, got the string "lots"`,
		cfg + ":8: bogus: unknown field",
		cfg + ":2: profiles.missing: load profile: open " + filepath.Join(dir, "nope.yaml") + ": no such file or directory",
		cfg + ":3: profiles.broken:",
		filepath.Join(dir, "broken.yaml") + ":2: colour: unknown field",
		filepath.Join(dir, "broken.yaml") + ":3: timeout_secs:",
		`warning: profile claude: its shim runs claude: agent command "claude" not found on PATH; its turns will fail until that is fixed`,
		"warning: " + cfg + ":1: no platform is enabled, so serve will refuse to start: set enabled: true under slack, discord or telegram",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	if strings.Contains(out, "profile codex") {
		t.Errorf("a warning about codex, whose --bin is on PATH")
	}
	if t.Failed() {
		t.Logf("stderr:\n%s", out)
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout = %q for an invalid config", stdout.String())
	}

	// --json says the same for CI.
	stdout.Reset()
	stderr.Reset()
	err = run(t.Context(), []string{"validate", "--json", cfg}, nil, &stdout, &stderr)
	if code := exitStatus(err, &stderr); code != 1 {
		t.Errorf("--json: exit %d, want 1", code)
	}
	var r preflight.Report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("--json output is not one JSON object: %v\n%s", err, stdout.String())
	}
	if r.Valid || len(r.Errors) != 4 || len(r.Warnings) != 2 || r.Config != cfg {
		t.Errorf("--json report = %+v", r)
	}
	if w := r.Warnings[0]; w.File != cfg || w.Line != 4 || w.Path != "profiles.claude" || !strings.Contains(w.Message, "profile claude: its shim runs claude") {
		t.Errorf("first warning = %+v, want the claude profile at line 4", w)
	}
	if e := r.Errors[0]; e.File != cfg || e.Line != 2 || e.Path != "profiles.missing" || !strings.Contains(e.Message, "nope.yaml") {
		t.Errorf("first error = %+v, want the missing profile at line 2", e)
	}
	if stderr.Len() != 0 {
		t.Errorf("--json wrote to stderr: %q", stderr.String())
	}
}

func TestValidateJSONOfAValidConfig(t *testing.T) {
	cfg := writeConfig(t, "profiles: {demo: builtin:demo}\ndefault_profile: demo\ntelegram: {enabled: true, token: \"${T}\", allow_users: [\"1\"]}\n")
	t.Setenv("T", "1:x")
	var stdout, stderr bytes.Buffer
	if err := run(t.Context(), []string{"validate", "--json", cfg}, nil, &stdout, &stderr); err != nil {
		t.Fatalf("validate --json: %v\n%s", err, stderr.String())
	}
	var r preflight.Report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if !r.Valid || len(r.Errors) != 0 || len(r.Warnings) != 0 || strings.Join(r.Platforms, ",") != "telegram" || strings.Join(r.Profiles, ",") != "demo" {
		t.Errorf("report = %+v", r)
	}
}

// A transcribe command that cannot run here is a warning at its line:
// voice notes would reach the agent untranscribed.
func TestValidateWarnsAboutATranscribeCommandThatCannotRun(t *testing.T) {
	cfg := writeConfig(t, "profiles: {demo: builtin:demo}\ndefault_profile: demo\ntelegram:\n  enabled: true\n  token: \"${T}\"\n  allow_users: [\"1\"]\n"+
		"  transcribe: {command: [no-such-stt-program, \"{{FILE}}\"]}\n")
	t.Setenv("T", "1:x")
	var stdout, stderr bytes.Buffer
	if err := run(t.Context(), []string{"validate", "--json", cfg}, nil, &stdout, &stderr); err != nil {
		t.Fatalf("validate --json: %v\n%s", err, stderr.String())
	}
	var r preflight.Report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if !r.Valid || len(r.Warnings) != 1 || r.Warnings[0].Path != "telegram.transcribe.command" || r.Warnings[0].Line != 7 ||
		!strings.Contains(r.Warnings[0].Problem, "no-such-stt-program cannot run") || !strings.Contains(r.Warnings[0].Problem, "untranscribed") {
		t.Errorf("report = %+v", r)
	}
}

func TestValidateUnreadableAndUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"validate", filepath.Join(t.TempDir(), "none.yaml")}, nil, &stdout, &stderr)
	if code := exitStatus(err, &stderr); code != 1 || !strings.Contains(stderr.String(), "cannot read the config file") {
		t.Errorf("missing file: exit %d, stderr %q", code, stderr.String())
	}
	stderr.Reset()
	err = run(t.Context(), []string{"validate"}, nil, &stdout, &stderr)
	if code := exitStatus(err, &stderr); code != 2 {
		t.Errorf("no argument: exit %d, want 2", code)
	}
	stderr.Reset()
	err = run(t.Context(), []string{"validate", "-h"}, nil, &stdout, &stderr)
	if code := exitStatus(err, &stderr); code != 0 || strings.Count(stderr.String(), "usage: agentbridge validate") != 1 {
		t.Errorf("-h: exit %d, stderr %q; want the usage once and 0", code, stderr.String())
	}
}
