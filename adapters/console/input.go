package console

import (
	"bufio"
	"io"
	"unicode"
	"unicode/utf8"
)

// This file: the line editor used when Options.Echo is set. The terminal's
// own echo and line editing are off then, so the adapter reads keys, keeps
// the line being typed, and draws it after the prompt only while the prompt
// is shown: typing never lands inside streamed output.

// keyCode names a key that is not a character to insert.
type keyCode int

const (
	keyRune      keyCode = iota // key.r is a character to insert
	keyEnter                    // submit the line
	keyBackspace                // delete before the cursor
	keyDelete                   // delete at the cursor
	keyEOF                      // Ctrl-D: end of input on an empty line, else delete
	keyLeft
	keyRight
	keyHome
	keyEnd
	keyUp   // older history
	keyDown // newer history
	keyKillStart
	keyKillEnd
	keyKillWord
	keyIgnore
)

// key is one decoded keypress.
type key struct {
	code keyCode
	r    rune
}

// readKeys decodes keypresses from in and sends them on keys until in
// fails or ends (the error, nil at EOF, goes on errc) or done is closed. A
// read in progress cannot be interrupted.
func readKeys(in io.Reader, keys chan<- key, errc chan<- error, done <-chan struct{}) {
	br := bufio.NewReader(in)
	prevCR := false
	for {
		k, err := decodeKey(br)
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			errc <- err
			return
		}
		// A terminal in raw mode sends \r for Enter, a paste may carry
		// \r\n: one Enter either way.
		cr := k.code == keyEnter && k.r == '\r'
		if k.code == keyEnter && k.r == '\n' && prevCR {
			prevCR = false
			continue
		}
		prevCR = cr
		if k.code == keyIgnore {
			continue
		}
		select {
		case keys <- k:
		case <-done:
			return
		}
	}
}

// decodeKey reads one keypress: a character, a control key or an escape
// sequence (arrows, Home, End, Delete). Unknown sequences are ignored.
func decodeKey(br *bufio.Reader) (key, error) {
	r, _, err := br.ReadRune()
	if err != nil {
		return key{}, err
	}
	switch r {
	case '\r', '\n':
		return key{code: keyEnter, r: r}, nil
	case 0x7f, 0x08:
		return key{code: keyBackspace}, nil
	case 0x04:
		return key{code: keyEOF}, nil
	case 0x01:
		return key{code: keyHome}, nil
	case 0x05:
		return key{code: keyEnd}, nil
	case 0x02:
		return key{code: keyLeft}, nil
	case 0x06:
		return key{code: keyRight}, nil
	case 0x10:
		return key{code: keyUp}, nil
	case 0x0e:
		return key{code: keyDown}, nil
	case 0x15:
		return key{code: keyKillStart}, nil
	case 0x0b:
		return key{code: keyKillEnd}, nil
	case 0x17:
		return key{code: keyKillWord}, nil
	case '\t':
		return key{code: keyRune, r: ' '}, nil
	case 0x1b:
		return decodeEscape(br)
	}
	if r == utf8.RuneError || unicode.IsControl(r) {
		return key{code: keyIgnore}, nil
	}
	return key{code: keyRune, r: r}, nil
}

// decodeEscape reads the rest of a sequence that began with ESC. A lone
// ESC (nothing else already sent) is ignored: terminals send a sequence in
// one write.
func decodeEscape(br *bufio.Reader) (key, error) {
	if br.Buffered() == 0 {
		return key{code: keyIgnore}, nil
	}
	b, err := br.ReadByte()
	if err != nil {
		return key{}, err
	}
	switch b {
	case 'O': // SS3: ESC O H/F, or arrows in application mode
		c, err := br.ReadByte()
		if err != nil {
			return key{}, err
		}
		return finalKey(c, ""), nil
	case '[': // CSI: parameters, then a final byte in 0x40..0x7e
		var params []byte
		for {
			c, err := br.ReadByte()
			if err != nil {
				return key{}, err
			}
			if c >= 0x40 && c <= 0x7e {
				return finalKey(c, string(params)), nil
			}
			if len(params) < 16 {
				params = append(params, c)
			}
		}
	}
	return key{code: keyIgnore}, nil // Alt+key and the like
}

// finalKey maps a CSI or SS3 sequence's final byte and parameters to a key.
func finalKey(final byte, params string) key {
	switch final {
	case 'A':
		return key{code: keyUp}
	case 'B':
		return key{code: keyDown}
	case 'C':
		return key{code: keyRight}
	case 'D':
		return key{code: keyLeft}
	case 'H':
		return key{code: keyHome}
	case 'F':
		return key{code: keyEnd}
	case '~':
		switch params {
		case "1", "7":
			return key{code: keyHome}
		case "4", "8":
			return key{code: keyEnd}
		case "3":
			return key{code: keyDelete}
		}
	}
	return key{code: keyIgnore}
}

// maxHistory bounds the lines kept for Up and Down.
const maxHistory = 200

// editor is the line being typed and the lines typed before.
type editor struct {
	line    []rune
	pos     int // cursor, an index into line
	history []string
	browse  int    // index into history while browsing; len(history) when not
	draft   []rune // the line being typed when browsing began
}

// apply changes the line for k. It reports the submitted line for Enter
// (submit true), and eof for Ctrl-D on an empty line.
func (e *editor) apply(k key) (line string, submit, eof bool) {
	switch k.code {
	case keyRune:
		e.line = append(e.line[:e.pos], append([]rune{k.r}, e.line[e.pos:]...)...)
		e.pos++
	case keyEnter:
		line = string(e.line)
		if line != "" && (len(e.history) == 0 || e.history[len(e.history)-1] != line) {
			e.history = append(e.history, line)
			if len(e.history) > maxHistory {
				e.history = e.history[1:]
			}
		}
		e.line, e.pos, e.browse, e.draft = nil, 0, len(e.history), nil
		return line, true, false
	case keyBackspace:
		if e.pos > 0 {
			e.line = append(e.line[:e.pos-1], e.line[e.pos:]...)
			e.pos--
		}
	case keyEOF:
		if len(e.line) == 0 {
			return "", false, true
		}
		fallthrough
	case keyDelete:
		if e.pos < len(e.line) {
			e.line = append(e.line[:e.pos], e.line[e.pos+1:]...)
		}
	case keyLeft:
		e.pos = max(e.pos-1, 0)
	case keyRight:
		e.pos = min(e.pos+1, len(e.line))
	case keyHome:
		e.pos = 0
	case keyEnd:
		e.pos = len(e.line)
	case keyKillStart:
		e.line, e.pos = append([]rune(nil), e.line[e.pos:]...), 0
	case keyKillEnd:
		e.line = e.line[:e.pos]
	case keyKillWord:
		i := e.pos
		for i > 0 && unicode.IsSpace(e.line[i-1]) {
			i--
		}
		for i > 0 && !unicode.IsSpace(e.line[i-1]) {
			i--
		}
		e.line, e.pos = append(e.line[:i], e.line[e.pos:]...), i
	case keyUp:
		if e.browse > 0 {
			if e.browse == len(e.history) {
				e.draft = append([]rune(nil), e.line...)
			}
			e.browse--
			e.line = []rune(e.history[e.browse])
			e.pos = len(e.line)
		}
	case keyDown:
		if e.browse < len(e.history) {
			e.browse++
			if e.browse == len(e.history) {
				e.line = e.draft
			} else {
				e.line = []rune(e.history[e.browse])
			}
			e.pos = len(e.line)
		}
	}
	return "", false, false
}
