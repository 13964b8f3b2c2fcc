package daemon

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbridge/agentbridge/adapters/platforms"
	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/daemon/schedule"
	"github.com/agentbridge/agentbridge/profiles"
	"github.com/agentbridge/agentbridge/store"
)

// A reload swaps the schedules /schedules lists and the conversations the
// trigger knows; an invalid file keeps both.
func TestReloadAppliesSchedules(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	base := "store: bridge.db\nprofiles: {demo: builtin:demo}\ndefault_profile: demo\ntelegram: {allow_users: [alice]}\n"
	entry := func(name, channel string) string {
		return "  - {name: " + name + ", platform: telegram, channel: \"" + channel + "\", cron: \"0 9 * * *\", time_zone: Europe/Berlin, message: m}\n"
	}
	write(base + "schedules:\n" + entry("old", "-1"))
	kinds := platforms.All()
	cfg, err := config.Load(path, config.Options{Platforms: kinds})
	if err != nil {
		t.Fatal(err)
	}
	profs, err := profiles.Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	eng, _ := startEngine(t, cfg.Store, EngineSettings(cfg, profs))
	st, err := store.Open(filepath.Join(dir, "other.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sched := schedule.New(scheduleEntries(cfg), st, nil)
	convs := &conversations{served: []string{"telegram"}, st: st}
	convs.cfg.Store(cfg)
	r := reloader{path: path, kinds: kinds, eng: eng, log: slog.New(slog.DiscardHandler), sched: sched, convs: convs}
	in := func(ch string) core.ConversationKey { return core.ConversationKey{Platform: "telegram", Channel: ch} }
	names := func(ch string) []string {
		var out []string
		for _, u := range sched.Upcoming(in(ch)) {
			out = append(out, u.Name)
		}
		return out
	}
	if got := names("-1"); len(got) != 1 || got[0] != "old" {
		t.Fatalf("before reload: %v", got)
	}

	write(base + "schedules:\n" + entry("new", "-2"))
	if _, err := r.reload(); err != nil {
		t.Fatal(err)
	}
	if got := names("-1"); len(got) != 0 {
		t.Errorf("the removed schedule is still listed: %v", got)
	}
	if got := names("-2"); len(got) != 1 || got[0] != "new" {
		t.Errorf("after reload: %v; want new", got)
	}
	if convs.known(t.Context(), in("-1")) || !convs.known(t.Context(), in("-2")) {
		t.Errorf("the trigger's conversations were not reloaded")
	}
	if !convs.known(t.Context(), in("alice")) || convs.known(t.Context(), core.ConversationKey{Platform: "slack", Channel: "-2"}) {
		t.Errorf("known: an allowed user's chat must be known, an unserved platform not")
	}

	write(base + "schedules:\n  - {name: bad, cron: nope}\n")
	if _, err := r.reload(); err == nil {
		t.Fatal("an invalid schedule was accepted")
	}
	if got := names("-2"); len(got) != 1 {
		t.Errorf("an invalid reload changed the schedules: %v", got)
	}
}
