package render

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// md is safe for concurrent use: goldmark parses each call with its own
// context. Built on first use: every agentbridge process links render,
// only those that post replies parse Markdown.
var md = sync.OnceValue(func() goldmark.Markdown {
	return goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough))
})

const rule = "──────────"

// Inline styles tracked so a style is never opened inside itself (`**a **b** c**`).
const (
	sBold = iota
	sItalic
	sStrike
	nStyles
)

// builder walks a goldmark AST once and produces the token stream for one dialect.
type builder struct {
	d      Dialect
	src    []byte
	budget int // the piece limit, 0 if none; links whose markup would eat too much of it degrade to text
	toks   []token

	pend     strings.Builder // coalesced text not yet made a token, so defusing sees whole runs
	pendMode mode

	styles   [nStyles]int
	links    int  // enclosing links
	quotes   int  // enclosing block quotes
	degraded bool // a link became text to fit the budget
	lists    int  // enclosing lists
}

// tokenize parses markdown once and builds the token stream for d. degraded reports that a link was
// rendered as text because its markup would take too much of budget.
func tokenize(src string, d Dialect, budget int) (toks []token, degraded bool) {
	src = strings.ToValidUTF8(src, "\uFFFD")
	src = strings.ReplaceAll(src, "\x00", "\uFFFD")
	b := &builder{d: d, src: []byte(src), budget: budget}
	doc := md().Parser().Parse(text.NewReader(b.src))
	b.blocks(doc, true)
	b.flush()
	return b.toks, b.degraded
}

func (b *builder) flush() {
	if b.pend.Len() == 0 {
		return
	}
	s := b.pend.String()
	b.pend.Reset()
	switch {
	case b.pendMode == mCodeBlock && b.d == DiscordMarkdown || b.pendMode != mCodeSpan && b.d == SlackMrkdwn:
		// A ``` inside code would end the fence early, and Slack starts a code block at a ``` in
		// text too; a zero-width space keeps it literal.
		s = breakFences(s)
	case b.pendMode == mCodeSpan && (b.d == SlackMrkdwn || b.d == DiscordMarkdown):
		// Neither Slack nor Discord can show a backtick inside inline code reliably.
		s = strings.ReplaceAll(s, "`", "ˋ")
	}
	if b.d == DiscordMarkdown && b.pendMode == mText && strings.Contains(s, "://") {
		b.bareURLs(s)
		return
	}
	b.toks = append(b.toks, token{k: kText, s: s, mode: b.pendMode})
}

// breakFences puts a zero-width space after every second backtick of a
// run of three or more, so no "```" is left (a plain ReplaceAll leaves one
// in a run of five).
func breakFences(s string) string {
	if !strings.Contains(s, "```") {
		return s
	}
	var b strings.Builder
	run := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '`' {
			run = 0
			b.WriteByte(s[i])
			continue
		}
		if run == 2 {
			b.WriteString("\u200b")
			run = 0
		}
		run++
		b.WriteByte('`')
	}
	return b.String()
}

// bareURL matches a URL written in text; trailing punctuation is not part
// of it. Built on first use, not at process start.
var bareURL = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`https?://[^\s<>]*[^\s<>.,;:!?'")\]]`)
})

// bareURLs appends Discord text with its bare URLs unescaped (mURL):
// Discord links them itself, and a backslash escape inside one
// ("my\_repo") would change the link.
func (b *builder) bareURLs(s string) {
	last := 0
	for _, m := range bareURL().FindAllStringIndex(s, -1) {
		if m[0] > last {
			b.toks = append(b.toks, token{k: kText, s: s[last:m[0]], mode: mText})
		}
		b.toks = append(b.toks, token{k: kText, s: s[m[0]:m[1]], mode: mURL})
		last = m[1]
	}
	if last < len(s) {
		b.toks = append(b.toks, token{k: kText, s: s[last:], mode: mText})
	}
}

func (b *builder) text(s string, m mode) {
	if s == "" {
		return
	}
	if m == mText && b.links > 0 && b.d == SlackMrkdwn {
		m = mLinkText
	}
	if b.pend.Len() > 0 && b.pendMode != m {
		b.flush()
	}
	b.pendMode = m
	b.pend.WriteString(s)
}

func (b *builder) push(t token) {
	b.flush()
	b.toks = append(b.toks, t)
}

func (b *builder) raw(s string, glue bool) { b.push(token{k: kRaw, s: s, glue: glue}) }
func (b *builder) open(m *marker)          { b.push(token{k: kOpen, m: m}) }
func (b *builder) close()                  { b.push(token{k: kClose}) }
func (b *builder) nl(blank bool)           { b.push(token{k: kNL, blank: blank}) }

// blocks renders parent's block children, separated by kBlock at the top level and by a line break
// (blank line if blank) inside containers. Children that render nothing leave no separator.
func (b *builder) blocks(parent ast.Node, blank bool) {
	top := parent.Kind() == ast.KindDocument
	first := true
	for c := parent.FirstChild(); c != nil; c = c.NextSibling() {
		b.flush()
		mark := len(b.toks)
		if !first {
			if top {
				// A heading belongs with the block after it: cutting
				// between them is a last resort, not a block boundary.
				_, heading := c.PreviousSibling().(*ast.Heading)
				b.push(token{k: kBlock, glue: heading})
			} else {
				b.nl(blank)
			}
		}
		start := len(b.toks)
		b.block(c)
		b.flush()
		if !hasContent(b.toks[start:]) {
			b.toks = b.toks[:mark]
			continue
		}
		first = false
	}
}

func (b *builder) block(n ast.Node) {
	switch n := n.(type) {
	case *ast.Paragraph, *ast.TextBlock:
		b.inlines(n)
	case *ast.Heading:
		b.heading(n)
	case *ast.ThematicBreak:
		b.raw(rule, false)
	case *ast.FencedCodeBlock:
		b.codeBlock(cleanLang(string(n.Language(b.src))), b.lines(n.Lines()))
	case *ast.CodeBlock:
		b.codeBlock("", b.lines(n.Lines()))
	case *ast.HTMLBlock:
		// Raw HTML is never passed through as markup: it is shown as the text the agent wrote.
		lines := b.lines(n.Lines())
		if n.HasClosure() {
			lines = append(lines, strings.TrimRight(string(n.ClosureLine.Value(b.src)), "\r\n"))
		}
		for i, l := range lines {
			if i > 0 {
				b.nl(false)
			}
			b.text(l, mText)
		}
	case *ast.Blockquote:
		b.quote(n)
	case *ast.List:
		b.list(n)
	case *east.Table:
		b.table(n)
	default:
		if n.Type() == ast.TypeInline {
			b.inline(n)
			return
		}
		b.blocks(n, true)
	}
}

func (b *builder) lines(ls *text.Segments) []string {
	out := make([]string, 0, ls.Len())
	for i := 0; i < ls.Len(); i++ {
		s := ls.At(i)
		out = append(out, strings.TrimRight(string(s.Value(b.src)), "\r\n"))
	}
	for len(out) > 0 && strings.TrimSpace(out[len(out)-1]) == "" {
		out = out[:len(out)-1]
	}
	return out
}

func (b *builder) heading(n *ast.Heading) {
	switch {
	case b.d == Plain:
		b.inlines(n)
	case b.d == DiscordMarkdown && n.Level <= 3:
		b.open(&marker{open: strings.Repeat("#", n.Level) + " "})
		b.inlines(n)
		b.close()
	default:
		b.styled(n, sBold)
	}
}

func (b *builder) codeBlock(lang string, lines []string) {
	if len(lines) == 0 {
		return
	}
	var m *marker
	switch b.d {
	case SlackMrkdwn: // Slack has no language tags
		m = &marker{open: "```", close: "```", block: true}
	case DiscordMarkdown:
		m = &marker{open: "```" + lang, close: "```", block: true}
	case TelegramHTML:
		if lang != "" {
			m = &marker{open: `<pre><code class="language-` + escapeAttr(lang) + `">`, close: "</code></pre>", verbatim: true}
		} else {
			m = &marker{open: "<pre>", close: "</pre>", verbatim: true}
		}
	default:
		m = &marker{}
	}
	b.open(m)
	for i, l := range lines {
		if i > 0 {
			b.push(token{k: kNL, mode: mCodeBlock})
		}
		b.text(l, mCodeBlock)
	}
	b.close()
}

func (b *builder) quote(n *ast.Blockquote) {
	// No platform nests quotes, so only the outermost one is marked.
	if b.quotes > 0 {
		b.blocks(n, true)
		return
	}
	var m *marker
	switch b.d {
	case TelegramHTML:
		m = &marker{open: "<blockquote>", close: "</blockquote>"}
	case Plain:
		m = &marker{prefix: "│ "}
	default:
		m = &marker{prefix: "> "}
	}
	b.quotes++
	b.open(m)
	b.blocks(n, true)
	b.close()
	b.quotes--
}

func (b *builder) list(l *ast.List) {
	b.lists++
	defer func() { b.lists-- }()
	num := l.Start
	first := true
	for item := l.FirstChild(); item != nil; item = item.NextSibling() {
		if !first {
			b.nl(!l.IsTight)
		}
		first = false
		var bullet string
		switch {
		case l.IsOrdered():
			bullet = strconv.Itoa(num) + ". "
			num++
		case b.d == DiscordMarkdown:
			bullet = "- "
		default:
			bullet = "• "
		}
		b.raw(bullet, true)
		indent := ""
		if b.lists <= 6 { // deeper lists stop indenting so prefixes stay short
			indent = strings.Repeat(" ", Length(bullet))
		}
		b.open(&marker{prefix: indent})
		b.blocks(item, !l.IsTight)
		b.close()
	}
}

func (b *builder) table(t *east.Table) {
	var rows [][]string
	for r := t.FirstChild(); r != nil; r = r.NextSibling() {
		var cells []string
		for c := r.FirstChild(); c != nil; c = c.NextSibling() {
			cells = append(cells, b.plain(c))
		}
		rows = append(rows, cells)
	}
	cols := 0
	for _, r := range rows {
		cols = max(cols, len(r))
	}
	widths := make([]int, cols)
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], width(c))
		}
	}
	var lines []string
	for ri, r := range rows {
		var sb strings.Builder
		for i := range cols {
			c := ""
			if i < len(r) {
				c = r[i]
			}
			if i > 0 {
				sb.WriteString(" | ")
			}
			pad := widths[i] - width(c)
			al := east.AlignNone
			if i < len(t.Alignments) {
				al = t.Alignments[i]
			}
			switch al {
			case east.AlignRight:
				sb.WriteString(strings.Repeat(" ", pad) + c)
			case east.AlignCenter:
				sb.WriteString(strings.Repeat(" ", pad/2) + c + strings.Repeat(" ", pad-pad/2))
			default:
				sb.WriteString(c + strings.Repeat(" ", pad))
			}
		}
		lines = append(lines, strings.TrimRight(sb.String(), " "))
		if ri == 0 {
			var sep strings.Builder
			for i, w := range widths {
				if i > 0 {
					sep.WriteString("-+-")
				}
				sep.WriteString(strings.Repeat("-", max(w, 1)))
			}
			lines = append(lines, sep.String())
		}
	}
	b.codeBlock("", lines)
}

// plain flattens n's inline content to text (for table cells).
func (b *builder) plain(n ast.Node) string {
	var sb strings.Builder
	var walk func(n ast.Node)
	walk = func(n ast.Node) {
		switch n := n.(type) {
		case *ast.Text:
			sb.WriteString(b.textValue(n))
			if n.SoftLineBreak() || n.HardLineBreak() {
				sb.WriteByte(' ')
			}
			return
		case *ast.String:
			sb.Write(n.Value)
			return
		case *ast.CodeSpan:
			sb.WriteString(b.codeText(n))
			return
		case *ast.RawHTML:
			sb.WriteString(b.segs(n.Segments))
			return
		case *ast.AutoLink:
			sb.Write(n.Label(b.src))
			return
		case *ast.Link:
			before := sb.Len()
			for c := n.FirstChild(); c != nil; c = c.NextSibling() {
				walk(c)
			}
			if d := string(n.Destination); d != "" && sb.String()[before:] != d {
				sb.WriteString(" (" + d + ")")
			}
			return
		}
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			walk(c)
		}
	}
	walk(n)
	return strings.TrimSpace(strings.ReplaceAll(sb.String(), "\n", " "))
}

func (b *builder) inlines(n ast.Node) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		b.inline(c)
	}
}

func (b *builder) inline(n ast.Node) {
	switch n := n.(type) {
	case *ast.Text:
		b.text(b.textValue(n), mText)
		if n.SoftLineBreak() || n.HardLineBreak() {
			b.nl(false)
		}
	case *ast.String:
		b.text(string(n.Value), mText)
	case *ast.CodeSpan:
		b.codeSpan(b.codeText(n))
	case *ast.Emphasis:
		if n.Level >= 2 {
			b.styled(n, sBold)
		} else {
			b.styled(n, sItalic)
		}
	case *east.Strikethrough:
		b.styled(n, sStrike)
	case *ast.Link:
		b.link(string(n.Destination), b.plain(n), func() { b.inlines(n) }, false)
	case *ast.Image:
		alt := b.plain(n)
		if alt == "" {
			alt = "image"
		}
		b.link(string(n.Destination), alt, func() { b.text(alt, mText) }, false)
	case *ast.AutoLink:
		label := string(n.Label(b.src))
		dest := label
		if n.AutoLinkType == ast.AutoLinkURL {
			dest = string(n.URL(b.src))
		}
		b.link(dest, label, func() { b.text(label, mText) }, true)
	case *ast.RawHTML:
		// Shown as the text the agent wrote, never passed as markup.
		b.text(b.segs(n.Segments), mText)
	default:
		b.inlines(n)
	}
}

func (b *builder) segs(s *text.Segments) string {
	var sb strings.Builder
	for i := 0; i < s.Len(); i++ {
		seg := s.At(i)
		sb.Write(seg.Value(b.src))
	}
	return sb.String()
}

// textValue resolves backslash escapes and character references the way CommonMark renders text.
func (b *builder) textValue(n *ast.Text) string {
	v := n.Segment.Value(b.src)
	if n.IsRaw() {
		return string(v)
	}
	return decode(v)
}

func decode(v []byte) string {
	if !bytes.ContainsAny(v, `\&`) {
		return string(v)
	}
	var sb strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '\\' && i+1 < len(v) && util.IsPunct(v[i+1]) {
			sb.WriteByte(v[i+1])
			i++
			continue
		}
		if c == '&' {
			if j := bytes.IndexByte(v[i:min(len(v), i+40)], ';'); j > 1 {
				ref := v[i : i+j+1]
				if r := util.ResolveNumericReferences(ref); !bytes.Equal(r, ref) {
					sb.Write(r)
					i += j
					continue
				}
				if r := util.ResolveEntityNames(ref); !bytes.Equal(r, ref) {
					sb.Write(r)
					i += j
					continue
				}
			}
		}
		sb.WriteByte(c)
	}
	return sb.String()
}

func (b *builder) codeText(n *ast.CodeSpan) string {
	var sb strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			sb.Write(c.Segment.Value(b.src))
		case *ast.String:
			sb.Write(c.Value)
		}
	}
	return strings.ReplaceAll(sb.String(), "\n", " ")
}

func (b *builder) codeSpan(s string) {
	if s == "" {
		return
	}
	switch {
	case b.d == Plain:
		b.text(s, mText)
		return
	case b.d == SlackMrkdwn && b.links > 0: // Slack link labels take no formatting
		b.text(s, mLinkText)
		return
	}
	m := &marker{open: "`", close: "`"}
	if b.d == TelegramHTML {
		m = &marker{open: "<code>", close: "</code>"}
	}
	b.open(m)
	b.text(s, mCodeSpan)
	b.close()
}

func (b *builder) styled(n ast.Node, style int) {
	var m *marker
	if b.styles[style] == 0 && !(b.d == SlackMrkdwn && b.links > 0) {
		m = styleMarker(b.d, style)
	}
	if m == nil {
		b.inlines(n)
		return
	}
	b.styles[style]++
	b.open(m)
	b.inlines(n)
	b.close()
	b.styles[style]--
}

func styleMarker(d Dialect, style int) *marker {
	var marks [nStyles][2]string
	switch d {
	case SlackMrkdwn:
		marks = [nStyles][2]string{{"*", "*"}, {"_", "_"}, {"~", "~"}}
	case DiscordMarkdown:
		marks = [nStyles][2]string{{"**", "**"}, {"*", "*"}, {"~~", "~~"}}
	case TelegramHTML:
		marks = [nStyles][2]string{{"<b>", "</b>"}, {"<i>", "</i>"}, {"<s>", "</s>"}}
	default:
		return nil
	}
	return &marker{open: marks[style][0], close: marks[style][1]}
}

// link renders a link to dest whose label (plain text labelText) is written by label. Links that
// cannot be real links (not http(s), nested, or markup too long for the piece budget) become
// "label (dest)" text.
func (b *builder) link(dest, labelText string, label func(), auto bool) {
	if labelText == "" {
		labelText = dest
		label = func() { b.text(dest, mText) }
	}
	var m *marker
	if b.links == 0 && linkable(dest) {
		u := cleanURL(dest)
		switch b.d {
		case SlackMrkdwn:
			m = &marker{open: "<" + strings.ReplaceAll(u, "&", "&amp;") + "|", close: ">", link: true}
		case DiscordMarkdown:
			m = &marker{open: "[", close: "](" + u + ")", link: true}
		case TelegramHTML:
			m = &marker{open: `<a href="` + escapeAttr(u) + `">`, close: "</a>", link: true}
		}
		if m != nil && b.budget > 0 && Length(m.open)+Length(m.close) > b.budget/4 {
			m, b.degraded = nil, true
		}
	}
	if auto && m != nil && b.d == DiscordMarkdown && labelText == dest {
		// Discord links a bare URL itself; escaping it ("my\_repo") or
		// masking it would change the URL people copy.
		b.push(token{k: kRaw, s: dest})
		return
	}
	if m == nil {
		label()
		if !auto && dest != "" && labelText != dest {
			b.text(" ("+dest+")", mText)
		}
		return
	}
	b.links++
	b.open(m)
	label()
	b.close()
	b.links--
}
