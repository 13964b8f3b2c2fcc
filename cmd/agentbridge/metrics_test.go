package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/core/engine"
)

func TestMetricsCountTurnsAndMessages(t *testing.T) {
	t.Setenv("AGENTBRIDGE_DEMO_DELAY", "1ms")
	prof, err := demoProfile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m := newMetrics()
	eng, plat := startEngine(t, filepath.Join(t.TempDir(), "m.db"), &engine.Settings{
		Platforms:      map[string]engine.PlatformSettings{"telegram": {AllowUsers: []string{"alice"}}},
		Profiles:       map[string]*agentproc.Profile{"demo": prof},
		DefaultProfile: "demo",
	}, engine.Options{Observer: m})
	conv := core.ConversationKey{Platform: "telegram", Channel: "1"}
	msg := core.Message{Conv: conv, ID: "1", From: core.User{ID: "alice"}, Text: "hello"}
	plat.Deliver(t.Context(), msg)
	plat.Deliver(t.Context(), msg) // a redelivery
	plat.Deliver(t.Context(), core.Message{Conv: conv, ID: "2", From: core.User{ID: "eve"}, Text: "hi"})
	if err := eng.Idle(t.Context()); err != nil {
		t.Fatal(err)
	}

	srv := httptest.NewServer(m.handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`agentbridge_turns_total{platform="telegram",profile="demo",result="ok"} 1`,
		`agentbridge_messages_total{platform="telegram",result="turn"} 1`,
		`agentbridge_messages_total{platform="telegram",result="duplicate"} 1`,
		`agentbridge_messages_total{platform="telegram",result="denied"} 1`,
		`agentbridge_turns_running{platform="telegram",profile="demo"} 0`,
		`go_goroutines`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	resp, err = http.Get(srv.URL + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %v %v", resp, err)
	}
	resp.Body.Close()
}
