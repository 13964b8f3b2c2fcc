package render

import (
	"fmt"
	"strings"
	"testing"
)

var fuzzSeeds = []string{
	"",
	"# Title\n\nSome **bold** and *it* and ~~gone~~ `code <x>` & [link](https://ex.com/a?b=1&c=2).",
	"- one\n- two\n  - nested\n    1. deep\n\n> quote\n> > nested quote\n\n---",
	"```go\nfunc main() {\n\tfmt.Println(\"<hi>\")\n}\n```",
	"```python\nunclosed fence\n",
	"**unclosed bold and `unclosed code",
	"| a | b |\n|---|:-:|\n| 中文 | 🎉 |\n| x \\| y | z |",
	"<script>alert(1)</script>\n\n<!channel> <!here> <@U123> @everyone @here @channel <#C1> <@&9>",
	"[x](<https://e.io/@everyone>) ![i](https://e.io/<!channel>) <https://e.io/@here>",
	"bare https://e.io/my_repo/a*b_c.go, (https://e.io/x_y) and *https://e.io/_z_*",
	strings.Repeat("> ", 40) + "deep",
	strings.Repeat("- ", 30) + "deep list",
	strings.Repeat("***a*** ", 50),
	"&amp;&lt;&#x1F600;&#0;\x00\xff\xfe",
	"a\\\nb  \nc\n\n\n\n   d",
	strings.Repeat("x", 300) + " " + strings.Repeat("日本語", 100),
	"[" + strings.Repeat("long label ", 20) + "](https://example.com/" + strings.Repeat("p", 200) + ")",
}

// FuzzSplit splits random Markdown in every dialect at a random limit: it must never panic, every
// piece fits, is non-empty and valid (Telegram tags balanced), no mass mention survives, and no
// piece is near-empty where a cut could avoid it (checkNotNearEmpty).
func FuzzSplit(f *testing.F) {
	for i, s := range fuzzSeeds {
		f.Add(s, uint16(64+i*37))
	}
	// A greedy split leaves these a near-empty last piece at max 400 (m 336).
	words := strings.Repeat("word ", 79)
	for _, s := range []string{words + "\n\n## Results\n\nAll good.", words + "one two\n\n_1.2k tokens_", words + "a b c d",
		"```go\n" + strings.Repeat("    x := step()\n", 25) + "```", strings.Repeat("- item is here\n", 27)} {
		f.Add(s, uint16(336))
	}
	f.Fuzz(func(t *testing.T, md string, m uint16) {
		max := 64 + int(m)%4000
		for _, d := range dialects {
			pieces := Split(md, d, max)
			for i, p := range pieces {
				if err := checkPiece(p, d, max); err != nil {
					t.Fatalf("%v max %d piece %d: %v\n%q", d, max, i, err, p)
				}
			}
			if err := checkNotNearEmpty(md, d, max, pieces); err != nil {
				t.Fatalf("%v max %d: %v\n%q", d, max, err, pieces)
			}
		}
	})
}

// checkNotNearEmpty reports a near-empty piece of pieces = Split(md, d, max) that a cut could have
// avoided. A piece shorter than minPiece(max) is allowed only when it is the only piece, or when no
// boundary of the piece it ends (for the last piece: of the piece before it, whose cut made it)
// leaves both that piece and the text after the boundary at least minPiece(max) long. A boundary is
// a cut at a word boundary or better, outside links; inside a word only where the greedy cut is too. Every cut is tried, and the
// text after one is measured by rendering it, so the oracle does not share Split's search.
func checkNotNearEmpty(md string, d Dialect, max int, pieces []string) error {
	if len(pieces) < 2 {
		return nil
	}
	if max < minMax {
		max = minMax
	}
	toks, _ := tokenize(md, d, max) // two pieces: Split did not keep degraded links
	c, spans := layout(toks, d, max)
	if len(spans) != len(pieces) {
		return fmt.Errorf("layout has %d pieces, Split %d", len(spans), len(pieces))
	}
	for i, p := range pieces {
		if Length(p) >= c.min {
			continue
		}
		j := i // the piece whose cut decides this one's length
		if i == len(pieces)-1 {
			j = i - 1
		}
		c := *c
		c.max = spans[j].max
		var all []cut
		c.piece(spans[j].p, spans[j].carry, run{all: &all})
		greedy := nClasses // the greedy cut's class: the best present
		for _, k := range all {
			greedy = min(greedy, k.class)
		}
		for _, k := range all {
			// A boundary: a word boundary or better (a rune cut only where the greedy cut is one too),
			// outside links.
			boundary := (k.class <= cWord || k.class == greedy) && !k.link
			if boundary && k.n >= c.min && restLength(&c, &k) >= c.min {
				return fmt.Errorf("piece %d has %d units (< %d), but piece %d could end at byte %d (%d units) and leave %d after it",
					i, Length(p), c.min, j, k.bytes, k.n, restLength(&c, &k))
			}
		}
	}
	return nil
}

// restLength renders the text after k as one piece at c's limit: its Length, or more than the limit
// when it does not fit.
func restLength(c *cutter, k *cut) int {
	p, carry := skip(c.toks, k.resume(c.toks), k.stack)
	if p.t >= len(c.toks) {
		return 0
	}
	var discard []cut
	r := c.piece(p, carry, run{all: &discard})
	if r.long {
		return c.max + 1
	}
	return Length(r.s)
}

// FuzzRender renders random Markdown in every dialect: never panics, valid markup, no mass mention,
// and Split with room for everything gives exactly the rendering.
func FuzzRender(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		for _, d := range dialects {
			r := Render(md, d)
			if r == "" {
				continue
			}
			if err := checkPiece(r, d, 0); err != nil {
				t.Fatalf("%v: %v\n%q", d, err, r)
			}
			if got := Split(md, d, Length(r)); len(got) != 1 || got[0] != r {
				t.Fatalf("%v: Split at Length(Render) = %q, want [%q]", d, got, r)
			}
		}
	})
}
