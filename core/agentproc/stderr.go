// This file: spec/protocol.md, "Exit status, timeout, stop" — stderr is a
// debug log of which the bridge keeps the last 64 KiB.

package agentproc

import (
	"io"
	"slices"
	"unicode/utf8"
)

// StderrTailBytes is how much of the end of stderr Outcome.Stderr keeps.
const StderrTailBytes = 64 << 10

// stderrBufBytes is the stderr buffer of an idle turn.
const stderrBufBytes = 512

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
	cut bool // the start of the stream was dropped
}

func (t *tailBuffer) readFrom(r io.Reader) {
	// Read straight into the tail's spare room: an idle turn holds only
	// stderrBufBytes here.
	t.buf = make([]byte, 0, stderrBufBytes)
	for {
		if cap(t.buf)-len(t.buf) < stderrBufBytes/2 {
			t.buf = slices.Grow(t.buf, max(stderrBufBytes, min(len(t.buf), 32<<10)))
		}
		n, err := r.Read(t.buf[len(t.buf):cap(t.buf)])
		t.buf = t.buf[:len(t.buf)+n]
		if len(t.buf) > 2*t.max {
			t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
			t.cut = true
		}
		if err != nil {
			return
		}
	}
}

// String returns the tail, starting at a rune boundary.
func (t *tailBuffer) String() string {
	b := t.buf
	if len(b) > t.max || t.cut {
		b = b[max(0, len(b)-t.max):]
		for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
			b = b[1:]
		}
	}
	return string(b)
}
