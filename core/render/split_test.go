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

// TestSplitNoNearEmptyPiece checks, in every dialect, the cases where a greedy split leaves a
// near-empty piece (shorter than minPiece(max)) and a boundary avoids it: the previous cut moves
// back, every piece still fits, and what belongs together stays together.
func TestSplitNoNearEmptyPiece(t *testing.T) {
	const max = 400 // minPiece: 50
	words := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "w%02d", i%100)
		}
		return b.String()
	}
	var code strings.Builder
	code.WriteString("Here is the program, line by line:\n\n```go\n")
	for i := range 21 {
		fmt.Fprintf(&code, "    x%02d := step(%02d)\n", i, i)
	}
	code.WriteString("```")
	var list strings.Builder
	for i := range 24 {
		fmt.Fprintf(&list, "- item %02d is here\n", i)
	}
	tests := []struct {
		name  string
		md    string
		check func(t *testing.T, d Dialect, pieces []string)
	}{{
		name: "heading and its block at the limit",
		md:   words(97) + "\n\n## Results\n\nAll good.",
		check: func(t *testing.T, d Dialect, pieces []string) {
			last := pieces[len(pieces)-1]
			if !strings.Contains(last, "Results") || !strings.HasSuffix(last, "All good.") {
				t.Errorf("the heading is not with its block in the last piece: %q", last)
			}
		},
	}, {
		name: "footer alone",
		md:   words(99) + "\n\n_1.2k tokens_",
		check: func(t *testing.T, d Dialect, pieces []string) {
			if last := pieces[len(pieces)-1]; !strings.Contains(last, "w98") || !strings.Contains(last, "tokens") {
				t.Errorf("the footer is not with the text before it: %q", last)
			}
		},
	}, {
		name: "code block continued",
		md:   code.String(),
		check: func(t *testing.T, d Dialect, pieces []string) {
			if d == Plain {
				return
			}
			for i, p := range pieces[1:] {
				if d == TelegramHTML && !strings.HasPrefix(p, "…\n<pre>") {
					t.Errorf("piece %d starts %.20q: want the continuation line, then the code", i+1, p)
				}
				if !strings.Contains(p, "    x") {
					t.Errorf("piece %d lost the code's indentation: %q", i+1, p)
				}
			}
			if joined := strings.Join(pieces, "\n"); !strings.Contains(joined, "x00 := step(00)") || !strings.Contains(joined, "x20 := step(20)") {
				t.Errorf("code lines lost: %q", pieces)
			}
		},
	}, {
		name: "list items",
		md:   list.String(),
		check: func(t *testing.T, d Dialect, pieces []string) {
			for i := range 24 {
				item := fmt.Sprintf("item %02d is here", i)
				if !strings.Contains(strings.Join(pieces, "\x00"), item) {
					t.Errorf("%q was cut: %q", item, pieces)
				}
			}
		},
	}, {
		name: "remainder of one word",
		md:   words(101),
		check: func(t *testing.T, d Dialect, pieces []string) {
			if got := strings.Fields(strings.Join(pieces, " ")); len(got) != 101 {
				t.Errorf("%d words, want 101", len(got))
			}
		},
	}, {
		name: "short paragraph before a long one",
		md:   "Intro.\n\n" + words(110),
		check: func(t *testing.T, d Dialect, pieces []string) {
			if !strings.HasPrefix(pieces[0], "Intro.\n\nw00") {
				t.Errorf("the intro stands alone: %q", pieces[0])
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, d := range dialects {
				if whole := Render(tt.md, d); Length(whole) <= max {
					t.Fatalf("%v: the case fits one piece (%d units): it tests nothing", d, Length(whole))
				}
				// The greedy split, which these cases are built to trip, leaves a near-empty piece.
				toks, _ := tokenize(tt.md, d, max)
				greedy := (&cutter{toks: toks, d: d, max: max}).pieces()
				if short := shortest(greedy); Length(short.s) >= minPiece(max) {
					t.Fatalf("%v: the greedy split has no near-empty piece (shortest %d units): the case tests nothing", d, Length(short.s))
				}
				pieces := Split(tt.md, d, max)
				for i, p := range pieces {
					if err := checkPiece(p, d, max); err != nil {
						t.Errorf("%v piece %d: %v", d, i, err)
					}
					if Length(p) < minPiece(max) {
						t.Errorf("%v piece %d is near-empty (%d units): %q", d, i, Length(p), p)
					}
				}
				tt.check(t, d, pieces)
			}
		})
	}
}

func shortest(spans []span) span {
	s := spans[0]
	for _, sp := range spans[1:] {
		if Length(sp.s) < Length(s.s) {
			s = sp
		}
	}
	return s
}

// A near-empty piece remains only where no boundary avoids it: here a
// bare URL that Discord must get whole leaves no cut between "Hi there."
// and the end of the piece.
func TestSplitNearEmptyUnavoidable(t *testing.T) {
	url := "https://example.com/" + strings.Repeat("p", 175)
	got := Split("Hi there. <"+url+">", DiscordMarkdown, 200)
	want := []string{"Hi there.", url}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if err := checkNotNearEmpty("Hi there. <"+url+">", DiscordMarkdown, 200, got); err != nil {
		t.Error(err)
	}
}

// TestSplitGrowingStable simulates the streaming presenter re-splitting a reply that grows word by
// word. Once a piece has a successor, its cut moves back only where the greedy split's does too,
// and rebalancing moves it forward at most once more than the greedy split does (when the text
// after the greedy cut stops being near-empty); the first piece is never more than 2·minPiece
// shorter than the greedy split's where a boundary lies in that stretch.
func TestSplitGrowingStable(t *testing.T) {
	t.Parallel()
	// No tables, whose columns widen as rows arrive, and no indented code, which takes room from
	// every Telegram piece once continued: both re-lay earlier pieces in a greedy split too.
	var b strings.Builder
	for i := range 6 {
		fmt.Fprintf(&b, "## Part %d\n\n", i)
		for j := range 3 + i%4 {
			fmt.Fprintf(&b, "Sentence %d of part %d has **some bold words** and a [link](https://e.io/%d) in it. ", j, i, j)
		}
		b.WriteString("\n\n- first item\n- second item, a little longer than the first\n\n")
		if i%3 == 0 {
			b.WriteString("```go\nfunc f() error {\nreturn nil\n}\n```\n\n")
		}
	}
	md := b.String() + "_1.2k tokens · 3.4s_"
	var ends []int
	for i := 1; i < len(md); i++ {
		if md[i] == ' ' || md[i] == '\n' {
			ends = append(ends, i)
		}
	}
	ends = append(ends, len(md))
	for _, d := range dialects {
		for _, max := range []int{64, 250, 700} {
			// Each dialect and width is a split per word of the text: CPU
			// work, spread over the machine's cores.
			t.Run(fmt.Sprintf("%v/max%d", d, max), func(t *testing.T) {
				t.Parallel()
				type track struct{ last, grew, shrank int }
				var rebal, greedy []track
				// follow records how the pieces that have a successor changed; it returns which shrank.
				follow := func(tr *[]track, lengths []int) map[int]bool {
					shrank := map[int]bool{}
					for i := 0; i+1 < len(lengths); i++ {
						if i == len(*tr) {
							*tr = append(*tr, track{})
						}
						p := &(*tr)[i]
						switch {
						case p.last == 0:
						case lengths[i] < p.last:
							p.shrank++
							shrank[i] = true
						case lengths[i] > p.last:
							p.grew++
						}
						p.last = lengths[i]
					}
					return shrank
				}
				for _, n := range ends {
					toks, _ := tokenize(md[:n], d, max)
					c, spans := layout(toks, d, max)
					g := (&cutter{toks: toks, d: d, max: c.max}).pieces()
					shrank, greedyShrank := follow(&rebal, lengths(spans)), follow(&greedy, lengths(g))
					for i := range shrank {
						// Greedy pieces shrink only where the text before them parses anew (Telegram:
						// a continued indented code line takes room from every piece).
						if !greedyShrank[i] {
							t.Errorf("%v max %d at %d bytes: piece %d shrank to %d units, the greedy one did not", d, max, n, i, Length(spans[i].s))
						}
					}
					if len(spans) > 1 && len(g) > 1 && Length(spans[0].s) < Length(g[0].s)-2*c.min && boundaryIn(c, Length(g[0].s)-2*c.min, Length(g[0].s)-c.min) {
						t.Errorf("%v max %d at %d bytes: the first piece has %d units, the greedy one %d", d, max, n, Length(spans[0].s), Length(g[0].s))
					}
				}
				for i := range rebal {
					if i < len(greedy) && rebal[i].grew > greedy[i].grew+1 {
						t.Errorf("%v max %d: piece %d grew %d times, the greedy one %d", d, max, i, rebal[i].grew, greedy[i].grew)
					}
				}
			})
		}
	}
}

// boundaryIn reports whether the first piece of c's split can end at a word boundary or better,
// outside links, leaving it between lo and hi units long.
func boundaryIn(c *cutter, lo, hi int) bool {
	var all []cut
	c.piece(pos{}, nil, run{all: &all})
	for _, k := range all {
		if k.class <= cWord && !k.link && k.n >= lo && k.n <= hi {
			return true
		}
	}
	return false
}

func lengths(spans []span) []int {
	out := make([]int, len(spans))
	for i, sp := range spans {
		out[i] = Length(sp.s)
	}
	return out
}
