package lines

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// refLines is the obvious reading that Read must match: split at newlines,
// the rest at EOF is a line too, a trailing carriage return is dropped, and
// lines longer than maxLine are reported by size (D-LINE-1).
func refLines(data []byte, maxLine int) (lines []string, long []int) {
	parts := bytes.SplitAfter(data, []byte{'\n'})
	for _, p := range parts {
		if len(p) == 0 {
			continue
		}
		content := bytes.TrimSuffix(p, []byte{'\n'})
		if len(content) > maxLine {
			long = append(long, len(p))
			continue
		}
		lines = append(lines, string(bytes.TrimSuffix(content, []byte{'\r'})))
	}
	return lines, long
}

// FuzzRead compares Read with refLines for any input, read in chunks of
// any size (D-LINE-1).
func FuzzRead(f *testing.F) {
	f.Add([]byte("a\nb\r\n\nc"), uint16(10), uint8(1))
	f.Add([]byte(strings.Repeat("x", 5000)+"\nshort\n"+strings.Repeat("y", 20000)), uint16(9000), uint8(0))
	f.Add([]byte(strings.Repeat("z", 9000)+"\n"+strings.Repeat("w", 8999)+"\r\nend"), uint16(9000), uint8(3))
	f.Add([]byte("only\r"), uint16(3), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, maxLine uint16, mode uint8) {
		max := int(maxLine)
		var rd io.Reader = bytes.NewReader(data)
		switch mode % 4 {
		case 1:
			rd = iotest.OneByteReader(rd)
		case 2:
			rd = iotest.HalfReader(rd)
		case 3:
			rd = iotest.DataErrReader(rd)
		}
		var lines []string
		var long []int
		err := Read(rd, max, func(l []byte) error { lines = append(lines, string(l)); return nil }, func(n int) { long = append(long, n) })
		if err != io.EOF {
			t.Fatalf("Read error %v, want EOF", err)
		}
		wantLines, wantLong := refLines(data, max)
		if diff := cmp.Diff(wantLines, lines); diff != "" {
			t.Errorf("lines differ (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(wantLong, long); diff != "" {
			t.Errorf("too-long sizes differ (-want +got):\n%s", diff)
		}
	})
}

// TestReadStopsAtHandleError: the first error of handle ends the reading
// and is returned; later lines are not handled.
func TestReadStopsAtHandleError(t *testing.T) {
	stop := errors.New("stop")
	for _, input := range []string{"a\nb\nc\n", "a\nb"} {
		var got []string
		err := Read(strings.NewReader(input), 10, func(l []byte) error {
			got = append(got, string(l))
			if string(l) == "b" {
				return stop
			}
			return nil
		}, nil)
		if !errors.Is(err, stop) {
			t.Errorf("%q: Read = %v, want the handler's error", input, err)
		}
		if diff := cmp.Diff([]string{"a", "b"}, got); diff != "" {
			t.Errorf("%q: lines (-want +got):\n%s", input, diff)
		}
	}
}
