package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/engine"
	"github.com/agentbridge/agentbridge/core/platformtest"
	"github.com/agentbridge/agentbridge/store"
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

func TestReloadAppliesValidConfigAndKeepsOldOnError(t *testing.T) {
	t.Setenv("AGENTBRIDGE_DEMO_DELAY", "1ms")
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	base := "store: bridge.db\nprofiles: {demo: builtin:demo}\ndefault_profile: demo\n"
	write(base + "telegram: {allow_users: [alice]}\n")
	cfg, err := config.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	profiles, err := loadProfiles(cfg)
	if err != nil {
		t.Fatal(err)
	}
	eng, plat := startEngine(t, cfg.Store, engineSettings(cfg, profiles), engine.Options{})
	conv := core.ConversationKey{Platform: "telegram", Channel: "42"}
	bob := core.User{ID: "bob"}
	wait := func(want string) {
		t.Helper()
		wctx, wcancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer wcancel()
		if !plat.Wait(wctx, func() bool { return strings.Contains(strings.Join(plat.Texts(conv), "\n"), want) }) {
			t.Fatalf("no %q in %q", want, plat.Texts(conv))
		}
	}
	plat.Deliver(t.Context(), core.Message{Conv: conv, ID: "1", From: bob, Text: "hello"})
	wait("not allowed")

	write(base + "telegram: {allow_users: [alice, bob]}\n")
	if warnings, err := reload(path, eng); err != nil || len(warnings) != 0 {
		t.Fatalf("reload of a valid config: %v, warnings %q", err, warnings)
	}
	plat.Deliver(t.Context(), core.Message{Conv: conv, ID: "2", From: bob, Text: "hello"})
	wait("You said")

	write(base + "telegram: {allow_users: [alice], bogus: true}\n")
	if _, err := reload(path, eng); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("reload of an invalid config = %v, want the error", err)
	}
	// The old (valid) config is still in force: bob may still talk.
	if err := eng.Idle(t.Context()); err != nil {
		t.Fatal(err)
	}
	plat.Deliver(t.Context(), core.Message{Conv: conv, ID: "3", From: bob, Text: "again"})
	wait("again")
	if n := strings.Count(strings.Join(plat.Texts(conv), "\n"), "not allowed"); n != 1 {
		t.Errorf("%d denials; the invalid reload must not have changed access", n)
	}

	// A valid config whose new profile cannot start here is applied, with
	// a warning that names it.
	if err := os.WriteFile(filepath.Join(dir, "gone.yaml"), []byte("command: no-such-agent-xyz\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	write("store: bridge.db\nprofiles: {demo: builtin:demo, gone: gone.yaml}\ndefault_profile: demo\n")
	if warnings, err := reload(path, eng); err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "profile gone:") {
		t.Errorf("reload with a profile that cannot start = %v, warnings %q; want one warning naming it", err, warnings)
	}
}

// startEngine runs an engine on a real store at dbPath with a fake
// "telegram" platform, and stops both when the test ends.
func startEngine(t *testing.T, dbPath string, s *engine.Settings, opts engine.Options) (*engine.Engine, *platformtest.Platform) {
	t.Helper()
	st, err := store.Open(dbPath, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	eng := engine.New(st, s, opts)
	plat := platformtest.New("telegram", platformtest.DefaultLimits)
	h := eng.Handler(plat)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); plat.Run(ctx, h) }()
	t.Cleanup(func() {
		eng.Shutdown(context.Background(), time.Second)
		cancel()
		<-done
		st.Close()
	})
	<-plat.Running()
	return eng, plat
}
