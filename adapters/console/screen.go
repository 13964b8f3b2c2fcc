package console

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge/internal/termtext"
)

// Terminal drawing: how the adapter's output and the input prompt are laid
// out on a terminal — blocks printed from a line start, the prompt erased
// and drawn again around output, a streamed message continued or redrawn in
// place, and the cursor arithmetic (wrapping, wide runes) that needs. What
// the platform does with posts and lines is in console.go.

const (
	// eraseLine returns to the start of the line and clears it; used to
	// take the prompt away before output.
	eraseLine = "\r\x1b[K"
	// clearDown clears from the cursor to the end of the screen.
	clearDown = "\x1b[J"
	// defaultWidth is the terminal width assumed when Options.Width is
	// missing or fails.
	defaultWidth = 80
)

// Redraw shows the prompt (and the line being typed) again on a fresh
// line, for when the terminal was handed back after something else used
// it (fg after Ctrl-Z): what the adapter printed before is no longer where
// it was, so nothing printed earlier is edited in place any more.
func (a *Adapter) Redraw() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.promptShown, a.lineStart, a.tail = false, true, ""
	a.begin("", "")
	a.showPromptLocked()
}

// End finishes the output when nothing more will be printed: it ends the
// last line (after the prompt, if shown), so whatever the terminal shows
// next starts on a line of its own.
func (a *Adapter) End() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.timer != nil {
		a.timer.Stop()
	}
	a.waiting = false
	if a.promptShown && a.ed != nil && !a.drawInput(true) {
		a.promptShown = false
		return
	}
	if a.promptShown || !a.lineStart {
		a.promptShown = false
		a.control("\n", true)
	}
}

// freshLine moves output to the start of a line: it erases a shown prompt,
// or ends the current line.
func (a *Adapter) freshLine() {
	a.erasePrompt()
	if !a.lineStart {
		open := a.tail != "" && a.tail == a.lastID
		a.write("\n")
		a.resumable = open
	}
	a.tail = ""
}

// begin starts a new block, printed from a line start, for post id ("" for
// output that is no post's).
func (a *Adapter) begin(id, mark string) {
	a.lastID, a.lastMark = id, mark
	a.lastOut = a.lastOut[:0]
	a.resumable = false
}

// erasePrompt takes a shown prompt (and the line typed after it) away,
// leaving the cursor at the start of its first row.
func (a *Adapter) erasePrompt() {
	if a.promptShown {
		a.promptShown = false
		a.control(a.eraseInputSeq(), true)
	}
}

// eraseInputSeq returns to the start of the prompt's first row and clears
// what the prompt and the typed line cover.
func (a *Adapter) eraseInputSeq() string {
	if a.curRow == 0 && a.rows <= 1 {
		return eraseLine
	}
	seq := "\r"
	if a.curRow > 0 {
		seq += fmt.Sprintf("\x1b[%dA", a.curRow)
	}
	return seq + clearDown
}

// drawInput shows the prompt with the line being typed (Options.Echo) and
// puts the cursor at the editing position, or, with atEnd, after the line.
// A shown prompt is drawn again in place; otherwise it goes on a fresh line.
// It reports whether the cursor is not at a row's start.
func (a *Adapter) drawInput(atEnd bool) (midRow bool) {
	if a.promptShown {
		a.control(a.eraseInputSeq(), true)
		a.promptShown = false
	} else {
		a.freshLine()
	}
	line := string(a.ed.line)
	before := a.prompt + string(a.ed.line[:a.ed.pos])
	if atEnd {
		before = a.prompt + line
	}
	w := a.cols()
	endRow, endCol := cursorPos([]byte(a.prompt+line), w)
	seq := a.prompt + line
	if endCol >= w {
		// A full last row leaves the cursor in the terminal's pending-wrap
		// state, which cursor moves cannot restore: start the next row.
		seq += " \r"
		endRow, endCol = endRow+1, 0
	}
	row, col := cursorPos([]byte(before), w)
	if col >= w {
		row, col = row+1, 0
	}
	if up := endRow - row; up > 0 {
		seq += fmt.Sprintf("\x1b[%dA", up)
	}
	if col != endCol || endRow != row {
		seq += fmt.Sprintf("\x1b[%dG", col+1)
	}
	a.control(seq, col == 0)
	a.promptShown = true
	a.rows, a.curRow = endRow+1, row
	return col > 0
}

// clearBlock moves the cursor to the start of the block's first row and
// clears the screen from there down, prompt included.
func (a *Adapter) clearBlock() {
	// The block ends with the newline before the prompt when one is shown,
	// so its last row is the prompt's first.
	up, _ := cursorPos(a.lastOut, a.cols())
	if a.promptShown {
		up += a.curRow
	}
	seq := "\r"
	if up > 0 {
		seq += fmt.Sprintf("\x1b[%dA", up)
	}
	a.promptShown = false
	a.control(seq+clearDown, true)
	a.tail = ""
	a.begin("", "")
}

// canResume reports whether the post that ends the block can be continued
// where its text ends: only the prompt follows it, on the next row, and the
// text does not fill its last row (the terminal would wrap the next
// character, a state that cannot be restored).
func (a *Adapter) canResume() bool {
	if !a.resumable || !a.promptShown {
		return false
	}
	_, col := cursorPos(a.lastOut[:len(a.lastOut)-1], a.cols())
	return col < a.cols()
}

// resume erases the prompt and puts the cursor back after the text of the
// block's post, dropping the newline freshLine added before the prompt.
func (a *Adapter) resume() {
	a.lastOut = a.lastOut[:len(a.lastOut)-1]
	_, col := cursorPos(a.lastOut, a.cols())
	a.control(fmt.Sprintf("%s\x1b[A\x1b[%dG", a.eraseInputSeq(), col+1), false)
	a.promptShown, a.resumable = false, false
}

// cols is the terminal width.
func (a *Adapter) cols() int {
	if a.width != nil {
		if w := a.width(); w > 0 {
			return w
		}
	}
	return defaultWidth
}

// write prints s, part of the block, and tracks whether the cursor is at a
// line start. s is text (the agent's, a user's name, a notice), never an
// escape of ours (those go through control): its control characters are
// shown, not obeyed, so an agent cannot write the clipboard, set the title
// or erase what was printed.
func (a *Adapter) write(s string) error {
	if s == "" {
		return nil
	}
	s = termtext.Visible(s)
	a.lastOut = append(a.lastOut, s...)
	a.resumable = false
	a.lineStart = strings.HasSuffix(s, "\n")
	_, err := io.WriteString(a.out, s)
	return err
}

// control prints s, the prompt or escapes that are no part of the block,
// after which the cursor is at a line start or not.
func (a *Adapter) control(s string, lineStart bool) {
	a.lineStart = lineStart
	// A failed write shows on the next post or edit.
	io.WriteString(a.out, s)
}

// showPromptLocked prints the prompt on a fresh line, when interactive.
func (a *Adapter) showPromptLocked() {
	if a.prompt == "" || !a.waiting || a.promptShown {
		return
	}
	tail := a.tail
	if a.ed != nil {
		a.drawInput(false)
	} else {
		a.freshLine()
		a.control(a.prompt, false)
		a.promptShown = true
	}
	// Erasing the prompt returns to this line's start, right after the
	// tail message's text when that ended a line.
	if tail != "" && strings.HasSuffix(a.posts[tail].textOrEmpty(), "\n") {
		a.tail = tail
	}
}

// schedulePromptLocked shows the prompt again once output has been quiet
// for promptDelay.
func (a *Adapter) schedulePromptLocked() {
	if a.prompt == "" || !a.waiting {
		return
	}
	if a.ed != nil && len(a.ed.line) > 0 {
		// The user is typing: keep their line in view below the output.
		a.showPromptLocked()
		return
	}
	if a.timer == nil {
		a.timer = time.AfterFunc(promptDelay, func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			a.showPromptLocked()
		})
		return
	}
	a.timer.Reset(promptDelay)
}

// cursorPos reports where the cursor ends, as a row below the first and a
// column, after s is printed from a line start on a terminal width columns
// wide that wraps long lines. A column of width means the row is full and
// the next character goes on the next row.
func cursorPos(s []byte, width int) (row, col int) {
	for len(s) > 0 {
		r, size := utf8.DecodeRune(s)
		s = s[size:]
		switch r {
		case '\n':
			row, col = row+1, 0
			continue
		case '\r':
			col = 0
			continue
		case '\t':
			// Tab stops every 8 columns; a tab never wraps.
			col = min((col/8+1)*8, width)
			continue
		}
		w := runeWidth(r)
		if w == 0 {
			continue
		}
		if col+w > width {
			row, col = row+1, 0
		}
		col += w
	}
	return row, col
}

// runeWidth is how many columns a terminal gives r: 0 for controls and
// combining marks, 2 for East Asian wide characters and emoji, else 1. It
// follows Unicode's East Asian Width closely enough for counting rows.
func runeWidth(r rune) int {
	switch {
	case r < 0x20 || r >= 0x7f && r < 0xa0:
		return 0
	case r < 0x300:
		return 1
	case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf):
		return 0
	}
	_, found := slices.BinarySearchFunc(wide, r, func(rg [2]rune, r rune) int {
		switch {
		case rg[1] < r:
			return -1
		case rg[0] > r:
			return 1
		}
		return 0
	})
	if found {
		return 2
	}
	return 1
}

// wide lists, sorted, the ranges of characters shown two columns wide:
// Unicode's East Asian Wide and Fullwidth ranges, condensed.
var wide = [][2]rune{
	{0x1100, 0x115f}, {0x231a, 0x231b}, {0x2329, 0x232a}, {0x23e9, 0x23ec},
	{0x23f0, 0x23f0}, {0x23f3, 0x23f3}, {0x25fd, 0x25fe}, {0x2614, 0x2615},
	{0x2648, 0x2653}, {0x267f, 0x267f}, {0x2693, 0x2693}, {0x26a1, 0x26a1},
	{0x26aa, 0x26ab}, {0x26bd, 0x26be}, {0x26c4, 0x26c5}, {0x26ce, 0x26ce},
	{0x26d4, 0x26d4}, {0x26ea, 0x26ea}, {0x26f2, 0x26f3}, {0x26f5, 0x26f5},
	{0x26fa, 0x26fa}, {0x26fd, 0x26fd}, {0x2705, 0x2705}, {0x270a, 0x270b},
	{0x2728, 0x2728}, {0x274c, 0x274c}, {0x274e, 0x274e}, {0x2753, 0x2755},
	{0x2757, 0x2757}, {0x2795, 0x2797}, {0x27b0, 0x27b0}, {0x27bf, 0x27bf},
	{0x2b1b, 0x2b1c}, {0x2b50, 0x2b50}, {0x2b55, 0x2b55}, {0x2e80, 0x303e},
	{0x3041, 0x33ff}, {0x3400, 0x4dbf}, {0x4e00, 0x9fff}, {0xa000, 0xa4cf},
	{0xa960, 0xa97f}, {0xac00, 0xd7a3}, {0xf900, 0xfaff}, {0xfe10, 0xfe19},
	{0xfe30, 0xfe6f}, {0xff00, 0xff60}, {0xffe0, 0xffe6}, {0x16fe0, 0x16fe4},
	{0x17000, 0x18cd5}, {0x1b000, 0x1b2fb}, {0x1f004, 0x1f004}, {0x1f0cf, 0x1f0cf},
	{0x1f18e, 0x1f18e}, {0x1f191, 0x1f19a}, {0x1f200, 0x1f251}, {0x1f300, 0x1f320},
	{0x1f32d, 0x1f335}, {0x1f337, 0x1f37c}, {0x1f37e, 0x1f393}, {0x1f3a0, 0x1f3ca},
	{0x1f3cf, 0x1f3d3}, {0x1f3e0, 0x1f3f0}, {0x1f3f4, 0x1f3f4}, {0x1f3f8, 0x1f43e},
	{0x1f440, 0x1f440}, {0x1f442, 0x1f4fc}, {0x1f4ff, 0x1f53d}, {0x1f54b, 0x1f54e},
	{0x1f550, 0x1f567}, {0x1f57a, 0x1f57a}, {0x1f595, 0x1f596}, {0x1f5a4, 0x1f5a4},
	{0x1f5fb, 0x1f64f}, {0x1f680, 0x1f6c5}, {0x1f6cc, 0x1f6cc}, {0x1f6d0, 0x1f6d2},
	{0x1f6d5, 0x1f6d7}, {0x1f6dc, 0x1f6df}, {0x1f6eb, 0x1f6ec}, {0x1f6f4, 0x1f6fc},
	{0x1f7e0, 0x1f7eb}, {0x1f7f0, 0x1f7f0}, {0x1f90c, 0x1f93a}, {0x1f93c, 0x1f945},
	{0x1f947, 0x1f9ff}, {0x1fa70, 0x1fafc}, {0x20000, 0x2fffd}, {0x30000, 0x3fffd},
}
