// Package tail keeps the end of a stream in bounded memory: the last bytes
// an agent or a wrapped CLI wrote to stderr, for error messages and
// diagnoses. core/agentproc and the profile shims share it.
package tail

import (
	"io"
	"slices"
	"sync"
	"unicode/utf8"
)

// readBufBytes is what ReadFrom holds while the stream is quiet.
const readBufBytes = 512

// Buffer keeps the last Max bytes written to it. The zero value keeps
// nothing; set Max. It is safe for concurrent use, except that ReadFrom
// must not run alongside another ReadFrom or Write.
type Buffer struct {
	Max int

	mu  sync.Mutex
	buf []byte
	cut bool // the start of the stream was dropped
}

// Write keeps the end of p. It never fails.
func (t *Buffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	t.trimLocked()
	return len(p), nil
}

// ReadFrom reads r until it ends, keeping its end, and returns the bytes
// read and the error that ended it (nil for io.EOF). It reads straight into
// the buffer's spare room, so a quiet stream holds only a few hundred bytes.
func (t *Buffer) ReadFrom(r io.Reader) (int64, error) {
	var total int64
	for {
		t.mu.Lock()
		if cap(t.buf)-len(t.buf) < readBufBytes/2 {
			t.buf = slices.Grow(t.buf, max(readBufBytes, min(len(t.buf), 32<<10)))
		}
		spare := t.buf[len(t.buf):cap(t.buf)]
		t.mu.Unlock()
		// Only this goroutine changes buf meanwhile, and String reads only
		// up to its length, so the spare room is ours to fill unlocked.
		n, err := r.Read(spare)
		total += int64(n)
		t.mu.Lock()
		t.buf = t.buf[:len(t.buf)+n]
		t.trimLocked()
		t.mu.Unlock()
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// trimLocked drops the start once twice Max is held, so appending stays
// cheap and memory stays within 2×Max.
func (t *Buffer) trimLocked() {
	if len(t.buf) > 2*t.Max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.Max:]...)
		t.cut = true
	}
}

// String returns the last Max bytes, starting at a rune boundary when the
// start was cut.
func (t *Buffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if len(b) > t.Max || t.cut {
		b = b[max(0, len(b)-t.Max):]
		for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
			b = b[1:]
		}
	}
	return string(b)
}
