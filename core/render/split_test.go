package render

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"
)

func answer(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile("testdata/answer.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSplitEmpty(t *testing.T) {
	for _, d := range dialects {
		for _, in := range []string{"", " ", "\n\n\t \n", "<!-- -->"[:0]} {
			if got := Split(in, d, 100); got != nil {
				t.Errorf("Split(%q, %v) = %q, want nil", in, d, got)
			}
			if got := Render(in, d); got != "" {
				t.Errorf("Render(%q, %v) = %q, want empty", in, d, got)
			}
		}
	}
}

// TestSplitLimits splits a realistic answer at many limits and checks every piece: within the
// limit, not empty, valid markup for its dialect, no mass mention.
func TestSplitLimits(t *testing.T) {
	md := answer(t)
	for _, d := range dialects {
		for _, max := range []int{16, 40, 64, 100, 177, 300, 500, 1000, 2000, 4096} {
			pieces := Split(md, d, max)
			if len(pieces) == 0 {
				t.Fatalf("%v max %d: no pieces", d, max)
			}
			for i, p := range pieces {
				if err := checkPiece(p, d, max); err != nil {
					t.Errorf("%v max %d piece %d: %v\n%s", d, max, i, err, p)
				}
			}
		}
	}
}

func TestSplitWholeFits(t *testing.T) {
	md := answer(t)
	for _, d := range dialects {
		r := Render(md, d)
		got := Split(md, d, Length(r))
		if diff := cmp.Diff([]string{r}, got); diff != "" {
			t.Errorf("%v: Split at Length(Render) is not one piece (-want +got):\n%s", d, diff)
		}
		if got := Split(md, d, 0); !cmp.Equal(got, []string{r}) {
			t.Errorf("%v: Split with no limit != Render", d)
		}
	}
}

// TestSplitBetweenBlocks checks that blocks that fit are never cut.
func TestSplitBetweenBlocks(t *testing.T) {
	md := "First paragraph, short.\n\nSecond paragraph is a little longer than the first one.\n\nThird one."
	got := Split(md, Plain, 60)
	want := []string{"First paragraph, short.", "Second paragraph is a little longer than the first one.", "Third one."}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	got = Split(md, Plain, 85)
	want = []string{"First paragraph, short.\n\nSecond paragraph is a little longer than the first one.", "Third one."}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestSplitInsideParagraph(t *testing.T) {
	tests := []struct {
		name string
		md   string
		d    Dialect
		max  int
		want []string
	}{{
		name: "line before word",
		md:   "alpha beta gamma\\\ndelta epsilon zeta eta theta",
		d:    Plain, max: 30,
		want: []string{"alpha beta gamma", "delta epsilon zeta eta theta"},
	}, {
		name: "words",
		md:   "alpha beta gamma delta epsilon zeta eta theta",
		d:    Plain, max: 20,
		want: []string{"alpha beta gamma", "delta epsilon zeta", "eta theta"},
	}, {
		name: "runes when no space",
		md:   strings.Repeat("x", 40),
		d:    Plain, max: 16,
		want: []string{strings.Repeat("x", 16), strings.Repeat("x", 16), strings.Repeat("x", 8)},
	}, {
		name: "span closed and reopened",
		md:   "**one two three four five six**",
		d:    TelegramHTML, max: 24,
		want: []string{"<b>one two three</b>", "<b>four five six</b>"},
	}, {
		name: "mrkdwn span closed and reopened",
		md:   "plain *one two three four five six*",
		d:    SlackMrkdwn, max: 20,
		want: []string{"plain _one two_", "_three four five_", "_six_"},
	}, {
		name: "entity never cut",
		md:   "&&&&&&&&&&&&&&&&&&&&",
		d:    TelegramHTML, max: 17,
		want: []string{"&amp;&amp;&amp;", "&amp;&amp;&amp;", "&amp;&amp;&amp;", "&amp;&amp;&amp;", "&amp;&amp;&amp;", "&amp;&amp;&amp;", "&amp;&amp;"},
	}, {
		name: "emoji sequence kept whole",
		md:   "aaaaaaaaaaaaa👩‍💻 b",
		d:    Plain, max: 16,
		want: []string{"aaaaaaaaaaaaa", "👩‍💻 b"},
	}, {
		name: "quote prefix repeated",
		md:   "> alpha beta gamma delta epsilon",
		d:    SlackMrkdwn, max: 20,
		want: []string{"> alpha beta gamma", "> delta epsilon"},
	}, {
		name: "list item cut keeps indentation",
		md:   "- alpha beta gamma delta epsilon\n- zeta",
		d:    Plain, max: 20,
		want: []string{"• alpha beta gamma", "  delta epsilon", "• zeta"},
	}, {
		name: "link reopened",
		md:   "[alpha beta gamma delta](https://e.io/x) " + strings.Repeat("z", 140),
		d:    TelegramHTML, max: 120,
		want: []string{`<a href="https://e.io/x">alpha beta gamma delta</a>`, strings.Repeat("z", 120), strings.Repeat("z", 20)},
	}, {
		name: "long link label reopened",
		md:   "[" + strings.Repeat("label ", 30) + "](https://e.io/x)",
		d:    TelegramHTML, max: 130,
		want: []string{
			`<a href="https://e.io/x">` + strings.TrimSpace(strings.Repeat("label ", 17)) + `</a>`,
			`<a href="https://e.io/x">` + strings.Repeat("label ", 13) + `</a>`, // the label's own trailing space
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Split(tt.md, tt.d, tt.max)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Split(%q, %v, %d) (-want +got):\n%s", tt.md, tt.d, tt.max, diff)
			}
			for i, p := range got {
				if err := checkPiece(p, tt.d, tt.max); err != nil {
					t.Errorf("piece %d: %v", i, err)
				}
			}
		})
	}
}

// TestSplitCodeFence checks that a long code block is cut at line boundaries with its fence (or
// <pre>) closed and reopened with the same language.
func TestSplitCodeFence(t *testing.T) {
	var code strings.Builder
	for i := range 30 {
		code.WriteString("fmt.Println(\"line " + strings.Repeat("=", i%7) + "\")\n")
	}
	md := "Here is the program, line by line.\n\n```go\n" + code.String() + "```\n\nOutro."
	tests := []struct {
		d           Dialect
		open, close string
	}{
		{DiscordMarkdown, "```go\n", "\n```"},
		{SlackMrkdwn, "```\n", "\n```"},
		{TelegramHTML, `<pre><code class="language-go">`, "</code></pre>"},
	}
	for _, tt := range tests {
		pieces := Split(md, tt.d, 200)
		if len(pieces) < 4 {
			t.Fatalf("%v: %d pieces, want the code block cut", tt.d, len(pieces))
		}
		last := len(pieces) - 1
		if pieces[0] != "Here is the program, line by line." || !strings.HasSuffix(pieces[last], tt.close+"\n\nOutro.") {
			t.Errorf("%v: first/last pieces %q, %q: the code block should start a piece and end packed with the next block", tt.d, pieces[0], pieces[last])
		}
		pieces[last] = strings.TrimSuffix(pieces[last], "\n\nOutro.")
		var lines []string
		for _, p := range pieces[1:] {
			if !strings.HasPrefix(p, tt.open) || !strings.HasSuffix(p, tt.close) {
				t.Errorf("%v: piece not fenced:\n%s", tt.d, p)
				continue
			}
			lines = append(lines, strings.Split(strings.TrimSuffix(strings.TrimPrefix(p, tt.open), tt.close), "\n")...)
		}
		want := strings.Split(strings.TrimSuffix(code.String(), "\n"), "\n")
		if diff := cmp.Diff(want, lines); diff != "" {
			t.Errorf("%v: code lines not preserved across pieces (-want +got):\n%s", tt.d, diff)
		}
	}
}

// TestSplitPlainKeepsText checks that the pieces of a Plain split carry all the visible text of
// the rendering, in order.
func TestSplitPlainKeepsText(t *testing.T) {
	md := answer(t)
	visible := func(s string) string {
		return strings.Map(func(r rune) rune {
			if unicode.IsSpace(r) || r == '│' {
				return -1
			}
			return r
		}, s)
	}
	want := visible(Render(md, Plain))
	for _, max := range []int{16, 50, 120, 333, 1000} {
		got := visible(strings.Join(Split(md, Plain, max), ""))
		if got != want {
			t.Errorf("max %d: visible text changed:\n%s", max, cmp.Diff(want, got))
		}
	}
}

// TestSplitGrowing simulates the streaming presenter: the answer grows and is re-split on every
// edit; pieces before the last two must already be final.
func TestSplitGrowing(t *testing.T) {
	md := answer(t)
	for _, d := range dialects {
		for _, max := range []int{200, 500} {
			final := Split(md, d, max)
			for n := 1; n <= len(md); n += 17 {
				cur := Split(md[:n], d, max)
				for i := 0; i < len(cur)-2; i++ {
					if i >= len(final) || cur[i] != final[i] {
						t.Fatalf("%v max %d: after %d bytes piece %d of %d is not final:\n%s", d, max, n, i, len(cur), cmp.Diff(final[min(i, len(final)-1)], cur[i]))
					}
				}
			}
		}
	}
}

func TestSplitDeterministic(t *testing.T) {
	md := answer(t)
	for _, d := range dialects {
		a, b := Split(md, d, 300), Split(md, d, 300)
		if !cmp.Equal(a, b) {
			t.Errorf("%v: two splits differ", d)
		}
	}
}

// TestSplitUnclosed checks partial Markdown mid-stream: an unclosed fence is code to the end, an
// unclosed ** is literal text.
func TestSplitUnclosed(t *testing.T) {
	tests := []struct {
		md   string
		d    Dialect
		want string
	}{
		{"Look:\n\n```go\nfunc f() {\n", DiscordMarkdown, "Look:\n\n```go\nfunc f() {\n```"},
		{"Look:\n\n```go\nfunc f() {\n", TelegramHTML, "Look:\n\n<pre><code class=\"language-go\">func f() {</code></pre>"},
		{"Look:\n\n```", SlackMrkdwn, "Look:"},
		{"some **bold", TelegramHTML, "some **bold"},
		{"some **bold", DiscordMarkdown, `some \*\*bold`},
	}
	for _, tt := range tests {
		if got := Render(tt.md, tt.d); got != tt.want {
			t.Errorf("Render(%q, %v):\n%s", tt.md, tt.d, cmp.Diff(tt.want, got))
		}
	}
}

func TestLength(t *testing.T) {
	tests := []struct {
		s    string
		want int
	}{{"", 0}, {"abc", 3}, {"é", 1}, {"日本", 2}, {"🎉", 2}, {"👩‍💻", 5}}
	for _, tt := range tests {
		if got := Length(tt.s); got != tt.want {
			t.Errorf("Length(%q) = %d, want %d", tt.s, got, tt.want)
		}
	}
}

// A heading stays with the block after it: the cut goes before the
// heading, never leaving it alone at the end of a piece or as a piece.
func TestSplitKeepsHeadingWithItsBlock(t *testing.T) {
	para := strings.Repeat("word ", 50)
	md := para + "\n\n## Results\n\n" + para
	for _, d := range dialects {
		pieces := Split(md, d, 320)
		if len(pieces) != 2 {
			t.Fatalf("%s: %d pieces, want 2: %q", d, len(pieces), pieces)
		}
		if strings.Contains(pieces[0], "Results") || !strings.Contains(pieces[1], "Results") {
			t.Errorf("%s: the heading is not with its paragraph: %q", d, pieces)
		}
	}
}

// A code block continued in a new Telegram message keeps its first line's
// indentation: Telegram trims a message's leading whitespace, so the piece
// starts with a continuation line instead.
func TestTelegramContinuedCodeKeepsIndentation(t *testing.T) {
	var b strings.Builder
	b.WriteString("```go\n")
	for i := range 20 {
		fmt.Fprintf(&b, "    line %02d indented\n", i)
	}
	b.WriteString("```\n")
	pieces := Split(b.String(), TelegramHTML, 200)
	if len(pieces) < 2 {
		t.Fatalf("%d pieces", len(pieces))
	}
	for i, p := range pieces {
		if Length(p) > 200 {
			t.Errorf("piece %d has %d units", i, Length(p))
		}
		if i > 0 && !strings.HasPrefix(p, "…\n<pre>") {
			t.Errorf("piece %d starts %.50q; want the continuation line, then the code", i, p)
		}
		if i > 0 && !strings.Contains(p, ">    line ") {
			t.Errorf("piece %d lost the indentation: %.60q", i, p)
		}
	}
}
