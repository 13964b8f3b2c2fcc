package render

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// want holds the expected rendering per dialect.
type want map[Dialect]string

func TestRender(t *testing.T) {
	tests := []struct {
		name string
		md   string
		want want
	}{{
		name: "emphasis and heading",
		md:   "## Plan\n\nThis is **bold**, *italic*, ~~gone~~ and `code`.",
		want: want{
			Plain:           "Plan\n\nThis is bold, italic, gone and code.",
			SlackMrkdwn:     "*Plan*\n\nThis is *bold*, _italic_, ~gone~ and `code`.",
			DiscordMarkdown: "## Plan\n\nThis is **bold**, *italic*, ~~gone~~ and `code`.",
			TelegramHTML:    "<b>Plan</b>\n\nThis is <b>bold</b>, <i>italic</i>, <s>gone</s> and <code>code</code>.",
		},
	}, {
		name: "deep heading and nested bold",
		md:   "#### **Deep** heading",
		want: want{
			Plain:           "Deep heading",
			SlackMrkdwn:     "*Deep heading*",
			DiscordMarkdown: "**Deep heading**",
			TelegramHTML:    "<b>Deep heading</b>",
		},
	}, {
		name: "code fence with language and specials",
		md:   "```go\nif a < b && c > d {\n\tfmt.Println(\"<hi>\")\n}\n```",
		want: want{
			Plain:           "if a < b && c > d {\n\tfmt.Println(\"<hi>\")\n}",
			SlackMrkdwn:     "```\nif a &lt; b &amp;&amp; c &gt; d {\n\tfmt.Println(\"&lt;hi&gt;\")\n}\n```",
			DiscordMarkdown: "```go\nif a < b && c > d {\n\tfmt.Println(\"<hi>\")\n}\n```",
			TelegramHTML:    "<pre><code class=\"language-go\">if a &lt; b &amp;&amp; c &gt; d {\n\tfmt.Println(\"&lt;hi&gt;\")\n}</code></pre>",
		},
	}, {
		name: "fence inside code cannot close it",
		md:   "~~~\nprint('```')\n~~~",
		want: want{
			Plain:           "print('```')",
			SlackMrkdwn:     "```\nprint('``\u200b`')\n```",
			DiscordMarkdown: "```\nprint('``\u200b`')\n```",
			TelegramHTML:    "<pre>print('```')</pre>",
		},
	}, {
		name: "nested lists",
		md:   "- one\n- two\n  - two a\n  - two b\n\n1. first\n2. second",
		want: want{
			Plain:           "• one\n• two\n  • two a\n  • two b\n\n1. first\n2. second",
			SlackMrkdwn:     "• one\n• two\n  • two a\n  • two b\n\n1. first\n2. second",
			DiscordMarkdown: "- one\n- two\n  - two a\n  - two b\n\n1. first\n2. second",
			TelegramHTML:    "• one\n• two\n  • two a\n  • two b\n\n1. first\n2. second",
		},
	}, {
		name: "links",
		md:   "See [the docs](https://ex.com/a?b=1&c=2), <https://go.dev>, and [local](file.md).",
		want: want{
			Plain:           "See the docs (https://ex.com/a?b=1&c=2), https://go.dev, and local (file.md).",
			SlackMrkdwn:     "See <https://ex.com/a?b=1&amp;c=2|the docs>, <https://go.dev|https://go.dev>, and local (file.md).",
			DiscordMarkdown: "See [the docs](https://ex.com/a?b=1&c=2), https://go.dev, and local (file.md).",
			TelegramHTML:    "See <a href=\"https://ex.com/a?b=1&amp;c=2\">the docs</a>, <a href=\"https://go.dev\">https://go.dev</a>, and local (file.md).",
		},
	}, {
		name: "link label specials",
		md:   "[a|b > c *d*](https://ex.com/x y)",
		want: want{
			Plain:           "[a|b > c d](https://ex.com/x y)",
			SlackMrkdwn:     "[a|b &gt; c _d_](https://ex.com/x y)",
			DiscordMarkdown: "\\[a\\|b > c *d*\\](https://ex.com/x y)",
			TelegramHTML:    "[a|b &gt; c <i>d</i>](https://ex.com/x y)",
		},
	}, {
		name: "link label with pipe and formatting",
		md:   "[a|b > c *d*](<https://ex.com/x y>)",
		want: want{
			Plain:           "a|b > c d (https://ex.com/x y)",
			SlackMrkdwn:     "<https://ex.com/x%20y|a∣b &gt; c d>",
			DiscordMarkdown: "[a\\|b > c *d*](https://ex.com/x%20y)",
			TelegramHTML:    "<a href=\"https://ex.com/x%20y\">a|b &gt; c <i>d</i></a>",
		},
	}, {
		name: "unsafe link scheme is text",
		md:   "[click](javascript:alert(1))",
		want: want{
			Plain:           "click (javascript:alert(1))",
			SlackMrkdwn:     "click (javascript:alert(1))",
			DiscordMarkdown: "click (javascript:alert(1))",
			TelegramHTML:    "click (javascript:alert(1))",
		},
	}, {
		name: "table",
		md:   "| Name | Count | Note |\n|:-----|------:|:----:|\n| 中文 | 1 | ok |\n| x | 22 | 🎉 |",
		want: want{
			Plain:           "Name | Count | Note\n-----+-------+-----\n中文 |     1 |  ok\nx    |    22 |  🎉",
			SlackMrkdwn:     "```\nName | Count | Note\n-----+-------+-----\n中文 |     1 |  ok\nx    |    22 |  🎉\n```",
			DiscordMarkdown: "```\nName | Count | Note\n-----+-------+-----\n中文 |     1 |  ok\nx    |    22 |  🎉\n```",
			TelegramHTML:    "<pre>Name | Count | Note\n-----+-------+-----\n中文 |     1 |  ok\nx    |    22 |  🎉</pre>",
		},
	}, {
		name: "raw html is text",
		md:   "<script>alert('x')</script>\n\nInline <b>bold?</b> & <img src=x onerror=y>",
		want: want{
			Plain:           "<script>alert('x')</script>\n\nInline <b>bold?</b> & <img src=x onerror=y>",
			SlackMrkdwn:     "&lt;script&gt;alert('x')&lt;/script&gt;\n\nInline &lt;b&gt;bold?&lt;/b&gt; &amp; &lt;img src=x onerror=y&gt;",
			DiscordMarkdown: "<script>alert('x')</script>\n\nInline <b>bold?</b> & <img src=x onerror=y>",
			TelegramHTML:    "&lt;script&gt;alert('x')&lt;/script&gt;\n\nInline &lt;b&gt;bold?&lt;/b&gt; &amp; &lt;img src=x onerror=y&gt;",
		},
	}, {
		name: "mass mentions",
		md:   "Hey @everyone and @Here, <!channel> <@U123> <@&42> <#7> `@channel`",
		want: want{
			// The text stays as written: Slack shows <…> as text, Discord
			// posts with allowed_mentions none, Telegram has no mass
			// mentions, and plain text is escaped by each adapter (or goes
			// to a terminal).
			Plain:           "Hey @everyone and @Here, <!channel> <@U123> <@&42> <#7> @channel",
			SlackMrkdwn:     "Hey @everyone and @Here, &lt;!channel&gt; &lt;@U123&gt; &lt;@&amp;42&gt; &lt;#7&gt; `@channel`",
			DiscordMarkdown: "Hey @everyone and @Here, <!channel> <@U123> <@&42> <#7> `@channel`",
			TelegramHTML:    "Hey @everyone and @Here, &lt;!channel&gt; &lt;@U123&gt; &lt;@&amp;42&gt; &lt;#7&gt; <code>@channel</code>",
		},
	}, {
		name: "markdown specials in text",
		md:   "a\\*b\\* 2*3 snake_case \\~tilde\\~ \\# not heading\n\\- not list\n1\\. not ordered",
		want: want{
			Plain:           "a*b* 2*3 snake_case ~tilde~ # not heading\n- not list\n1. not ordered",
			SlackMrkdwn:     "a*b* 2*3 snake_case ~tilde~ # not heading\n- not list\n1. not ordered",
			DiscordMarkdown: "a\\*b\\* 2\\*3 snake\\_case \\~tilde\\~ # not heading\n\\- not list\n1\\. not ordered",
			TelegramHTML:    "a*b* 2*3 snake_case ~tilde~ # not heading\n- not list\n1. not ordered",
		},
	}, {
		name: "block quote with list",
		md:   "> Note:\n> - a\n> - b",
		want: want{
			Plain:           "│ Note:\n│ \n│ • a\n│ • b"[:0] + "│ Note:\n│\n│ • a\n│ • b",
			SlackMrkdwn:     "> Note:\n>\n> • a\n> • b",
			DiscordMarkdown: "> Note:\n>\n> - a\n> - b",
			TelegramHTML:    "<blockquote>Note:\n\n• a\n• b</blockquote>",
		},
	}, {
		name: "code in list item",
		md:   "1. Run:\n   ```sh\n   go test\n   go vet\n   ```\n2. Done",
		want: want{
			Plain:           "1. Run:\n   go test\n   go vet\n2. Done",
			SlackMrkdwn:     "1. Run:\n   ```\n   go test\n   go vet\n   ```\n2. Done",
			DiscordMarkdown: "1. Run:\n   ```sh\n   go test\n   go vet\n   ```\n2. Done",
			TelegramHTML:    "1. Run:\n<pre><code class=\"language-sh\">go test\ngo vet</code></pre>\n2. Done",
		},
	}, {
		name: "cjk and emoji",
		md:   "日本語の**テキスト**と絵文字 👩‍💻🎉",
		want: want{
			Plain:           "日本語のテキストと絵文字 👩‍💻🎉",
			SlackMrkdwn:     "日本語の*テキスト*と絵文字 👩‍💻🎉",
			DiscordMarkdown: "日本語の**テキスト**と絵文字 👩‍💻🎉",
			TelegramHTML:    "日本語の<b>テキスト</b>と絵文字 👩‍💻🎉",
		},
	}, {
		name: "entities and escapes",
		md:   "AT&amp;T &copy; &#x263A; \\<tag\\>",
		want: want{
			Plain:           "AT&T © ☺ <tag>",
			SlackMrkdwn:     "AT&amp;T © ☺ &lt;tag&gt;",
			DiscordMarkdown: "AT&T © ☺ <tag>",
			TelegramHTML:    "AT&amp;T © ☺ &lt;tag&gt;",
		},
	}, {
		name: "thematic break and image",
		md:   "above\n\n---\n\n![diagram](https://ex.com/d.png)",
		want: want{
			Plain:           "above\n\n" + rule + "\n\ndiagram (https://ex.com/d.png)",
			SlackMrkdwn:     "above\n\n" + rule + "\n\n<https://ex.com/d.png|diagram>",
			DiscordMarkdown: "above\n\n" + rule + "\n\n[diagram](https://ex.com/d.png)",
			TelegramHTML:    "above\n\n" + rule + "\n\n<a href=\"https://ex.com/d.png\">diagram</a>",
		},
	}}
	for _, tt := range tests {
		for _, d := range dialects {
			t.Run(tt.name+"/"+d.String(), func(t *testing.T) {
				got := Render(tt.md, d)
				if diff := cmp.Diff(tt.want[d], got); diff != "" {
					t.Errorf("Render(%q) (-want +got):\n%s", tt.md, diff)
				}
				if err := checkPiece(got, d, 0); err != nil {
					t.Errorf("invalid rendering: %v", err)
				}
			})
		}
	}
}

func TestEscapeMarkdown(t *testing.T) {
	inputs := []string{
		"plain words",
		"*not bold* _not it_ `not code` [not](link) <b>not html</b> &amp; # not heading",
		"    not code\n- not a list\n1. not ordered\n> not quoted\n---",
		"back\\slash | pipe ~~ ~strike~~ !bang",
	}
	for _, in := range inputs {
		got := Render(EscapeMarkdown(in), Plain)
		want := strings.ReplaceAll(in, "\n", "\n") // Plain shows the text exactly
		if got != want {
			t.Errorf("Render(EscapeMarkdown(%q), Plain):\n%s", in, cmp.Diff(want, got))
		}
	}
}

func TestQuoteMarkdown(t *testing.T) {
	tests := []struct {
		in   string
		d    Dialect
		want string
	}{
		{"", TelegramHTML, ""},
		{"thinking about *x* <y>\n\nthen @everyone", TelegramHTML, "<blockquote>thinking about *x* &lt;y&gt;\n\nthen @everyone</blockquote>"},
		{"thinking about *x*\nline two", SlackMrkdwn, "> thinking about *x*\n> line two"},
		{"a # b\n- c", DiscordMarkdown, "> a # b\n> \\- c"},
	}
	for _, tt := range tests {
		got := Render(QuoteMarkdown(tt.in), tt.d)
		if got != tt.want {
			t.Errorf("Render(QuoteMarkdown(%q), %v):\n%s", tt.in, tt.d, cmp.Diff(tt.want, got))
		}
	}
	// Prepended to an answer, the quote stays apart from it.
	got := Render(QuoteMarkdown("hmm")+"**Answer**", TelegramHTML)
	if want := "<blockquote>hmm</blockquote>\n\n<b>Answer</b>"; got != want {
		t.Errorf("quote + answer:\n%s", cmp.Diff(want, got))
	}
}

// Bare URLs reach every platform as written: no backslashes on Discord
// (which links them itself), nothing inserted anywhere.
func TestBareURLsPassUnchanged(t *testing.T) {
	const url = "https://github.com/acme/my_repo/blob/main/a_b*c.go"
	for _, d := range []Dialect{SlackMrkdwn, DiscordMarkdown, TelegramHTML} {
		got := Render("see "+url+" and <"+url+">", d)
		if strings.Count(got, url) < 2 && d != TelegramHTML || !strings.Contains(got, url) {
			t.Errorf("%s: %q; want the URL unchanged", d, got)
		}
		if strings.Contains(got, `\_`) || strings.Contains(got, "\u2060") {
			t.Errorf("%s: %q changes the URL", d, got)
		}
	}
}
