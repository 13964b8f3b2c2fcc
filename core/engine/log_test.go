package engine_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"

	"github.com/agentbridge/agentbridge/core/platformtest"
)

// logKeys keeps the message and attribute keys of every record an engine
// logs, the logger's own (With) first.
type logKeys struct {
	mu   sync.Mutex
	recs []logRecord
}

type logRecord struct {
	msg  string
	keys []string
	vals []string // the record's own attributes' values
	lvl  slog.Level
}

func (l *logKeys) records() []logRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.recs)
}

// logHandler is a slog.Handler feeding a logKeys.
type logHandler struct {
	keys *logKeys
	with []string
}

func (h logHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h logHandler) Handle(_ context.Context, r slog.Record) error {
	keys := slices.Clone(h.with)
	var vals []string
	r.Attrs(func(a slog.Attr) bool {
		keys = append(keys, a.Key)
		vals = append(vals, a.Value.Resolve().String())
		return true
	})
	h.keys.mu.Lock()
	h.keys.recs = append(h.keys.recs, logRecord{msg: r.Message, keys: keys, vals: vals, lvl: r.Level})
	h.keys.mu.Unlock()
	return nil
}

func (h logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	with := slices.Clone(h.with)
	for _, a := range attrs {
		with = append(with, a.Key)
	}
	return logHandler{keys: h.keys, with: with}
}

func (h logHandler) WithGroup(name string) slog.Handler {
	return logHandler{keys: h.keys, with: append(slices.Clone(h.with), name+".")}
}

// A turn's log lines, the presenter's among them, carry each attribute
// once: "conv=… turn=… conv=…" was what the presenter's lines read when it
// added the conversation to a logger that had it already.
func TestTurnLogAttributesOnce(t *testing.T) {
	h := newHarness(t, "", nil)
	// The reply's first send fails: the presenter logs it and retries.
	h.plat.Fail(platformtest.OpSend, errors.New("transient failure"))
	h.send(alice, "hello")
	h.waitText("hello")
	h.idle()
	var presenter bool
	for _, r := range h.logs.records() {
		seen := map[string]bool{}
		for _, k := range r.keys {
			if seen[k] {
				t.Errorf("log line %q has %s twice: %q", r.msg, k, r.keys)
			}
			seen[k] = true
		}
		if r.msg == "reply delivery failed; retrying" {
			presenter = true
			if !seen["conv"] || !seen["turn"] {
				t.Errorf("the presenter's line %q lacks the turn's attributes: %q", r.msg, r.keys)
			}
		}
	}
	if !presenter {
		t.Errorf("no presenter line logged; records: %+v", h.logs.records())
	}
}
