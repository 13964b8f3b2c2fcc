// Package lines reads a stream of newline-terminated lines, such as an
// agent's NDJSON stdout, in bounded memory: a line longer than the limit is
// skipped and reported by size, never buffered. core/agentproc reads agents
// with it and the profile shims read the CLIs they wrap.
package lines

import (
	"bytes"
	"io"
)

// bufBytes is the buffer of an idle reader; it grows for a long line (up to
// the limit plus its newline) and shrinks back once that line is handled.
const bufBytes = 4 << 10

// Read calls handle with every line of rd (without its newline and a
// trailing carriage return), and tooLong (when not nil) with the size of
// every line longer than maxLine, which is skipped without being buffered.
// The line passed to handle is only valid during the call: lines are handled
// in place in the read buffer. Read returns handle's first error, or else
// the error that ended the reading (io.EOF at the end).
func Read(rd io.Reader, maxLine int, handle func([]byte) error, tooLong func(int)) error {
	if tooLong == nil {
		tooLong = func(int) {}
	}
	buf := make([]byte, bufBytes)
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
				if herr := handle(bytes.TrimSuffix(buf[start:nl], []byte{'\r'})); herr != nil {
					return herr
				}
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
		if len(buf) > bufBytes && end-start <= bufBytes/2 {
			// Done with the long line: do not hold its buffer.
			small := make([]byte, bufBytes)
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
				if herr := handle(bytes.TrimSuffix(buf[start:end], []byte{'\r'})); herr != nil {
					return herr
				}
			}
			return err
		}
	}
}
