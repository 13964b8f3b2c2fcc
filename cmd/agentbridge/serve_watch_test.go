package main

import (
	"fmt"
	"html"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The watch tests (one per platform, in serve_*_test.go) run `serve`
// against a platform's fake while three conversations stream long answers
// at once, observe every change the fake records, and check what a user
// would see (issue 15): text once shown never vanishes, the reply ends with
// every marker exactly once and in order, no message is near-empty, a
// heading never ends a message, a continued code block keeps its
// indentation, a bare URL and mentions arrive as the platform needs them,
// and no call earned a 429.

// watchURL is a bare URL with the characters Markdown escaping and
// autolinking get wrong: underscores, parentheses, a query with &.
const watchURL = "https://example.com/my_repo_(x)?a=1&b=2"

// watchMentions are the mention forms the answer's second line carries.
var watchMentions = []string{"@everyone", "@here", "<!channel>", "<@123>"}

// watchSpec is one watched answer: its markers are prefix+"001" to
// prefix+N, one a line of about width characters; the agent streams a
// line every delay.
type watchSpec struct {
	prefix string
	n      int
	width  int
	delay  time.Duration
}

// message is the turn message that makes the "watch" test agent stream
// the answer.
func (s watchSpec) message() string {
	return fmt.Sprintf("watch %s %d %d %d", s.prefix, s.n, s.width, s.delay.Milliseconds())
}

func (s watchSpec) marker(i int) string { return fmt.Sprintf("%s%03d", s.prefix, i) }

// inCode reports whether line i is inside the answer's code block (its
// middle third, so the block crosses a message boundary).
func (s watchSpec) inCode(i int) bool { return i > s.n/3 && i <= 2*s.n/3 }

// done is the answer's last line, so a test sees the final text arrive.
func (s watchSpec) done() string { return "Done " + s.prefix + "." }

// lines returns the answer, one element a line (newline included): a
// heading, the URL and mentions, then the numbered lines with a heading
// every 30 lines outside the code block.
func (s watchSpec) lines() []string {
	out := []string{"# Watched answer " + s.prefix + "\n", "\n",
		"See " + watchURL + " and " + strings.Join(watchMentions, " ") + " here.\n", "\n"}
	for i := 1; i <= s.n; i++ {
		switch {
		case s.inCode(i) && !s.inCode(i-1):
			out = append(out, "\n", "```go\n")
		case !s.inCode(i) && s.inCode(i-1):
			out = append(out, "```\n", "\n")
		case !s.inCode(i) && i > 1 && i%30 == 1:
			out = append(out, "\n", fmt.Sprintf("## Part %d of %s\n", i/30+1, s.prefix), "\n")
		}
		line := s.marker(i)
		if s.inCode(i) {
			line = "    " + line + " = step(" + fmt.Sprint(i) + ")"
		}
		for k := 0; len(line) < s.width; k++ {
			line += " " + []string{"lorem", "ipsum", "dolor", "sit", "amet"}[k%5]
		}
		out = append(out, line+"\n")
	}
	return append(out, "\n", s.done())
}

// watchAgent is the test agent's "watch" mode: it streams the watchSpec
// the turn message names, each line in two partials (a cut mid-word), a
// line every delay, and ends with a result.
func watchAgent(msg string) int {
	var s watchSpec
	var ms int
	if _, err := fmt.Sscanf(msg, "watch %s %d %d %d", &s.prefix, &s.n, &s.width, &ms); err != nil {
		fmt.Fprintln(os.Stderr, "agent: bad watch message:", msg, err)
		return 3
	}
	s.delay = time.Duration(ms) * time.Millisecond
	for _, line := range s.lines() {
		half := len(line) / 2
		for _, part := range []string{line[:half], line[half:]} {
			if part != "" {
				fmt.Printf("{\"type\":\"partial\",\"text\":%q,\"session_id\":\"s-watch\"}\n", part)
			}
		}
		time.Sleep(s.delay) // the agent's pace, as a model's tokens come
	}
	fmt.Println(`{"type":"result","text":"","session_id":"s-watch"}`)
	return 0
}

// watcher follows one conversation's reply through every observed state.
type watcher struct {
	spec     watchSpec
	re       *regexp.Regexp
	seen     map[string]int // marker → the observation it was first seen in
	obs      int
	vanished []string
}

func newWatcher(s watchSpec) *watcher {
	return &watcher{spec: s, re: regexp.MustCompile(regexp.QuoteMeta(s.prefix) + `\d{3}`), seen: map[string]int{}}
}

// observe takes the texts visible in the conversation now (messages, and a
// Telegram draft) and records every marker seen before that is missing.
func (w *watcher) observe(visible []string) {
	w.obs++
	now := map[string]bool{}
	for _, m := range w.re.FindAllString(strings.Join(visible, "\n"), -1) {
		now[m] = true
	}
	for m, at := range w.seen {
		if !now[m] && len(w.vanished) < 10 {
			w.vanished = append(w.vanished, fmt.Sprintf("%s (seen since observation %d) missing at observation %d", m, at, w.obs))
		}
	}
	for m := range now {
		if _, ok := w.seen[m]; !ok {
			w.seen[m] = w.obs
		}
	}
}

// complete reports whether the final texts hold the whole answer.
func (w *watcher) complete(texts []string) bool {
	all := strings.Join(texts, "\n")
	return strings.Contains(all, w.spec.done()) && len(w.re.FindAllString(all, -1)) == w.spec.n
}

// check fails t with the problems of the reply's final messages.
func (w *watcher) check(t *testing.T, visible []string, limit int) {
	t.Helper()
	for _, p := range w.problems(visible, limit) {
		t.Errorf("%s: %s", w.spec.prefix, p)
	}
}

// problems judges the reply's final messages as the user reads them
// (visible: the platform's text with its markup taken off): nothing
// vanished on the way, every marker once and in order, the code block's
// lines indented, the URL unchanged, and, unless limit is 0 (a reply in
// one message), the reply split, no message under limit/8 characters, no
// message but the last ending with a heading.
func (w *watcher) problems(visible []string, limit int) []string {
	var out []string
	s := w.spec
	if len(w.vanished) > 0 {
		out = append(out, fmt.Sprintf("text the user saw vanished (%d observations): %s", w.obs, strings.Join(w.vanished, "; ")))
	}
	all := strings.Join(visible, "\n")
	got := w.re.FindAllString(all, -1)
	var want []string
	for i := 1; i <= s.n; i++ {
		want = append(want, s.marker(i))
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		out = append(out, fmt.Sprintf("markers across the reply's %d messages are %d, want %d exactly once in order; got %v", len(visible), len(got), s.n, got))
	}
	if !strings.Contains(all, s.done()) {
		out = append(out, fmt.Sprintf("the final text %q never arrived", s.done()))
	}
	for i := 1; i <= s.n; i++ {
		if s.inCode(i) && !strings.Contains(all, "    "+s.marker(i)+" = step(") {
			out = append(out, fmt.Sprintf("code line %s lost its indentation", s.marker(i)))
		}
	}
	if !strings.Contains(all, watchURL) {
		out = append(out, fmt.Sprintf("the bare URL %s did not arrive unchanged", watchURL))
	}
	if limit == 0 {
		return out // one message, not split: no more to judge
	}
	if len(visible) < 2 {
		out = append(out, fmt.Sprintf("the reply is %d message(s); want it split (the test's answer is too short for the limit %d)", len(visible), limit))
	}
	for i, v := range visible {
		if n := utf8.RuneCountInString(strings.TrimSpace(v)); n < limit/8 {
			out = append(out, fmt.Sprintf("message %d of %d is near-empty: %d characters (limit %d): %q", i+1, len(visible), n, limit, v))
		}
		lines := strings.Split(strings.TrimSpace(v), "\n")
		if last := lines[len(lines)-1]; i < len(visible)-1 && strings.Contains(last, "Part ") {
			out = append(out, fmt.Sprintf("message %d ends with a heading %q, parted from its block", i+1, last))
		}
	}
	return out
}

// watchAll has each watcher observe its conversation's visible texts and
// reports whether every reply's messages (visible but drafts) are
// complete.
func watchAll(ws []*watcher, visible, messages [][]string) bool {
	done := true
	for i, w := range ws {
		w.observe(visible[i])
		done = w.complete(messages[i]) && done
	}
	return done
}

// slackVisible is Slack mrkdwn as the user reads it: the three escaped
// characters restored, and a link <url|text> or <url> shown as its url.
func slackVisible(text string) string {
	text = regexp.MustCompile(`<([a-z]+://[^|>]*)(\|[^>]*)?>`).ReplaceAllString(text, "$1")
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(text)
}

var tgTag = regexp.MustCompile(`<[^>]*>`)

// telegramVisible is a Telegram HTML text as the user reads it: tags off,
// entities decoded, leading and trailing whitespace trimmed (Telegram trims
// a message's text).
func telegramVisible(text string) string {
	return strings.TrimSpace(html.UnescapeString(tgTag.ReplaceAllString(text, "")))
}

func runeLens(texts []string) []int {
	var out []int
	for _, s := range texts {
		out = append(out, utf8.RuneCountInString(s))
	}
	return out
}

// TestWatcher: the watcher itself fails where it must — a marker shown and
// then gone for one observation, a marker twice, a near-empty message, a
// message ending with a heading, a lost indentation, a changed URL.
func TestWatcher(t *testing.T) {
	s := watchSpec{prefix: "m", n: 3} // m002 is the code line
	w := newWatcher(s)
	w.observe([]string{"m001 m002"})
	w.observe([]string{"m001"}) // m002 vanished while the reply was edited
	w.observe([]string{"m001 m002 m003"})
	if len(w.vanished) != 1 || !strings.HasPrefix(w.vanished[0], "m002 ") {
		t.Errorf("vanished = %q, want m002 once", w.vanished)
	}
	first, code := "m001 "+watchURL+" and words", "    m002 = step(2)"
	good := []string{first, "Part 2\n\n" + code + " m003 " + s.done()}
	if p := newWatcher(s).problems(good, 80); len(p) != 0 {
		t.Errorf("a good reply has problems: %q", p)
	}
	for name, texts := range map[string][]string{
		"twice":       {first + " m002", code + " m003 " + s.done()},
		"near-empty":  {first + "\n" + code + " m003 " + s.done(), "m"},
		"heading":     {first + "\n\nPart 2", code + " m003 " + s.done()},
		"indentation": {first, "m002 = step(2) m003 " + s.done()},
		"url":         {"m001 https://example.com/my\\_repo_(x)?a=1&b=2 words", code + " m003 " + s.done()},
		"unsplit":     {first + "\n" + code + " m003 " + s.done()},
	} {
		if p := newWatcher(s).problems(texts, 80); len(p) != 1 {
			t.Errorf("%s: problems %q, want one", name, p)
		}
	}
}
