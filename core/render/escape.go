package render

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

const wordJoiner = "\u2060"

// Length counts s in UTF-16 code units, the unit Limits.MaxText uses.
func Length(s string) int {
	n := 0
	for _, r := range s {
		n += runeLen(r)
	}
	return n
}

func runeLen(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}

// EscapeMarkdown backslash-escapes s so that goldmark renders it literally: callers compose Markdown
// from untrusted strings (tool names, error messages, user names).
func EscapeMarkdown(s string) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/4)
	lineStart := true
	for _, r := range s {
		switch {
		case r == '\n':
			lineStart = true
			b.WriteByte('\n')
			continue
		case lineStart && (r == ' ' || r == '\t'):
			// Leading indentation would start an indented code block; a character reference keeps it.
			if r == ' ' {
				b.WriteString("&#32;")
			} else {
				b.WriteString("&#9;")
			}
			continue
		case r < utf8.RuneSelf && isASCIIPunct(byte(r)):
			b.WriteByte('\\')
		}
		lineStart = false
		b.WriteRune(r)
	}
	return b.String()
}

// QuoteMarkdown returns Markdown source that shows plain text t as a block quote ("> " lines with
// Markdown special characters escaped). It is used to show an agent's "thinking" apart from its
// answer: the caller prepends it to the answer's source before Split, so the quote gets the same
// splitting guarantees. Empty or whitespace-only t gives "".
func QuoteMarkdown(t string) string {
	t = strings.TrimRight(t, " \t\r\n")
	if strings.TrimSpace(t) == "" {
		return ""
	}
	var b strings.Builder
	for line := range strings.SplitSeq(t, "\n") {
		line = strings.TrimRight(line, " \t\r")
		if line == "" {
			b.WriteString(">\n")
			continue
		}
		b.WriteString("> ")
		b.WriteString(EscapeMarkdown(line))
		b.WriteByte('\n')
	}
	// The blank line ends the quote, so text appended after it is not a lazy continuation.
	b.WriteByte('\n')
	return b.String()
}

func isASCIIPunct(c byte) bool {
	return c >= '!' && c <= '/' || c >= ':' && c <= '@' || c >= '[' && c <= '`' || c >= '{' && c <= '~'
}

// massWords are the mentions that ping everyone in a channel when they reach a platform intact.
var massWords = [...]string{"everyone", "here", "channel"}

// massAt reports whether s[i+1:] starts with a mass-mention word (any case).
func massAt(s string, i int) bool {
	rest := s[i+1:]
	for _, w := range massWords {
		if len(rest) >= len(w) && strings.EqualFold(rest[:len(w)], w) {
			return true
		}
	}
	return false
}

// DefuseMentions keeps raw Markdown that goes to a platform without
// rendering (Slack's native stream) from pinging anyone: a WORD JOINER goes
// after every "<" that starts Slack or Discord mention syntax (<!channel>,
// <@U…>, <@&…>, <#…>). It is invisible but breaks the syntax. Bare
// "@channel", "@here" and "@everyone" stay as written: Slack pings only
// through the <!…> forms, and Discord posts say allowed_mentions none.
func DefuseMentions(s string) string {
	if !strings.Contains(s, "<") {
		return s
	}
	var b strings.Builder
	last := 0
	for i := 0; i+1 < len(s); i++ {
		if s[i] != '<' || s[i+1] != '!' && s[i+1] != '@' && s[i+1] != '#' {
			continue
		}
		b.WriteString(s[last : i+1])
		b.WriteString(wordJoiner)
		last = i + 1
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// linkable reports whether u may become a real link: only absolute http(s) URLs, because Telegram
// rejects a whole message over one bad href and other schemes (javascript:, file:) are unsafe.
func linkable(u string) bool {
	l := strings.ToLower(u)
	return (strings.HasPrefix(l, "https://") && len(l) > len("https://")) ||
		(strings.HasPrefix(l, "http://") && len(l) > len("http://"))
}

// cleanURL percent-encodes what could end or break a link in any dialect (space, quotes, brackets,
// pipes, non-ASCII) and an '@' that would start a mass mention.
func cleanURL(u string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(u); i++ {
		c := u[i]
		bad := c <= ' ' || c >= 0x7f || strings.IndexByte("\"<>\\^`{|}()[]", c) >= 0 || c == '@' && massAt(u, i)
		if bad {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// escapeAttr escapes s for a double-quoted HTML attribute.
func escapeAttr(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

// cleanLang keeps a code block's language tag short and harmless.
func cleanLang(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= 20 {
			break
		}
		if r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("_+#.-", r)) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// joiner reports whether r must stay attached to the rune before it (combining marks, joiners,
// variation selectors), so a cut never lands just before it.
func joiner(r rune) bool {
	if r < 0x300 {
		return false
	}
	return r == 0x200D || r == 0x2060 || r >= 0xFE00 && r <= 0xFE0F || r >= 0x1F3FB && r <= 0x1F3FF ||
		r >= 0xE0020 && r <= 0xE007F || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r)
}

// width is the display width of s in a monospace font: East Asian wide runes count 2, combining 0.
func width(s string) int {
	w := 0
	for _, r := range s {
		switch {
		case joiner(r) || unicode.Is(unicode.Cf, r):
		case wide(r):
			w += 2
		default:
			w++
		}
	}
	return w
}

func wide(r rune) bool {
	return r >= 0x1100 && r <= 0x115F || r >= 0x2E80 && r <= 0xA4CF && r != 0x303F ||
		r >= 0xAC00 && r <= 0xD7A3 || r >= 0xF900 && r <= 0xFAFF || r >= 0xFE30 && r <= 0xFE4F ||
		r >= 0xFF00 && r <= 0xFF60 || r >= 0xFFE0 && r <= 0xFFE6 || r >= 0x1F300 && r <= 0x1F64F ||
		r >= 0x1F900 && r <= 0x1F9FF || r >= 0x20000 && r <= 0x3FFFD
}
