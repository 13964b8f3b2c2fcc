package live

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// check runs `agentbridge check --json` on a shipped profile in this
// environment and requires that no rule fails: every ready profile passes
// the conformance checker with its real CLI. messages are the probe
// prompts (the first for ordinary turns; a tool prompt exercises the
// permission rules where the profile has them).
func (e liveEnv) check(t *testing.T, profile string, messages ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	args := []string{"check", filepath.Join(repoRoot, "profiles", profile, "profile.yaml"), "--json", "--timeout", "120s"}
	for _, m := range messages {
		args = append(args, "--message", m)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(buildDir, "agentbridge"), args...)
	cmd.Dir = e.dir
	path := append(append([]string{}, e.path...), filepath.Dir(nodePath()), "/usr/local/bin", "/usr/bin", "/bin")
	cmd.Env = append([]string{"PATH=" + strings.Join(path, ":"), "LANG=C.UTF-8"}, e.env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	runErr := cmd.Run()
	var rep struct {
		OK    bool `json:"ok"`
		Rules []struct {
			ID       string   `json:"id"`
			Status   string   `json:"status"`
			Evidence []string `json:"evidence"`
		} `json:"rules"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("agentbridge check printed no JSON report (%v, %v): %s\nstderr:\n%s", err, runErr, stdout.Bytes(), stderr.Bytes())
	}
	t.Logf("agentbridge check %s took %v", profile, time.Since(start).Round(time.Millisecond))
	for _, r := range rep.Rules {
		if r.Status != "pass" {
			t.Logf("%s %s: %s", r.Status, r.ID, strings.Join(r.Evidence, " / "))
		}
		if r.Status == "fail" {
			t.Errorf("agentbridge check %s: %s fails: %s", profile, r.ID, strings.Join(r.Evidence, " / "))
		}
	}
	if !rep.OK || runErr != nil {
		t.Errorf("agentbridge check %s: ok %v, exit %v", profile, rep.OK, runErr)
	}
}
