package termtext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestVisible(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text, ünïcödé 🙂\n\tindented", "plain text, ünïcödé 🙂\n\tindented"},
		{"\x1b[2J", "␛[2J"},
		// OSC 52 writes the clipboard; OSC 0 sets the window title.
		{"\x1b]52;c;cm0gLXJmIH4=\x07", "␛]52;c;cm0gLXJmIH4=␇"},
		{"\x1b]0;pwned\x1b\\", "␛]0;pwned␛\\"},
		// \r ESC [K would erase the line printed so far.
		{"safe\r\x1b[Kevil", "safe␍␛[Kevil"},
		{"\x00\x01\x1f\x7f", "␀␁␟␡"},
		{"\u009b2J \u009d0;t\u009c", "␛[2J ␛]0;t␛\\"},
		{"bad \xff\x9b byte", "bad \uFFFD\uFFFD byte"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Visible(tt.in); got != tt.want {
			t.Errorf("Visible(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzVisible: whatever the input, the output is valid UTF-8 with no C0 or
// C1 control but newline and tab, and input without one comes back as it was.
func FuzzVisible(f *testing.F) {
	for _, s := range []string{"", "hi\n", "\x1b]52;c;AAAA\x07", "\r\x1b[K", "\u009b31m", "\xff\xfe", "a\tb\x7f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Visible(s)
		if !utf8.ValidString(got) {
			t.Fatalf("Visible(%q) = %q: not UTF-8", s, got)
		}
		for _, r := range got {
			if (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r < 0xa0) {
				t.Fatalf("Visible(%q) = %q keeps control %U", s, got, r)
			}
		}
		if strings.Count(got, "\n") != strings.Count(s, "\n") {
			t.Fatalf("Visible(%q) = %q changed the lines", s, got)
		}
		if unsafeIndex(s) < 0 && got != s {
			t.Fatalf("Visible(%q) = %q changed safe text", s, got)
		}
	})
}
