package tail

import (
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestReadFromKeepsTheEndAtARuneBoundary: only the last Max bytes are kept,
// cut at a rune boundary.
func TestReadFromKeepsTheEndAtARuneBoundary(t *testing.T) {
	const max = 64 << 10
	src := strings.Repeat("é", max) + "end" // 2 bytes a rune
	tb := &Buffer{Max: max}
	n, err := tb.ReadFrom(strings.NewReader(src))
	if err != nil || n != int64(len(src)) {
		t.Fatalf("ReadFrom = %d, %v; want %d, nil", n, err, len(src))
	}
	got := tb.String()
	if len(got) > max || !strings.HasSuffix(got, "end") || !utf8.ValidString(got) {
		t.Errorf("tail: %d bytes, valid %v, suffix %q", len(got), utf8.ValidString(got), got[len(got)-3:])
	}
	if len(got) < max-1 {
		t.Errorf("tail kept only %d bytes", len(got))
	}
	if cap(tb.buf) > 2*max+32<<10 {
		t.Errorf("buffer capacity %d, want at most about 2×Max", cap(tb.buf))
	}
}

// TestWriteKeepsTheEnd: many small writes keep only the last Max bytes, and
// a stream shorter than Max is kept whole.
func TestWriteKeepsTheEnd(t *testing.T) {
	tb := &Buffer{Max: 10}
	io.WriteString(tb, "short")
	if got := tb.String(); got != "short" {
		t.Fatalf("String = %q, want %q", got, "short")
	}
	for i := range 100 {
		io.WriteString(tb, string(rune('a'+i%26)))
	}
	if got, want := tb.String(), "mnopqrstuv"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}

// TestStringWhileReading: String may be called while ReadFrom fills the
// buffer (the race detector checks the locking).
func TestStringWhileReading(t *testing.T) {
	pr, pw := io.Pipe()
	tb := &Buffer{Max: 100}
	done := make(chan error, 1)
	go func() {
		_, err := tb.ReadFrom(pr)
		done <- err
	}()
	for i := range 50 {
		if _, err := io.WriteString(pw, strings.Repeat("x", i)+"\n"); err != nil {
			t.Fatal(err)
		}
		if s := tb.String(); len(s) > 100 {
			t.Fatalf("String is %d bytes, over Max", len(s))
		}
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatalf("ReadFrom = %v", err)
	}
	if s := tb.String(); !strings.HasSuffix(s, strings.Repeat("x", 49)+"\n") {
		t.Errorf("String = %q, want the last line at its end", s)
	}
}
