// Package metrics is the bridge's Prometheus observer: it counts what the
// engine reports and serves /metrics and /healthz.
package metrics

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agentbridge/agentbridge/core/engine"
)

// Metrics implements engine.Observer with Prometheus collectors on their
// own registry (no global state).
type Metrics struct {
	reg        *prometheus.Registry
	messages   *prometheus.CounterVec
	turns      *prometheus.CounterVec
	active     *prometheus.GaugeVec
	duration   *prometheus.HistogramVec
	permission *prometheus.CounterVec
	lost       *prometheus.CounterVec
}

var _ engine.Observer = (*Metrics)(nil)

// New returns metrics with no series yet; Known adds them at zero.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		messages: counterVec("agentbridge_messages_total",
			"Incoming chat messages by what became of them (turn, command, duplicate, denied, busy, overflow, draining).",
			"platform", "result"),
		turns: counterVec("agentbridge_turns_total",
			"Finished turns by result (ok, error, timeout, stopped, start_failed).",
			"platform", "profile", "result"),
		active: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "agentbridge_turns_running",
			Help: "Turns whose agent is running now.",
		}, []string{"platform", "profile"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "agentbridge_turn_duration_seconds",
			Help:    "Wall time of agent processes.",
			Buckets: prometheus.ExponentialBuckets(0.1, 2.5, 10), // 0.1 s to ~6 min
		}, []string{"platform", "profile"}),
		permission: counterVec("agentbridge_permission_requests_total",
			"Answered permission requests (allowed, denied, timeout, turn_ended, auto_allowed).",
			"platform", "result"),
		lost: counterVec("agentbridge_replies_lost_total",
			"Final replies that could not be delivered after retries.",
			"platform"),
	}
	m.reg.MustRegister(m.messages, m.turns, m.active, m.duration, m.permission, m.lost,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// counterVec is a counter series per value of labels.
func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// Known creates the series of these platforms and profiles at zero, every
// result included, so a scrape before any traffic shows them and
// dashboards and alerts work from the start. Serve calls it at start and
// after a reload; series already there keep their values.
func (m *Metrics) Known(platforms, profiles []string) {
	for _, p := range platforms {
		for _, r := range engine.MessageResults {
			m.messages.WithLabelValues(p, r)
		}
		for _, r := range engine.PermissionResults {
			m.permission.WithLabelValues(p, r)
		}
		m.lost.WithLabelValues(p)
		for _, prof := range profiles {
			m.active.WithLabelValues(p, prof)
			m.duration.WithLabelValues(p, prof)
			for _, r := range engine.TurnResults {
				m.turns.WithLabelValues(p, prof, r)
			}
		}
	}
}

// Message implements engine.Observer.
func (m *Metrics) Message(platform, result string) {
	m.messages.WithLabelValues(platform, result).Inc()
}

// TurnStarted implements engine.Observer.
func (m *Metrics) TurnStarted(platform, profile string) {
	m.active.WithLabelValues(platform, profile).Inc()
}

// TurnFinished implements engine.Observer.
func (m *Metrics) TurnFinished(platform, profile, result string, d time.Duration) {
	m.active.WithLabelValues(platform, profile).Dec()
	m.turns.WithLabelValues(platform, profile, result).Inc()
	m.duration.WithLabelValues(platform, profile).Observe(d.Seconds())
}

// Permission implements engine.Observer.
func (m *Metrics) Permission(platform, result string) {
	m.permission.WithLabelValues(platform, result).Inc()
}

// ReplyLost implements engine.Observer.
func (m *Metrics) ReplyLost(platform string) { m.lost.WithLabelValues(platform).Inc() }

// Handler serves /metrics and /healthz.
func (m *Metrics) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
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
	srv := &http.Server{Handler: m.Handler(), ReadHeaderTimeout: 5 * time.Second}
	log.Info("metrics listening", "addr", ln.Addr().String())
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener stopped", "err", err)
		}
	}()
	return srv, nil
}
