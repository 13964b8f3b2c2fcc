// Package metrics is the bridge's Prometheus observer: it counts what the
// engine reports and serves /metrics (the Prometheus text format) and
// /healthz.
package metrics

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/agentbridge/agentbridge/core/engine"
	"github.com/agentbridge/agentbridge/internal/httpguard"
)

// Metrics implements engine.Observer: the bridge's own counters, served
// in the Prometheus text format with the Go runtime's and the process's
// series (no global state).
type Metrics struct {
	messages   *family
	turns      *family
	active     *family
	duration   *family
	permission *family
	lost       *family
	submitted  *family
	waiting    *family
	heard      *family
	hearing    *family
	files      *family
}

var _ engine.Observer = (*Metrics)(nil)

// New returns metrics with no series yet; Known adds them at zero.
func New() *Metrics {
	duration := newFamily(kindHistogram, "agentbridge_turn_duration_seconds",
		"Wall time of agent processes.", "platform", "profile")
	duration.buckets = exponentialBuckets(0.1, 2.5, 10) // 0.1 s to ~6 min
	hearing := newFamily(kindHistogram, "agentbridge_transcription_duration_seconds",
		"Wall time of voice note transcriptions the engine ran (ok, failed, timeout).", "platform")
	hearing.buckets = exponentialBuckets(0.25, 2, 10) // 0.25 s to ~2 min
	return &Metrics{
		messages: newFamily(kindCounter, "agentbridge_messages_total",
			"Incoming chat messages by what became of them (turn, command, duplicate, denied, busy, overflow, draining).",
			"platform", "result"),
		turns: newFamily(kindCounter, "agentbridge_turns_total",
			"Finished turns by result (ok, error, timeout, stopped, start_failed).",
			"platform", "profile", "result"),
		active: newFamily(kindGauge, "agentbridge_turns_running",
			"Turns whose agent is running now.", "platform", "profile"),
		duration: duration,
		permission: newFamily(kindCounter, "agentbridge_permission_requests_total",
			"Answered permission requests (allowed, denied, timeout, turn_ended, auto_allowed).",
			"platform", "result"),
		lost: newFamily(kindCounter, "agentbridge_replies_lost_total",
			"Final replies that could not be delivered after retries.", "platform"),
		submitted: newFamily(kindCounter, "agentbridge_submitted_turns_total",
			"Turns nobody typed, by origin (schedule, trigger) and how they ended (a turn result, or busy, draining, cancelled, failed).",
			"platform", "origin", "result"),
		waiting: newFamily(kindGauge, "agentbridge_turns_waiting",
			"Turns waiting for a free agent slot (max_concurrent_turns, its per-user share, a profile's max_concurrent).", "platform"),
		heard: newFamily(kindCounter, "agentbridge_transcriptions_total",
			"Voice notes to transcribe, by result (ok, failed, timeout, too_long, too_big).", "platform", "result"),
		hearing: hearing,
		files: newFamily(kindCounter, "agentbridge_agent_files_total",
			"Files agents sent back, by what became of them (sent, or why not: unsupported, link, malformed, scheme, undecodable, outside, unreadable, too_large, turn_files, turn_bytes, failed).",
			"platform", "result"),
	}
}

// Known creates the series of these platforms and profiles at zero, every
// result included, so a scrape before any traffic shows them and
// dashboards and alerts work from the start. Serve calls it at start and
// after a reload; series already there keep their values.
func (m *Metrics) Known(platforms, profiles []string) {
	for _, p := range platforms {
		for _, r := range engine.MessageResults {
			m.messages.touch(p, r)
		}
		for _, r := range engine.PermissionResults {
			m.permission.touch(p, r)
		}
		for _, r := range engine.FileResults {
			m.files.touch(p, r)
		}
		m.lost.touch(p)
		m.waiting.touch(p)
		for _, r := range engine.TranscribeResults {
			m.heard.touch(p, r)
		}
		m.hearing.touch(p)
		for _, origin := range []string{engine.OriginSchedule, engine.OriginTrigger} {
			for _, r := range slices.Concat(engine.TurnResults, engine.SubmitResults) {
				m.submitted.touch(p, origin, r)
			}
		}
		for _, prof := range profiles {
			m.active.touch(p, prof)
			m.duration.touch(p, prof)
			for _, r := range engine.TurnResults {
				m.turns.touch(p, prof, r)
			}
		}
	}
}

// Message implements engine.Observer.
func (m *Metrics) Message(platform, result string) {
	m.messages.add(1, platform, result)
}

// TurnStarted implements engine.Observer.
func (m *Metrics) TurnStarted(platform, profile string) {
	m.active.add(1, platform, profile)
}

// TurnFinished implements engine.Observer.
func (m *Metrics) TurnFinished(platform, profile, result string, d time.Duration) {
	m.active.add(-1, platform, profile)
	m.turns.add(1, platform, profile, result)
	m.duration.observe(d.Seconds(), platform, profile)
}

// Permission implements engine.Observer.
func (m *Metrics) Permission(platform, result string) {
	m.permission.add(1, platform, result)
}

// ReplyLost implements engine.Observer.
func (m *Metrics) ReplyLost(platform string) { m.lost.add(1, platform) }

// Submitted implements engine.Observer.
func (m *Metrics) Submitted(platform, origin, result string) {
	m.submitted.add(1, platform, origin, result)
}

// File implements engine.Observer.
func (m *Metrics) File(platform, result string) { m.files.add(1, platform, result) }

// TurnWaiting implements engine.Observer.
func (m *Metrics) TurnWaiting(platform string, delta int) {
	m.waiting.add(float64(delta), platform)
}

// Transcribed implements engine.Observer; only transcriptions the engine
// ran (it took time) go into the duration histogram.
func (m *Metrics) Transcribed(platform, result string, d time.Duration) {
	m.heard.add(1, platform, result)
	if d > 0 {
		m.hearing.observe(d.Seconds(), platform)
	}
}

// Handler serves /metrics and /healthz.
func (m *Metrics) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		bw := bufio.NewWriter(w)
		for _, f := range []*family{m.messages, m.turns, m.active, m.duration, m.permission, m.lost, m.submitted, m.waiting, m.heard, m.hearing, m.files} {
			f.write(bw)
		}
		writeRuntime(bw)
		bw.Flush()
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// Serve listens on addr and serves m until the returned server is closed.
// It logs the address it bound, which differs from addr for port 0.
func Serve(addr string, m *Metrics, log *slog.Logger) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener: %w", err)
	}
	srv := httpguard.Server(m.Handler(), httpguard.Limits{})
	log.Info("metrics listening", "addr", ln.Addr().String())
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener stopped", "err", err)
		}
	}()
	return srv, nil
}
