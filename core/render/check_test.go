package render

import (
	"fmt"
	"strings"
)

// telegramAllowed are the tags Telegram's parse_mode=HTML accepts (the ones render may produce).
var telegramAllowed = map[string]bool{
	"b": true, "i": true, "u": true, "s": true, "code": true, "pre": true, "a": true,
	"blockquote": true, "tg-spoiler": true,
}

// checkTelegram reports the first problem that would make Telegram reject s: an unknown or
// unbalanced tag, a bare '<' '>' or '&', or markup inside <code>/<pre> other than <pre><code>.
func checkTelegram(s string) error {
	var stack []string
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '>':
			return fmt.Errorf("bare '>' at %d", i)
		case '&':
			rest := s[i:]
			ok := false
			for _, e := range []string{"&amp;", "&lt;", "&gt;", "&quot;"} {
				ok = ok || strings.HasPrefix(rest, e)
			}
			if !ok {
				return fmt.Errorf("bare '&' at %d", i)
			}
		case '<':
			j := strings.IndexByte(s[i:], '>')
			if j < 0 {
				return fmt.Errorf("unterminated tag at %d", i)
			}
			tag := s[i+1 : i+j]
			closing := strings.HasPrefix(tag, "/")
			name := strings.TrimPrefix(tag, "/")
			if sp := strings.IndexByte(name, ' '); sp >= 0 {
				if closing {
					return fmt.Errorf("attributes on closing tag %q", tag)
				}
				attrs := name[sp+1:]
				name = name[:sp]
				if !(name == "a" && strings.HasPrefix(attrs, `href="`) || name == "code" && strings.HasPrefix(attrs, `class="language-`)) ||
					!strings.HasSuffix(attrs, `"`) || strings.Count(attrs, `"`) != 2 || strings.ContainsAny(attrs, "<") {
					return fmt.Errorf("bad attributes in %q", tag)
				}
			}
			if !telegramAllowed[name] {
				return fmt.Errorf("tag %q not allowed", name)
			}
			if closing {
				if len(stack) == 0 || stack[len(stack)-1] != name {
					return fmt.Errorf("</%s> at %d does not close %v", name, i, stack)
				}
				stack = stack[:len(stack)-1]
			} else {
				if n := len(stack); n > 0 && (stack[n-1] == "code" || stack[n-1] == "pre" && name != "code") {
					return fmt.Errorf("<%s> inside <%s>", name, stack[n-1])
				}
				stack = append(stack, name)
			}
			i += j
		}
	}
	if len(stack) > 0 {
		return fmt.Errorf("unclosed %v", stack)
	}
	return nil
}

// checkSlack reports a '<' that is not a link, a link without its closing '>', a bare '&', or an
// odd number of ``` fences.
func checkSlack(s string) error {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '<':
			j := strings.IndexByte(s[i:], '>')
			if !strings.HasPrefix(s[i:], "<http") || j < 0 || strings.ContainsAny(s[i+1:i+j], "\n<") {
				return fmt.Errorf("bad '<' at %d", i)
			}
		case '&':
			if !strings.HasPrefix(s[i:], "&amp;") && !strings.HasPrefix(s[i:], "&lt;") && !strings.HasPrefix(s[i:], "&gt;") {
				return fmt.Errorf("bare '&' at %d", i)
			}
		}
	}
	return checkFences(s)
}

func checkFences(s string) error {
	if n := strings.Count(s, "```"); n%2 != 0 {
		return fmt.Errorf("%d ``` fences", n)
	}
	return nil
}

// checkPiece applies the dialect's validity check and the limits every piece must meet.
func checkPiece(p string, d Dialect, max int) error {
	if max > 0 && Length(p) > max {
		return fmt.Errorf("length %d > %d", Length(p), max)
	}
	if strings.TrimSpace(p) == "" {
		return fmt.Errorf("empty piece")
	}
	// Mention syntax is changed only where the platform has no switch:
	// Slack's <!…>, <@…>, <#…> (shown as text). Discord posts with
	// allowed_mentions none, Telegram has no mass mentions, and plain
	// text is escaped by each adapter (or goes to a terminal).
	var bad []string
	if d == SlackMrkdwn {
		bad = []string{"<!", "<@", "<#"}
	}
	for _, bad := range bad {
		if strings.Contains(strings.ToLower(p), bad) {
			return fmt.Errorf("%q survived", bad)
		}
	}
	switch d {
	case TelegramHTML:
		return checkTelegram(p)
	case SlackMrkdwn:
		return checkSlack(p)
	case DiscordMarkdown:
		return checkFences(p)
	}
	return nil
}

var dialects = []Dialect{Plain, SlackMrkdwn, DiscordMarkdown, TelegramHTML}
