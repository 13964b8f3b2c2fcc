package render

// kind is what a token does in the stream.
type kind uint8

const (
	kText  kind = iota // literal text, escaped for the dialect when written
	kRaw               // markup or decoration written as is and never cut (bullets, rules)
	kOpen              // pushes a marker
	kClose             // pops the innermost marker
	kNL                // line break (blank: an empty line between blocks in a container)
	kBlock             // gap between top-level blocks: the preferred place to cut
)

// mode says how text is escaped.
type mode uint8

const (
	mText      mode = iota // ordinary text
	mLinkText              // a Slack link label
	mURL                   // a bare URL in Discord text: not escaped (Discord links it itself)
	mCodeSpan              // inline code
	mCodeBlock             // a line of a code block or table
)

func (m mode) code() bool { return m >= mCodeSpan }

// marker is a span or container with markup on both ends, which the splitter closes at the end of a
// piece and reopens at the start of the next.
type marker struct {
	open, close string
	prefix      string // written at the start of every line while open (quotes, list indentation)
	block       bool   // open and close stand on lines of their own (``` fences)
	verbatim    bool   // no line prefixes inside (Telegram <pre>: indentation would become code)
	link        bool   // a link: cut inside only when nothing else fits
}

// token is one element of the rendered stream.
type token struct {
	k     kind
	s     string // kText, kRaw
	m     *marker
	mode  mode // kText, kNL (mCodeBlock: a line break inside code)
	glue  bool // kRaw: never cut directly after it (list bullets); kBlock: a poor place to cut (after a heading)
	blank bool // kNL: blank line
}

// hasContent reports whether toks write anything visible.
func hasContent(toks []token) bool {
	for _, t := range toks {
		switch t.k {
		case kRaw:
			return true
		case kText:
			for _, r := range t.s {
				if !isSpace(r) {
					return true
				}
			}
		}
	}
	return false
}

func isSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' || r == '\v'
}
