package render

import (
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
// piece fits, is non-empty and valid (Telegram tags balanced), and no mass mention survives.
func FuzzSplit(f *testing.F) {
	for i, s := range fuzzSeeds {
		f.Add(s, uint16(64+i*37))
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
		}
	})
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
