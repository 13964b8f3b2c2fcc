package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// checkCLI runs `agentbridge check ARGS...` as main would.
func checkCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	err := run(ctx, append([]string{"check"}, args...), strings.NewReader(""), &stdout, &stderr)
	return exitStatus(err, &stderr), stdout.String(), stderr.String()
}

// checkReport is the part of the --json report these tests read.
type checkReport struct {
	OK    bool `json:"ok"`
	Rules []struct {
		ID, Status string
		Evidence   []string
	} `json:"rules"`
}

func parseCheck(t *testing.T, out string) map[string]string {
	t.Helper()
	var rep checkReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("check --json printed %q: %v", out, err)
	}
	status := map[string]string{}
	for _, r := range rep.Rules {
		status[r.ID] = r.Status
		if r.Status == "fail" || r.Status == "warn" {
			t.Logf("%s %s: %s", r.Status, r.ID, strings.Join(r.Evidence, " / "))
		}
	}
	return status
}

// The built-in demo agent passes check with no warning, and with a prompt
// that makes it ask permission the permission rules are exercised and pass.
func TestCheckDemo(t *testing.T) {
	t.Setenv("AGENTBRIDGE_DEMO_DELAY", "5ms")
	code, out, stderr := checkCLI(t, "builtin:demo", "--message", "hello", "--message", "write a file", "--json")
	status := parseCheck(t, out)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	for id, s := range status {
		if s == "fail" || s == "warn" {
			t.Errorf("%s: %s", id, s)
		}
	}
	for _, id := range []string{"F-PERM-1", "P-PERM-3", "F-PERM-2", "P-SID-3", "P-TURN-2", "D-ATT-1", "F-EMPTY-1", "P-TIME-2"} {
		if status[id] != "pass" {
			t.Errorf("%s: %s, want pass", id, status[id])
		}
	}
}

// The shipped profiles/demo/profile.yaml, which runs `agentbridge
// demo-agent` (this binary), passes too.
func TestCheckDemoProfileFile(t *testing.T) {
	// No agentbridge on PATH: the profile runs this very binary.
	t.Setenv("PATH", t.TempDir())
	t.Setenv("AGENTBRIDGE_DEMO_DELAY", "5ms")
	_, file, _, _ := runtime.Caller(0)
	yaml, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "profiles", "demo", "profile.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// A copy with no delay; the demo keeps its memory under HOME.
	t.Setenv("HOME", t.TempDir())
	prof := filepath.Join(t.TempDir(), "profile.yaml")
	yaml = []byte(strings.Replace(string(yaml), "AGENTBRIDGE_DEMO_DELAY: \"40ms\"", "AGENTBRIDGE_DEMO_DELAY: \"5ms\"", 1))
	if err := os.WriteFile(prof, yaml, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := checkCLI(t, prof, "--json", "--message", "write a file")
	status := parseCheck(t, out)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	if status["P-PERM-3"] != "pass" || status["P-SID-3"] != "pass" {
		t.Errorf("P-PERM-3 %s, P-SID-3 %s; want both pass", status["P-PERM-3"], status["P-SID-3"])
	}
}

// A broken agent fails the rule it breaks and check exits 1; the text
// report names the rule; usage mistakes exit 2.
func TestCheckExitStatus(t *testing.T) {
	// Asks permission although the profile has it off, then waits on stdin
	// for the answer: one flaw, one failed rule.
	prof := writeProfile(t, "perm", "")
	code, out, _ := checkCLI(t, prof)
	if code != 1 || !strings.Contains(out, "FAIL           P-PERM-1") || !strings.Contains(out, "MUST broken: P-PERM-1\n") {
		t.Errorf("exit %d, report:\n%s", code, out)
	}
	for _, args := range [][]string{{}, {"--json"}, {prof, "--bogus"}, {prof, "extra"}, {"builtin:nope"}, {filepath.Join(t.TempDir(), "missing.yaml")}, {prof, "--message", ""}} {
		if code, _, stderr := checkCLI(t, args...); code != 2 {
			t.Errorf("check %q: exit %d, want 2 (stderr %s)", args, code, stderr)
		}
	}
	if code, _, _ := checkCLI(t, "-h"); code != 0 {
		t.Errorf("check -h: exit %d", code)
	}
}
