package agentproc

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestParseProfile reads every field (P-PROF-1..8, D-PERM-1).
func TestParseProfile(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       Profile
	}{
		{"defaults", "command: python3\n", Profile{
			Name: "agent", Command: "python3", Timeout: DefaultTimeout, KillGrace: DefaultKillGrace, PermissionTimeout: DefaultPermissionTimeout,
		}},
		{"every field", `
name: coder
command: "/path with spaces/my agent"
args: ["{{PROFILE_DIR}}/bridge.py", --port, 8080]
cwd: work
env:
  MY_API_KEY: "${MY_API_KEY}"
  DEBUG: 1
env_allowlist: [MY_API_KEY]
timeout_secs: 600
kill_grace_secs: 2.5
streaming: true
permission: true
permission_timeout_secs: 60
description: Claude Code, read-only plan mode
approvers_only: true
pick_users: [U1, "1001"]
max_concurrent: 2
on_saturated: reject
`, Profile{
			Name: "coder", Command: "/path with spaces/my agent", Args: []string{"{{PROFILE_DIR}}/bridge.py", "--port", "8080"},
			Cwd: "work", Env: map[string]string{"MY_API_KEY": "${MY_API_KEY}", "DEBUG": "1"}, EnvAllowlist: []string{"MY_API_KEY"},
			Timeout: 600 * time.Second, KillGrace: 2500 * time.Millisecond, Streaming: true, Permission: true, PermissionTimeout: time.Minute,
			Description: "Claude Code, read-only plan mode", ApproversOnly: true, PickUsers: []string{"U1", "1001"},
			MaxConcurrent: 2, OnSaturated: SaturatedReject,
		}},
		{"permission timeout clamped to the turn", "command: x\ntimeout_secs: 10\n", Profile{
			Name: "agent", Command: "x", Timeout: 10 * time.Second, KillGrace: DefaultKillGrace, PermissionTimeout: 10 * time.Second,
		}},
		{"empty allowlist restricts everything", "command: x\nargs: []\nenv_allowlist: []\nkill_grace_secs: 0\n", Profile{
			Name: "agent", Command: "x", Args: []string{}, EnvAllowlist: []string{}, Timeout: DefaultTimeout, KillGrace: time.Nanosecond,
			PermissionTimeout: DefaultPermissionTimeout,
		}},
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "agent.yaml")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseProfile([]byte(tt.yaml), path)
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Path = path
			if diff := cmp.Diff(&tt.want, got); diff != "" {
				t.Errorf("profile (-want +got):\n%s", diff)
			}
			if got.Dir() != dir {
				t.Errorf("Dir() = %q, want %q", got.Dir(), dir)
			}
		})
	}
}

// TestParseProfileErrors: strict YAML, every problem at once, each naming
// the file, the line and the field.
func TestParseProfileErrors(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"all at once", `args: python3 agent.py
cwd: 12
timeout_secs: -5
kill_grace_secs: "soon"
streaming: yes please
permision: true
env:
  OK: fine
  BAD: [1]
`, []string{
			"p.yaml:1: args: expected a list, got the string \"python3 agent.py\"",
			"p.yaml:2: cwd: expected a string, got the integer \"12\"",
			"p.yaml:3: timeout_secs: must not be negative",
			"p.yaml:4: kill_grace_secs: expected a number of seconds, got the string \"soon\"",
			"p.yaml:5: streaming: expected true or false, got the string \"yes please\"",
			"p.yaml:6: permision: unknown field; did you mean permission?",
			"p.yaml:9: env.BAD: expected a string, got a list",
			"p.yaml:1: command: is required",
		}},
		{"duplicate and zero timeout", "command: a\ncommand: b\ntimeout_secs: 0\n", []string{
			"p.yaml:2: command: set twice (first at line 1)",
			"p.yaml:3: timeout_secs: must be greater than zero",
		}},
		{"bad bridge keys", "command: a\ndescription: \"two\\nlines\"\napprovers_only: maybe\nmax_concurrent: 0\non_saturated: drop\n", []string{
			"p.yaml:2: description: must be one line of at most 100 characters",
			"p.yaml:3: approvers_only: expected true or false, got the string \"maybe\"",
			"p.yaml:4: max_concurrent: must be from 1 to 10000, got 0",
			"p.yaml:5: on_saturated: must be queue or reject, got \"drop\"",
		}},
		// The config's wording, suggestion and all: one YAML vocabulary.
		{"unknown and twice", "command: a\ncolour: blue\nenv:\n  A: x\n  A: y\n", []string{
			"p.yaml:2: colour: unknown field",
			"p.yaml:5: env.A: set twice (first at line 4)",
		}},
		{"empty command", "command: \"\"\n", []string{"p.yaml:1: command: must not be empty"}},
		{"empty file", "", []string{"p.yaml:1: empty profile: command is required"}},
		{"not a mapping", "- a\n", []string{"p.yaml:1: profile must be a mapping of keys to values"}},
		{"syntax error", "command: [x\n", []string{"p.yaml:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseProfile([]byte(tt.yaml), "p.yaml")
			if err == nil {
				t.Fatal("no error")
			}
			abs, _ := filepath.Abs("p.yaml")
			got := strings.Split(strings.ReplaceAll(err.Error(), abs, "p.yaml"), "\n")
			if tt.name == "syntax error" {
				if len(got) != 1 || !strings.HasPrefix(got[0], "p.yaml:") || !strings.Contains(got[0], ":1: ") && !strings.Contains(got[0], ":2: ") {
					t.Errorf("syntax error %q, want file:line", err)
				}
				return
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadProfile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(path, []byte("command: ./agent\ncwd: .\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := LoadProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	if p.Path != path || p.Dir() != dir || p.Name != "p" {
		t.Errorf("path %q dir %q name %q", p.Path, p.Dir(), p.Name)
	}
	if _, err := LoadProfile(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if (&Profile{}).Dir() != "" {
		t.Error("Dir of a profile built in code is not empty")
	}
}

// FuzzParseProfile: no input crashes the parser, and an accepted profile
// always has a command and positive limits.
func FuzzParseProfile(f *testing.F) {
	f.Add([]byte("command: python3\nargs: [a]\ntimeout_secs: 5\n"))
	f.Add([]byte("command: x\nenv: {A: '${B}'}\nenv_allowlist: [B]\n"))
	f.Add([]byte("command: &a x\nargs: *a\n"))
	f.Add([]byte("{command: [1, 2]}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseProfile(data, "f.yaml")
		if err != nil {
			return
		}
		if p.Command == "" || p.Timeout <= 0 || p.KillGrace <= 0 || p.PermissionTimeout <= 0 || p.PermissionTimeout > p.Timeout {
			t.Fatalf("accepted profile %+v", p)
		}
	})
}

// TestProfileCheck: Check finds what a turn would fail on, in the words a
// turn would use, without starting anything: a missing command (bare names
// on the agent's PATH, which the profile's env may set), a file that is not
// executable, a working directory that does not exist.
func TestProfileCheck(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "my-agent"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	environ := []string{"PATH=/usr/bin:/bin"}
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"bare name on PATH", "command: sh\n", ""},
		{"bare name missing", "command: no-such-agent-xyz\n", `agent command "no-such-agent-xyz" not found on PATH`},
		{"PATH from the profile", "command: my-agent\nenv: {PATH: \"{{PROFILE_DIR}}/bin\"}\n", ""},
		{"path placeholder", "command: \"{{PROFILE_DIR}}/bin/my-agent\"\n", ""},
		{"not executable", "command: \"{{PROFILE_DIR}}/notes.txt\"\n", "is not executable"},
		{"a directory", "command: \"{{PROFILE_DIR}}/bin\"\n", "is not executable"},
		{"missing path", "command: ./nope\n", `agent command "./nope" not found`},
		{"missing cwd", "command: sh\ncwd: work\n", "agent working directory " + `"` + filepath.Join(dir, "work") + `" cannot be used`},
	} {
		p, err := ParseProfile([]byte(tc.yaml), filepath.Join(dir, "profile.yaml"))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		err = p.Check(environ)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: Check = %v, want nil", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: Check = %v, want %q", tc.name, err, tc.want)
		}
	}
}
