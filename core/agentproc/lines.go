// This file: spec/protocol.md, "stdout: events" (Size, D-LINE-1) — reading
// the agent's stdout line by line with bounded memory.

package agentproc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
)

// MaxLineBytes is the longest stdout line accepted, without its newline
// (D-LINE-1). A longer line is skipped with a warning.
const MaxLineBytes = 8 << 20

// lineBufBytes is the stdout buffer of an idle turn; it grows for a long
// line (up to MaxLineBytes plus its newline) and shrinks back once that
// line is handled.
const lineBufBytes = 4 << 10

// read reads stdout line by line with bounded memory: a line longer than
// MaxLineBytes is skipped, not buffered (D-LINE-1).
func (a *assembler) read(rd io.Reader) {
	tooLong := func(n int) {
		a.log.LogAttrs(context.Background(), slog.LevelWarn, "stdout line too long; skipped (D-LINE-1)",
			slog.Int("bytes", n), slog.Int("max", MaxLineBytes))
	}
	// readLines always ends with an error; io.EOF is the normal one.
	err := readLines(rd, MaxLineBytes, a.handle, tooLong)
	if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, os.ErrClosed) {
		a.log.LogAttrs(context.Background(), slog.LevelWarn, "reading agent stdout failed", slog.Any("err", err))
	}
}

// readLines calls handle with every line of rd (without its newline and a
// trailing carriage return), and tooLong with the size of every line
// longer than maxLine, which is skipped without being buffered. The line
// passed to handle is only valid during the call: lines are handled in
// place in the read buffer. It returns the error that ended the reading
// (io.EOF at the end).
func readLines(rd io.Reader, maxLine int, handle func([]byte), tooLong func(int)) error {
	buf := make([]byte, lineBufBytes)
	var (
		start, end int  // unhandled bytes are buf[start:end]
		scanned    int  // buf[start:start+scanned] has no newline
		skipping   bool // discarding the rest of an over-long line
		skipped    int  // bytes of that line discarded so far
	)
	for {
		n, err := rd.Read(buf[end:])
		end += n
		for {
			i := bytes.IndexByte(buf[start+scanned:end], '\n')
			if i < 0 {
				scanned = end - start
				break
			}
			nl := start + scanned + i
			switch {
			case skipping:
				tooLong(skipped + nl - start + 1)
				skipping = false
			case nl-start > maxLine:
				tooLong(nl - start + 1)
			default:
				handle(bytes.TrimSuffix(buf[start:nl], []byte{'\r'}))
			}
			start, scanned = nl+1, 0
		}
		switch {
		case skipping:
			skipped += end - start
			start, end, scanned = 0, 0, 0
		case end-start > maxLine: // no newline can make this line acceptable
			skipping, skipped = true, end-start
			start, end, scanned = 0, 0, 0
		}
		if len(buf) > lineBufBytes && end-start <= lineBufBytes/2 {
			// Done with the long line: do not hold its buffer.
			small := make([]byte, lineBufBytes)
			end = copy(small, buf[start:end])
			buf, start = small, 0
		} else if end == len(buf) {
			if start > 0 {
				end = copy(buf, buf[start:end])
				start = 0
			} else {
				bigger := make([]byte, min(2*len(buf), maxLine+1))
				copy(bigger, buf[:end])
				buf = bigger
			}
		}
		if err != nil {
			// At EOF, bytes after the last newline are a line too.
			switch {
			case skipping:
				tooLong(skipped)
			case end > start && end-start > maxLine:
				tooLong(end - start)
			case end > start:
				handle(bytes.TrimSuffix(buf[start:end], []byte{'\r'}))
			}
			return err
		}
	}
}
