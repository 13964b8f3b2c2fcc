package metrics_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/core/engine"
	"github.com/agentbridge/agentbridge/core/platformtest"
	"github.com/agentbridge/agentbridge/daemon/metrics"
	"github.com/agentbridge/agentbridge/internal/testagent"
	"github.com/agentbridge/agentbridge/store"
)

func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

func TestMetricsCountTurnsAndMessages(t *testing.T) {
	prof := &agentproc.Profile{
		Name:      "demo",
		Command:   os.Args[0],
		Args:      []string{"-test.run=^$"},
		Env:       map[string]string{testagent.Env: "1", "GORACE": "atexit_sleep_ms=0"},
		Timeout:   30 * time.Second,
		KillGrace: 300 * time.Millisecond,
		Streaming: true,
	}
	st, err := store.Open(filepath.Join(t.TempDir(), "m.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := metrics.New()
	eng := engine.New(st, &engine.Settings{
		Platforms:      map[string]engine.PlatformSettings{"telegram": {AllowUsers: []string{"alice"}}},
		Profiles:       map[string]*agentproc.Profile{"demo": prof},
		DefaultProfile: "demo",
	}, engine.Options{Observer: m})
	plat := platformtest.New("telegram", platformtest.DefaultLimits)
	h := eng.Handler(plat)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); plat.Run(ctx, h) }()
	defer func() {
		eng.Shutdown(context.Background(), time.Second)
		cancel()
		<-done
	}()
	<-plat.Running()

	conv := core.ConversationKey{Platform: "telegram", Channel: "1"}
	msg := core.Message{Conv: conv, ID: "1", From: core.User{ID: "alice"}, Text: "hello"}
	plat.Deliver(t.Context(), msg)
	plat.Deliver(t.Context(), msg) // a redelivery
	plat.Deliver(t.Context(), core.Message{Conv: conv, ID: "2", From: core.User{ID: "eve"}, Text: "hi"})
	if err := eng.Idle(t.Context()); err != nil {
		t.Fatal(err)
	}
	// A scheduled turn and a triggered one, counted by origin and not as
	// messages.
	for _, origin := range []string{engine.OriginSchedule, engine.OriginTrigger} {
		if _, err := eng.Submit(t.Context(), engine.Submission{Conv: conv, Text: "auto", Origin: origin, Name: "n"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := eng.Idle(t.Context()); err != nil {
		t.Fatal(err)
	}

	body := scrape(t, m)
	for _, want := range []string{
		`agentbridge_turns_total{platform="telegram",profile="demo",result="ok"} 3`,
		`agentbridge_messages_total{platform="telegram",result="turn"} 1`,
		`agentbridge_submitted_turns_total{platform="telegram",origin="schedule",result="ok"} 1`,
		`agentbridge_submitted_turns_total{platform="telegram",origin="trigger",result="ok"} 1`,
		`agentbridge_messages_total{platform="telegram",result="duplicate"} 1`,
		`agentbridge_messages_total{platform="telegram",result="denied"} 1`,
		`agentbridge_turns_running{platform="telegram",profile="demo"} 0`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestKnownSeriesStartAtZero: after Known, a scrape with no traffic shows
// every agentbridge_* series of the given platforms and profiles, at zero.
func TestKnownSeriesStartAtZero(t *testing.T) {
	m := metrics.New()
	if body := scrape(t, m); strings.Contains(body, "agentbridge_messages_total{") {
		t.Fatalf("series before Known:\n%s", body)
	}
	m.Known([]string{"telegram", "telegram/work"}, []string{"demo"})
	body := scrape(t, m)
	var want []string
	for _, p := range []string{"telegram", "telegram/work"} {
		for _, r := range engine.MessageResults {
			want = append(want, `agentbridge_messages_total{platform="`+p+`",result="`+r+`"} 0`)
		}
		for _, r := range engine.PermissionResults {
			want = append(want, `agentbridge_permission_requests_total{platform="`+p+`",result="`+r+`"} 0`)
		}
		for _, r := range engine.TurnResults {
			want = append(want, `agentbridge_turns_total{platform="`+p+`",profile="demo",result="`+r+`"} 0`)
		}
		for _, r := range engine.FileResults {
			want = append(want, `agentbridge_agent_files_total{platform="`+p+`",result="`+r+`"} 0`)
		}
		for _, origin := range []string{engine.OriginSchedule, engine.OriginTrigger} {
			for _, r := range slices.Concat(engine.TurnResults, engine.SubmitResults) {
				want = append(want, `agentbridge_submitted_turns_total{platform="`+p+`",origin="`+origin+`",result="`+r+`"} 0`)
			}
		}
		for _, r := range engine.TranscribeResults {
			want = append(want, `agentbridge_transcriptions_total{platform="`+p+`",result="`+r+`"} 0`)
		}
		want = append(want,
			`agentbridge_transcription_duration_seconds_count{platform="`+p+`"} 0`,
			`agentbridge_replies_lost_total{platform="`+p+`"} 0`,
			`agentbridge_turns_waiting{platform="`+p+`"} 0`,
			`agentbridge_turns_running{platform="`+p+`",profile="demo"} 0`,
			`agentbridge_turn_duration_seconds_count{platform="`+p+`",profile="demo"} 0`,
		)
	}
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("/metrics lacks %s", w)
		}
	}
}

func TestHealthz(t *testing.T) {
	srv := httptest.NewServer(metrics.New().Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %s", resp.Status)
	}
}

// TestTranscriptionsCounted: each voice note counts by result; only the
// ones the engine ran (it took time) go into the duration histogram.
func TestTranscriptionsCounted(t *testing.T) {
	m := metrics.New()
	m.Known([]string{"telegram"}, nil)
	m.Transcribed("telegram", "ok", 1500*time.Millisecond)
	m.Transcribed("telegram", "timeout", 2*time.Minute)
	m.Transcribed("telegram", "too_long", 0)
	body := scrape(t, m)
	for _, want := range []string{
		`agentbridge_transcriptions_total{platform="telegram",result="ok"} 1`,
		`agentbridge_transcriptions_total{platform="telegram",result="timeout"} 1`,
		`agentbridge_transcriptions_total{platform="telegram",result="too_long"} 1`,
		`agentbridge_transcriptions_total{platform="telegram",result="failed"} 0`,
		`agentbridge_transcription_duration_seconds_count{platform="telegram"} 2`,
		`agentbridge_transcription_duration_seconds_sum{platform="telegram"} 121.5`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
