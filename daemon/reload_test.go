package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/platforms"
	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/engine"
	"github.com/agentbridge/agentbridge/core/platformtest"
	"github.com/agentbridge/agentbridge/internal/testagent"
	"github.com/agentbridge/agentbridge/profiles"
	"github.com/agentbridge/agentbridge/store"
)

// agentProfile writes a profile file that runs this test binary as the
// test agent, and returns its path.
func agentProfile(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "agent.yaml")
	body := fmt.Sprintf("command: %q\nargs: [\"-test.run=^$\"]\nenv: {%s: \"1\", GORACE: \"atexit_sleep_ms=0\"}\ntimeout_secs: 30\nstreaming: true\n", os.Args[0], testagent.Env)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReloadAppliesValidConfigAndKeepsOldOnError(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	base := "store: bridge.db\nprofiles: {echo: " + agentProfile(t, dir) + "}\ndefault_profile: echo\n"
	write(base + "telegram: {allow_users: [alice]}\n")
	kinds := platforms.All()
	cfg, err := config.Load(path, config.Options{Platforms: kinds})
	if err != nil {
		t.Fatal(err)
	}
	profs, err := profiles.Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	eng, plat := startEngine(t, cfg.Store, EngineSettings(cfg, profs))
	r := reloader{path: path, kinds: kinds, eng: eng, log: slog.New(slog.DiscardHandler)}
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
	if warnings, err := r.reload(); err != nil || len(warnings) != 0 {
		t.Fatalf("reload of a valid config: %v, warnings %q", err, warnings)
	}
	plat.Deliver(t.Context(), core.Message{Conv: conv, ID: "2", From: bob, Text: "first-answer"})
	wait("first-answer")

	write(base + "telegram: {allow_users: [alice], bogus: true}\n")
	if _, err := r.reload(); err == nil || !strings.Contains(err.Error(), "bogus") {
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
	if warnings, err := r.reload(); err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "profile gone:") {
		t.Errorf("reload with a profile that cannot start = %v, warnings %q; want one warning naming it", err, warnings)
	}
}

// startEngine runs an engine on a real store at dbPath with a fake
// "telegram" platform, and stops both when the test ends.
func startEngine(t *testing.T, dbPath string, s *engine.Settings) (*engine.Engine, *platformtest.Platform) {
	t.Helper()
	st, err := store.Open(dbPath, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	eng := engine.New(st, s, engine.Options{})
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
