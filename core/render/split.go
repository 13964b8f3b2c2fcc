package render

import (
	"strings"
	"unicode/utf8"
)

// minMax is the smallest limit Split honours; smaller positive limits are raised to it, because a
// single escaped character or list bullet must always fit in a piece.
const minMax = 16

// Cut classes, best first: between top-level blocks, at a blank line, at a line break, at a word
// boundary, between runes.
const (
	cBlock = iota
	cBlank
	cLine
	cWord
	cRune
	nClasses
)

// Split renders md for d and cuts the result into messages of at most max units each (Length),
// cutting only between blocks when it can. A block longer than max is cut inside: a code block at
// line boundaries with its fence (or <pre>) closed at the end of one piece and reopened (same
// language) at the start of the next; a paragraph/list at line, then word, then rune boundaries.
// Never inside an HTML tag, entity (&amp;), or a mrkdwn/markdown span; every piece is valid on its own
// (Telegram: tags balanced in every piece). Returns nil for empty/whitespace-only input. Deterministic.
//
// Pieces are packed greedily from the start, so when text is appended to md only the last piece or
// two change. A max of 0 or less means no limit; a positive max below 16 is treated as 16.
func Split(md string, d Dialect, max int) []string {
	if max > 0 && max < minMax {
		max = minMax
	}
	toks, degraded := tokenize(md, d, max)
	if degraded {
		// Links were made text to save room; if everything fits anyway, keep them links.
		whole, _ := tokenize(md, d, 0)
		if r := split(whole, d, 0); len(r) == 1 && Length(r[0]) <= max {
			return r
		}
	}
	return split(toks, d, max)
}

// Render is Split without a limit: the whole rendering as one string.
func Render(md string, d Dialect) string {
	toks, _ := tokenize(md, d, 0)
	p := split(toks, d, 0)
	if len(p) == 0 {
		return ""
	}
	return p[0]
}

// pos is a place in the token stream: a token and a byte offset into its text.
type pos struct{ t, off int }

// continued starts a Telegram piece whose text would begin with
// whitespace (a code block continued at an indented line): Telegram trims
// a message's leading whitespace, which would take the line's indentation.
const continued = "…\n"

func split(toks []token, d Dialect, max int) []string {
	out := pieces(toks, d, max)
	if d != TelegramHTML || !continuedIndented(out) {
		return out
	}
	if max > 0 {
		out = pieces(toks, d, max-Length(continued)) // room for it, so every piece fits max
	}
	for i := 1; i < len(out); i++ {
		if indented(out[i]) {
			out[i] = continued + out[i]
		}
	}
	return out
}

// continuedIndented reports whether a piece after the first shows
// whitespace first.
func continuedIndented(out []string) bool {
	for i := 1; i < len(out); i++ {
		if indented(out[i]) {
			return true
		}
	}
	return false
}

func pieces(toks []token, d Dialect, max int) []string {
	var out []string
	var carry []*marker
	p := pos{}
	for {
		p, carry = skip(toks, p, carry)
		if p.t >= len(toks) {
			break
		}
		s, next, nextCarry, ok := piece(toks, d, max, p, carry, false)
		if !ok || next == p {
			break
		}
		out = append(out, s)
		p, carry = next, nextCarry
	}
	return out
}

// indented reports whether Telegram HTML s shows whitespace first (after
// its opening tags).
func indented(s string) bool {
	for strings.HasPrefix(s, "<") {
		end := strings.IndexByte(s, '>')
		if end < 0 {
			return false
		}
		s = s[end+1:]
	}
	return strings.HasPrefix(s, " ") || strings.HasPrefix(s, "\t")
}

// skip moves past what a piece must not start with: separators, and markers that close before any
// content (which would leave an empty span).
func skip(toks []token, p pos, carry []*marker) (pos, []*marker) {
	for p.t < len(toks) {
		t := &toks[p.t]
		switch {
		case t.k == kBlock, t.k == kNL && !t.mode.code():
		case t.k == kClose && len(carry) > 0:
			carry = carry[:len(carry)-1]
		default:
			return p, carry
		}
		p = pos{p.t + 1, 0}
	}
	return p, carry
}

// cut is a place a piece may end.
type cut struct {
	ok    bool
	bytes int       // output length before the cut
	p     pos       // where the next piece resumes
	skip  bool      // the token at p is the separator cut at: resume after it
	space bool      // a word cut before spaces: resume after them
	close string    // markup closing what is open at the cut
	stack []*marker // markers open at the cut, reopened by the next piece
}

// piece writes one piece starting at p with the markers in carry open. It returns the piece, where
// the next one starts and what it must reopen; ok is false if nothing visible remained.
func piece(toks []token, d Dialect, max int, p pos, carry []*marker, bare bool) (string, pos, []*marker, bool) {
	e := &emitter{d: d, max: max, lineStart: true, cacheVer: -1, bare: bare}
	budget, used := max/2, 0
	for _, m := range carry {
		on := false
		if !bare {
			c := Length(m.open) + Length(m.close) + Length(m.prefix)
			if m.block {
				c += 2
			}
			if max <= 0 || used+c <= budget {
				on, used = true, used+c
			}
		}
		e.push(m, on)
	}
	start, startCarry := p, carry
	var best [nClasses]cut
	overflow := func() (string, pos, []*marker, bool) {
		for _, c := range best {
			if c.ok {
				next := c.p
				if c.skip {
					next = pos{c.p.t + 1, 0}
				}
				if c.space && next.t < len(toks) && !toks[next.t].mode.code() {
					t := &toks[next.t]
					// A word cut drops the spaces it cut at.
					for next.off < len(t.s) && isSpace(rune(t.s[next.off])) {
						next.off++
					}
					if next.off == len(t.s) {
						next = pos{next.t + 1, 0}
					}
				}
				return string(e.out[:c.bytes]) + c.close, next, c.stack, true
			}
		}
		if !bare {
			// Markup left no room for any content: redo this piece without markup.
			return piece(toks, d, max, start, startCarry, true)
		}
		return string(e.out) + e.closing(), pos{len(toks), 0}, nil, true // unreachable with max ≥ minMax
	}
	for p.t < len(toks) {
		t := &toks[p.t]
		switch t.k {
		case kText:
			code := t.mode.code()
			for p.off < len(t.s) {
				r, size := utf8.DecodeRuneInString(t.s[p.off:])
				if e.canCut() && !joiner(r) && e.prev != 0x200D {
					class := cRune
					if code && isSpace(e.prev) && !isSpace(r) || !code && isSpace(r) && !isSpace(e.prev) {
						class = cWord
					}
					e.record(&best[class], p, false)
					best[class].space = class == cWord && !code
				}
				e.rune(r, t.mode)
				p.off += size
				if !e.fits() {
					return overflow()
				}
			}
			p = pos{p.t + 1, 0}
			continue
		case kRaw:
			if e.canCut() {
				e.record(&best[cRune], p, false)
			}
			e.raw(t.s, t.glue)
			if !e.fits() {
				return overflow()
			}
		case kOpen:
			if e.canCut() {
				e.record(&best[cRune], p, false)
			}
			save := e.save()
			e.push(t.m, !bare)
			if !e.fits() {
				if e.content {
					return overflow()
				}
				e.restore(save)
				e.push(t.m, false)
			}
		case kClose:
			e.pop()
		case kNL:
			if e.content {
				class := cLine
				if t.blank {
					class = cBlank
				}
				e.record(&best[class], p, true)
			}
			e.newline(t.blank)
			if !e.fits() {
				return overflow()
			}
		case kBlock:
			if e.content {
				class := cBlock
				if t.glue {
					class = cWord // after a heading: only if nothing better
				}
				e.record(&best[class], p, true)
			}
			e.write("\n\n")
			e.lineStart, e.prev = true, 0
			if !e.fits() {
				return overflow()
			}
		}
		p = pos{p.t + 1, 0}
	}
	if !e.content {
		return "", p, nil, false
	}
	return string(e.out) + e.closing(), p, nil, true
}

// entry is an open marker; off if this piece has no room for its markup.
type entry struct {
	m  *marker
	on bool
}

// emitter writes tokens for one piece and tracks what closing the piece here would cost.
type emitter struct {
	d         Dialect
	max       int // 0: no limit
	bare      bool
	out       []byte
	n         int // Length of out
	stack     []entry
	ver       int  // bumped on every push/pop; keys the caches
	lineStart bool // at the start of a line, before its prefixes
	lineState uint8
	content   bool // something visible written
	glue      bool // the last thing written must not end a piece
	prev      rune

	cacheVer int
	closeS   string
	closeN   int
	prefixS  string
	snap     []*marker
	snapOK   bool
}

// Discord line states: whether a rune could still start block syntax ("# ", "- ", "1. ").
const (
	lsStart  = iota // only spaces so far
	lsDigits        // only digits so far
	lsOther
)

func (e *emitter) sync() {
	if e.cacheVer == e.ver {
		return
	}
	e.cacheVer, e.snapOK = e.ver, false
	e.prefixS = prefixOf(e.stack)
	var sb strings.Builder
	for i := len(e.stack) - 1; i >= 0; i-- {
		en := e.stack[i]
		if !en.on {
			continue
		}
		if en.m.block {
			sb.WriteByte('\n')
			sb.WriteString(prefixOf(e.stack[:i]))
		}
		sb.WriteString(en.m.close)
	}
	e.closeS = sb.String()
	e.closeN = Length(e.closeS)
}

func prefixOf(st []entry) string {
	var sb strings.Builder
	for _, en := range st {
		if en.on && en.m.verbatim {
			sb.Reset()
		}
		if en.on {
			sb.WriteString(en.m.prefix)
		}
	}
	return sb.String()
}

func (e *emitter) closing() string { e.sync(); return e.closeS }

func (e *emitter) fits() bool {
	if e.max <= 0 {
		return true
	}
	e.sync()
	return e.n+e.closeN <= e.max
}

func (e *emitter) canCut() bool { return e.content && (!e.glue || e.bare) }

func (e *emitter) record(c *cut, p pos, skip bool) {
	e.sync()
	if !e.snapOK {
		e.snap = make([]*marker, len(e.stack))
		for i, en := range e.stack {
			e.snap[i] = en.m
		}
		e.snapOK = true
	}
	*c = cut{ok: true, bytes: len(e.out), p: p, skip: skip, close: e.closeS, stack: e.snap}
}

type saved struct {
	out, n    int
	lineStart bool
	lineState uint8
	glue      bool
}

func (e *emitter) save() saved {
	return saved{len(e.out), e.n, e.lineStart, e.lineState, e.glue}
}

func (e *emitter) restore(s saved) {
	e.out, e.n, e.lineStart, e.lineState, e.glue = e.out[:s.out], s.n, s.lineStart, s.lineState, s.glue
	e.stack = e.stack[:len(e.stack)-1]
	e.ver++
}

func (e *emitter) write(s string) {
	e.out = append(e.out, s...)
	e.n += Length(s)
}

// startLine writes the line prefixes (quote marks, list indentation) before a line's first content.
func (e *emitter) startLine() {
	if !e.lineStart {
		return
	}
	e.sync()
	e.write(e.prefixS)
	e.lineStart, e.lineState = false, lsStart
}

func (e *emitter) push(m *marker, on bool) {
	e.stack = append(e.stack, entry{m, on})
	e.ver++
	if !on {
		return
	}
	if m.open != "" {
		e.startLine()
		e.write(m.open)
		e.glue = true
	}
	if m.block {
		e.write("\n")
		e.lineStart, e.glue = true, true
	}
}

func (e *emitter) pop() {
	if len(e.stack) == 0 {
		return
	}
	en := e.stack[len(e.stack)-1]
	e.stack = e.stack[:len(e.stack)-1]
	e.ver++
	if !en.on {
		return
	}
	if en.m.block {
		e.sync()
		e.write("\n")
		e.write(e.prefixS)
		e.lineStart = false
	}
	e.write(en.m.close)
	e.glue, e.prev = false, 0
}

func (e *emitter) newline(blank bool) {
	for range 1 + btoi(blank) {
		if e.lineStart {
			e.sync()
			e.write(strings.TrimRight(e.prefixS, " "))
		}
		e.write("\n")
		e.lineStart = true
	}
	e.glue, e.prev = false, 0
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (e *emitter) raw(s string, glue bool) {
	e.startLine()
	e.write(s)
	e.content, e.glue, e.prev = true, glue, 0
	if !glue {
		e.lineState = lsOther
	}
}

func (e *emitter) rune(r rune, m mode) {
	e.startLine()
	e.content, e.glue, e.prev = true, false, r
	if esc := e.escape(r, m); esc != "" {
		e.write(esc)
		return
	}
	e.out = utf8.AppendRune(e.out, r)
	e.n += runeLen(r)
}

// escape returns r's escaped form, or "" to write r as is.
func (e *emitter) escape(r rune, m mode) string {
	switch e.d {
	case SlackMrkdwn, TelegramHTML:
		switch r {
		case '&':
			return "&amp;"
		case '<':
			return "&lt;"
		case '>':
			return "&gt;"
		case '|':
			if m == mLinkText {
				return "∣" // a '|' would end a Slack link's URL part
			}
		}
	case DiscordMarkdown:
		if m.code() {
			return ""
		}
		if m == mURL {
			e.lineState = lsOther
			return ""
		}
		st := e.lineState
		switch {
		case r == ' ' || r == '\t':
			if st != lsStart {
				e.lineState = lsOther
			}
		case r >= '0' && r <= '9':
			if st == lsStart {
				e.lineState = lsDigits
			}
		default:
			e.lineState = lsOther
		}
		switch {
		case strings.ContainsRune("\\*_~`|[]<>", r),
			st == lsStart && (r == '#' || r == '-' || r == '+'),
			st == lsDigits && (r == '.' || r == ')'):
			return "\\" + string(r)
		}
	}
	return ""
}
