package slack

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzChunks checks the section splitter: pieces add up to the input, none
// is over the limit, none is empty, and no escape entity is cut in two.
func FuzzChunks(f *testing.F) {
	f.Add("hello", 10)
	f.Add(strings.Repeat("a&amp;b\n", 500), 3000)
	f.Add(strings.Repeat("é", 7000), 3000)
	f.Add("x&lt;y", 3)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n < 8 || n > 5000 || !utf8.ValidString(s) {
			return
		}
		parts := chunks(s, n)
		if s != "" && strings.TrimSpace(s) != "" && strings.Join(parts, "") != s {
			t.Fatalf("parts do not add up: %q", parts)
		}
		for _, p := range parts {
			if utf8.RuneCountInString(p) > n || p == "" {
				t.Fatalf("part of %d runes (limit %d): %q", utf8.RuneCountInString(p), n, p)
			}
		}
		if strings.Join(parts, "") == s {
			for _, p := range parts[:len(parts)-1] {
				if i := strings.LastIndexByte(p, '&'); i >= 0 && i > len(p)-6 && strings.HasPrefix(s[strings.Index(s, p)+i:], "&amp;") && !strings.Contains(p[i:], ";") {
					t.Fatalf("entity cut: %q", p)
				}
			}
		}
	})
}
