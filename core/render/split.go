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
// No piece is near-empty (shorter than minPiece(max)) where a boundary avoids it: when the greedy
// cut would leave a piece or the text after it that short, the cut moves to a word boundary or
// better, outside links, that leaves both at least minPiece(max) long (see cutter.search for which);
// only where there is none does the greedy cut stay.
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

// minPiece is the rendered Length under which a piece of a split at max counts as near-empty: an
// eighth of the limit, at most 200 units. 200 units are two or three sentences, more than any footer
// (_1.2k tokens · 3.4s_), heading or closing fence, so none of those stands alone; the cap keeps the
// text moved out of a full piece small (5 % of a 4,000 limit), so pieces stay nearly full, and an
// eighth keeps small limits workable (2 units at the 16-unit floor).
func minPiece(max int) int {
	if max <= 0 {
		return 0
	}
	return min(max/8, 200)
}

// pos is a place in the token stream: a token and a byte offset into its text.
type pos struct{ t, off int }

// continued starts a Telegram piece whose text would begin with
// whitespace (a code block continued at an indented line): Telegram trims
// a message's leading whitespace, which would take the line's indentation.
const continued = "…\n"

func split(toks []token, d Dialect, max int) []string {
	_, spans := layout(toks, d, max)
	if len(spans) == 0 {
		return nil
	}
	out := make([]string, len(spans))
	for i, sp := range spans {
		out[i] = sp.s
		if d == TelegramHTML && i > 0 && indented(sp.s) {
			out[i] = continued + sp.s
		}
	}
	return out
}

// layout cuts toks into pieces for d at max. It returns the cutter it cut with and the pieces before
// Telegram's continuation lines are added.
func layout(toks []token, d Dialect, max int) (*cutter, []span) {
	c := &cutter{toks: toks, d: d, max: max, min: minPiece(max)}
	return c, c.pieces()
}

// cutter cuts one token stream into pieces.
type cutter struct {
	toks []token
	d    Dialect
	max  int // 0: no limit
	min  int // pieces shorter than this are near-empty (minPiece of the caller's limit)
}

// span is one piece and where it starts in the token stream.
type span struct {
	s     string
	p     pos
	carry []*marker
	max   int // the limit it was cut at
}

func (c *cutter) pieces() []span {
	var out []span
	var carry []*marker
	p := pos{}
	for {
		p, carry = skip(c.toks, p, carry)
		if p.t >= len(c.toks) {
			break
		}
		r, max := c.piece(p, carry, run{}), c.max
		if c.d == TelegramHTML && c.max > 0 && len(out) > 0 && indented(r.s) {
			// Room for the continuation line split puts first, so the piece still fits.
			narrow := *c
			narrow.max -= Length(continued)
			r, max = narrow.piece(p, carry, run{}), narrow.max
		}
		if !r.ok || r.next == p {
			break
		}
		out = append(out, span{r.s, p, carry, max})
		p, carry = r.next, r.carry
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
	class int       // cBlock … cRune
	bytes int       // output length before the cut
	n     int       // Length of the piece if it ends here, closing markup included
	p     pos       // where the next piece resumes
	skip  bool      // the token at p is the separator cut at: resume after it
	space bool      // a word cut before spaces: resume after them
	close string    // markup closing what is open at the cut
	stack []*marker // markers open at the cut, reopened by the next piece
	link  bool      // inside a link
}

// resume returns where the piece after k starts.
func (k *cut) resume(toks []token) pos {
	next := k.p
	if k.skip {
		next = pos{k.p.t + 1, 0}
	}
	if k.space && next.t < len(toks) && !toks[next.t].mode.code() {
		t := &toks[next.t]
		// A word cut drops the spaces it cut at.
		for next.off < len(t.s) && isSpace(rune(t.s[next.off])) {
			next.off++
		}
		if next.off == len(t.s) {
			next = pos{next.t + 1, 0}
		}
	}
	return next
}

// run says what a call of piece is for.
type run struct {
	bare  bool   // without markup: the markup left no room for content
	probe bool   // only measure: stop at min units (long) or at the limit (long)
	all   *[]cut // only collect every cut, in order, up to the limit
}

// result is what piece made.
type result struct {
	s     string
	next  pos       // where the next piece starts
	carry []*marker // what it reopens
	ok    bool      // false if nothing visible remained
	long  bool      // probe: the text reaches min units
}

// piece writes one piece starting at p with the markers in carry open and ends it where choose says.
func (c *cutter) piece(p pos, carry []*marker, r run) result {
	toks, max := c.toks, c.max
	e := &emitter{d: c.d, max: max, lineStart: true, cacheVer: -1, bare: r.bare}
	budget, used := max/2, 0
	for _, m := range carry {
		on := false
		if !r.bare {
			cost := Length(m.open) + Length(m.close) + Length(m.prefix)
			if m.block {
				cost += 2
			}
			if max <= 0 || used+cost <= budget {
				on, used = true, used+cost
			}
		}
		e.push(m, on)
	}
	start, startCarry := p, carry
	var best [nClasses]cut
	record := func(class int, p pos, skip, space bool) {
		e.record(&best[class], class, p, skip)
		best[class].space = space
		if r.all != nil {
			*r.all = append(*r.all, best[class])
		}
	}
	// full reports whether the piece must end before what was just written.
	full := func() bool { return !e.fits() || r.probe && e.n >= c.min }
	overflow := func() result {
		if r.probe || r.all != nil {
			return result{long: true}
		}
		if k, ok := c.choose(&best, start, startCarry, r.bare); ok {
			return result{s: string(e.out[:k.bytes]) + k.close, next: k.resume(toks), carry: k.stack, ok: true}
		}
		if !r.bare {
			// Markup left no room for any content: redo this piece without markup.
			return c.piece(start, startCarry, run{bare: true})
		}
		return result{s: string(e.out) + e.closing(), next: pos{len(toks), 0}, ok: true} // unreachable with max ≥ minMax
	}
	for p.t < len(toks) {
		t := &toks[p.t]
		switch t.k {
		case kText:
			code := t.mode.code()
			for p.off < len(t.s) {
				ru, size := utf8.DecodeRuneInString(t.s[p.off:])
				if e.canCut() && !joiner(ru) && e.prev != 0x200D {
					class := cRune
					if code && isSpace(e.prev) && !isSpace(ru) || !code && isSpace(ru) && !isSpace(e.prev) {
						class = cWord
					}
					record(class, p, false, class == cWord && !code)
				}
				e.rune(ru, t.mode)
				p.off += size
				if full() {
					return overflow()
				}
			}
			p = pos{p.t + 1, 0}
			continue
		case kRaw:
			if e.canCut() {
				record(cRune, p, false, false)
			}
			e.raw(t.s, t.glue)
			if full() {
				return overflow()
			}
		case kOpen:
			if e.canCut() {
				record(cRune, p, false, false)
			}
			save := e.save()
			e.push(t.m, !r.bare)
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
				record(class, p, true, false)
			}
			e.newline(t.blank)
			if full() {
				return overflow()
			}
		case kBlock:
			if e.content {
				class := cBlock
				if t.glue {
					class = cWord // after a heading: only if nothing better
				}
				record(class, p, true, false)
			}
			e.write("\n\n")
			e.lineStart, e.prev = true, 0
			if full() {
				return overflow()
			}
		}
		p = pos{p.t + 1, 0}
	}
	if !e.content {
		return result{next: p}
	}
	return result{s: string(e.out) + e.closing(), next: p, ok: true}
}

// choose picks where a piece that outgrew the limit ends: at the best class's latest cut (greedy),
// unless that leaves the piece or the text after it near-empty (shorter than min) and a boundary
// avoids it. ok is false if there is no cut at all.
func (c *cutter) choose(best *[nClasses]cut, start pos, carry []*marker, bare bool) (cut, bool) {
	greedy := -1
	for class, k := range best {
		if k.ok {
			greedy = class
			break
		}
	}
	if greedy < 0 {
		return cut{}, false
	}
	if c.min > 0 {
		for _, k := range best[:rebalanceClasses(greedy)] {
			if !k.ok || k.n < c.min {
				continue // a piece only grows, so no earlier cut of this class is long enough either
			}
			if !k.link && c.restLong(&k) {
				return k, true
			}
			// The latest cut is in a link, or the text after it is short: look further back.
			if k, ok := c.search(start, carry, bare, greedy, k.n); ok {
				return k, true
			}
			break
		}
	}
	return best[greedy], true
}

// rebalanceClasses returns how many cut classes, best first, may avoid a near-empty piece when the
// greedy cut is of class greedy: word boundaries and better, never inside a word (or a URL) unless
// the greedy cut already is.
func rebalanceClasses(greedy int) int { return max(greedy, cWord) + 1 }

// search goes through every cut of the piece at start for a boundary that leaves both the piece and
// the text after it at least min long: a cut of the classes rebalanceClasses allows, outside links.
// It tries, in turn: the cuts between 2·min and min before ref (the cut the piece would take), best
// class first and latest first within a class; then the latest cut at least min before ref; then any
// cut, best class first. The first two leave the text between the cut and ref to the rest, enough
// to make it long, and depend only on the text up to the limit, so the cut stays put while the reply
// grows (until the rest after ref is long enough) rather than creeping forward a word at a time; the
// first gives up at most 2·min units. Only the piece before a near-empty rest needs this: once per
// split, near the end.
func (c *cutter) search(start pos, carry []*marker, bare bool, greedy, ref int) (cut, bool) {
	var all []cut
	c.piece(start, carry, run{bare: bare, all: &all})
	classes := rebalanceClasses(greedy)
	tiers := []struct {
		lo, hi  int
		byClass bool
	}{
		{ref - 2*c.min, ref - c.min, true},
		{c.min, ref - c.min, false},
		{c.min, c.max, true},
	}
	for _, tr := range tiers {
		for class := range classes {
			for i := len(all) - 1; i >= 0; i-- {
				k := &all[i]
				if k.class < classes && (!tr.byClass || k.class == class) && !k.link &&
					k.n >= max(tr.lo, c.min) && k.n <= tr.hi && c.restLong(k) {
					return *k, true
				}
			}
			if !tr.byClass {
				break
			}
		}
	}
	return cut{}, false
}

// restLong reports whether the text after k renders at least min units long.
func (c *cutter) restLong(k *cut) bool {
	p, carry := skip(c.toks, k.resume(c.toks), k.stack)
	if p.t >= len(c.toks) {
		return false
	}
	r := c.piece(p, carry, run{probe: true})
	return r.long || r.ok && Length(r.s) >= c.min
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
	snapLink bool // a link is open
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

func (e *emitter) record(c *cut, class int, p pos, skip bool) {
	e.sync()
	if !e.snapOK {
		e.snap = make([]*marker, len(e.stack))
		e.snapLink = false
		for i, en := range e.stack {
			e.snap[i] = en.m
			e.snapLink = e.snapLink || en.m.link
		}
		e.snapOK = true
	}
	*c = cut{ok: true, class: class, bytes: len(e.out), n: e.n + e.closeN, p: p, skip: skip, close: e.closeS, stack: e.snap, link: e.snapLink}
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
		// '<' stays as written: Discord's <@…>, <#…> and <t:…> forms
		// are the agent's to use, and allowed_mentions (not the text)
		// keeps mentions from pinging. A '>' only quotes at a line's start.
		switch {
		case strings.ContainsRune("\\*_~`|[]", r),
			st == lsStart && (r == '#' || r == '-' || r == '+' || r == '>'),
			st == lsDigits && (r == '.' || r == ')'):
			return "\\" + string(r)
		}
	}
	return ""
}
