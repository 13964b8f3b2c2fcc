package main

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

// metrics implements engine.Observer with Prometheus collectors on their
// own registry (no global state).
type metrics struct {
	reg        *prometheus.Registry
	messages   *prometheus.CounterVec
	turns      *prometheus.CounterVec
	active     *prometheus.GaugeVec
	duration   *prometheus.HistogramVec
	permission *prometheus.CounterVec
	lost       *prometheus.CounterVec
}

var _ engine.Observer = (*metrics)(nil)

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentbridge_messages_total",
			Help: "Incoming chat messages by what became of them (turn, command, duplicate, denied, busy, draining).",
		}, []string{"platform", "result"}),
		turns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentbridge_turns_total",
			Help: "Finished turns by result (ok, error, timeout, stopped, start_failed).",
		}, []string{"platform", "profile", "result"}),
		active: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "agentbridge_turns_running",
			Help: "Turns whose agent is running now.",
		}, []string{"platform", "profile"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "agentbridge_turn_duration_seconds",
			Help:    "Wall time of agent processes.",
			Buckets: prometheus.ExponentialBuckets(0.1, 2.5, 10), // 0.1 s to ~6 min
		}, []string{"platform", "profile"}),
		permission: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentbridge_permission_requests_total",
			Help: "Answered permission requests (allowed, denied, timeout, turn_ended, auto_allowed).",
		}, []string{"platform", "result"}),
		lost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "agentbridge_replies_lost_total",
			Help: "Final replies that could not be delivered after retries.",
		}, []string{"platform"}),
	}
	m.reg.MustRegister(m.messages, m.turns, m.active, m.duration, m.permission, m.lost,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) Message(platform, result string) {
	m.messages.WithLabelValues(platform, result).Inc()
}

func (m *metrics) TurnStarted(platform, profile string) {
	m.active.WithLabelValues(platform, profile).Inc()
}

func (m *metrics) TurnFinished(platform, profile, result string, d time.Duration) {
	m.active.WithLabelValues(platform, profile).Dec()
	m.turns.WithLabelValues(platform, profile, result).Inc()
	m.duration.WithLabelValues(platform, profile).Observe(d.Seconds())
}

func (m *metrics) Permission(platform, result string) {
	m.permission.WithLabelValues(platform, result).Inc()
}

func (m *metrics) ReplyLost(platform string) { m.lost.WithLabelValues(platform).Inc() }

// handler serves /metrics and /healthz.
func (m *metrics) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// serveMetrics listens on addr and serves m until the returned server is
// closed.
func serveMetrics(addr string, m *metrics, log *slog.Logger) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener: %w", err)
	}
	srv := &http.Server{Handler: m.handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener stopped", "err", err)
		}
	}()
	return srv, nil
}
