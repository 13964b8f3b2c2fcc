package shimio

import (
	"encoding/json"
	"io"
	"sync"
)

// StdinWriter writes JSON lines to a CLI's stdin from both the goroutine
// handling its stdout and the one reading the bridge's permission answers.
// After Close a line is dropped.
type StdinWriter struct {
	mu     sync.Mutex
	w      io.WriteCloser
	closed bool
}

// NewStdinWriter writes to w, the CLI's stdin.
func NewStdinWriter(w io.WriteCloser) *StdinWriter { return &StdinWriter{w: w} }

// Send writes v as one JSON line.
func (s *StdinWriter) Send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	// A write error means the CLI is gone; its exit is reported instead.
	_, _ = s.w.Write(append(b, '\n'))
}

// Close ends the CLI's stdin (which is what makes codex app-server exit);
// calling it again does nothing.
func (s *StdinWriter) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		s.w.Close()
	}
}
