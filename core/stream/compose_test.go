package stream

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestKeepTail: thinking of any length keeps at most twice thinkingKept
// bytes, ends as it was written, starts at a character, and still shows
// the quote's full tail with the "…" before it.
func TestKeepTail(t *testing.T) {
	var b strings.Builder
	for i := range 100000 { // ~1.5 MB of reasoning
		b.WriteString("é pensée ")
		if i == 99999 {
			b.WriteString("THE LAST THOUGHT")
		}
		keepTail(&b, thinkingKept)
		if b.Len() > 2*thinkingKept {
			t.Fatalf("kept %d bytes", b.Len())
		}
	}
	got := b.String()
	if !utf8.ValidString(got) || !strings.HasSuffix(got, "THE LAST THOUGHT") {
		t.Errorf("kept %q…%q", got[:20], got[len(got)-20:])
	}
	if q := strings.TrimSpace(quote(got)); !strings.Contains(q, "…") || !strings.HasSuffix(q, "THE LAST THOUGHT") {
		t.Errorf("quote %q", q[len(q)-40:])
	}
}
