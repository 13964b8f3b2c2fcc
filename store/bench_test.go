package store

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/core"
)

// BenchmarkMarkSeen measures recording a new message id: one write
// transaction with its fsync, so the figure is mostly the disk.
func BenchmarkMarkSeen(b *testing.B) {
	s := openTemp(b, Options{})
	ctx := b.Context()
	i := 0
	for b.Loop() {
		if _, err := s.MarkSeen(ctx, "slack", strconv.Itoa(i), time.Hour); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkMarkSeenParallel measures callers contending for bbolt's single
// writer, as adapters do under load.
func BenchmarkMarkSeenParallel(b *testing.B) {
	s := openTemp(b, Options{})
	ctx := b.Context()
	var next atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := strconv.FormatInt(next.Add(1), 10)
			if _, err := s.MarkSeen(ctx, "slack", id, time.Hour); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkPutSession measures saving a session after a turn.
func BenchmarkPutSession(b *testing.B) {
	s := openTemp(b, Options{})
	ctx := b.Context()
	sess := core.Session{Name: "default", Agents: map[string]string{"claude": "0f6d3c1e-agent-session"}, Profile: "claude", UpdatedAt: time.Now()}
	for b.Loop() {
		sess.Turns++
		if err := s.PutSession(ctx, convA, sess); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSession measures reading a session at the start of a turn.
func BenchmarkSession(b *testing.B) {
	s := openTemp(b, Options{})
	ctx := b.Context()
	if err := s.PutSession(ctx, convA, core.Session{Name: "default", Agents: map[string]string{"p": "a"}}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, ok, err := s.Session(ctx, convA, "default"); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}
