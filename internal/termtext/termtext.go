// Package termtext makes untrusted text safe to print on a terminal: an
// agent's (or a chat user's) text must not drive the terminal it is shown
// on — set the clipboard (OSC 52), the window title (OSC 0), or move the
// cursor and erase what was printed (\r, ESC [K) to hide it.
package termtext

import (
	"strings"
	"unicode/utf8"
)

// Visible returns s with every control character other than newline and
// tab replaced by a visible stand-in, so it prints as what it is instead
// of acting on the terminal:
//
//   - C0 controls U+0000–U+001F (carriage return and ESC included) become
//     their Unicode control pictures U+2400–U+241F: ESC [2J shows as "␛[2J",
//     \r as "␍";
//   - DEL becomes "␡";
//   - C1 controls U+0080–U+009F become "␛" and their 7-bit equivalent
//     (U+009B, the one-character CSI, shows as "␛[");
//   - bytes that are not UTF-8 become U+FFFD, so no terminal can read a
//     stray byte as a C1 control.
//
// Everything else, newline and tab included, is unchanged.
func Visible(s string) string {
	i := unsafeIndex(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20:
			b.WriteRune(0x2400 + r)
		case r == 0x7f:
			b.WriteRune('␡')
		case r >= 0x80 && r < 0xa0:
			b.WriteRune('␛')
			b.WriteRune(r - 0x40)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// unsafeIndex is the byte offset of the first thing Visible must replace in
// s, or -1: most text has none, and then Visible allocates nothing.
func unsafeIndex(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || (r >= 0x80 && r < 0xa0) {
			return i
		}
		i += size
	}
	return -1
}
