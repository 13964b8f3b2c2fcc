// Package console is the terminal adapter: a core.Platform that reads chat
// messages as lines from an input and prints the bridge's posts to an
// output, so agentbridge can be tried without any chat service.
//
// A streamed answer appears in place: an edit that extends the message
// printed last prints only the new text, and on an interactive terminal any
// other edit of that message redraws it where it stands. Buttons are shown
// with a key each ("[A]llow / [D]eny / Allow for this [s]ession"); typing a
// key on its own line, or a word core.ParseAnswer reads as the button's
// answer (y, yes, n, no, …), presses the button. While buttons wait for an
// answer, any other line (bar a /command) asks again instead of becoming a
// message.
package console

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/render"
	"github.com/agentbridge/agentbridge/internal/termtext"
)

// Name is the adapter's name, used as ConversationKey.Platform.
const Name = "console"

const (
	maxText = 1 << 20 // Limits.MaxText; also the longest input line
	// maxPosts is how many sent messages stay editable; a long session
	// would otherwise keep every answer in memory.
	maxPosts = 512
	// promptDelay is how long output must be quiet before the prompt is
	// shown again, so the prompt does not flicker between streamed edits.
	promptDelay = 400 * time.Millisecond
	// editMark starts a message printed again because it changed.
	editMark = "  ↳ "
	// moreMark starts the new end of a message printed earlier, when other
	// output came after it.
	moreMark = editMark + "…"
	// eraseLine returns to the start of the line and clears it; used to
	// take the prompt away before output.
	eraseLine = "\r\x1b[K"
	// clearDown clears from the cursor to the end of the screen.
	clearDown = "\x1b[J"
	// defaultWidth is the terminal width assumed when Options.Width is
	// missing or fails.
	defaultWidth = 80
)

var _ core.Platform = (*Adapter)(nil)

// Options configures an Adapter. Zero fields take the defaults.
type Options struct {
	Conv   core.ConversationKey // default {Platform: "console", Channel: "local"}
	User   core.User            // default {ID: "local", Name: $USER, $LOGNAME, the OS user's name, or "local"}
	Prompt string               // printed before reading a line when interactive, e.g. "you> "
	// Width reports the terminal's width in columns, so that a message
	// redrawn in place is known to span its wrapped rows. Nil, or a result
	// of 0 or less, means 80. Used only when Prompt is set.
	Width func() int
	// Echo says the input is a terminal in character mode, its own echo
	// and line editing off: the adapter then reads keys, draws the line
	// being typed after the prompt (with the usual editing keys and
	// history), and takes it away before any output, so typing never lands
	// inside a streamed answer. Used only when Prompt is set.
	Echo bool
}

// Adapter is a core.Platform for a terminal. Its methods are safe for
// concurrent use; output is serialized.
type Adapter struct {
	in       io.Reader
	conv     core.ConversationKey
	user     core.User
	prompt   string
	width    func() int // nil: defaultWidth
	idPrefix string     // start time: ids stay unique across restarts
	running  atomic.Bool
	msgSeq   atomic.Int64

	mu          sync.Mutex // guards everything below, and writes to out
	out         io.Writer
	seq         int
	posts       map[string]*post
	order       []string // post ids, oldest first, for eviction
	lastButtons string   // id of the most recent post that carried buttons
	tail        string   // id of the post whose text ends at the cursor
	lineStart   bool     // the cursor is at the start of a line
	promptShown bool     // the prompt is the last thing printed
	waiting     bool     // Run is reading input, so the prompt may be shown
	timer       *time.Timer

	// With Options.Echo: the line being typed, and where the prompt shown
	// with it left the cursor (rows below the prompt's first).
	ed     *editor
	curRow int
	rows   int // rows the prompt and line take

	// The block is everything printed, from a line start, since the post
	// lastID began to be printed (with lastMark), bar the prompt and
	// escapes. Its rows are what an interactive redraw moves up over.
	lastID   string // "": the block is no post's (a notice, the user's line)
	lastMark string
	lastOut  []byte
	// resumable: the block is the text of post lastID plus the one newline
	// freshLine added to show the prompt, so erasing the prompt and going
	// back up to the text's end continues it.
	resumable bool
}

// post is a message the adapter printed, kept for edits.
type post struct {
	ref     core.MessageRef
	text    string
	buttons []core.Button
	keys    []buttonKey
}

// New returns an Adapter reading lines from in and printing to out. Set
// opts.Prompt only when in is an interactive terminal: the prompt is erased
// and redrawn with ANSI escapes, and the adapter assumes the terminal echoed
// each line the user typed.
func New(in io.Reader, out io.Writer, opts Options) *Adapter {
	var ed *editor
	if opts.Echo && opts.Prompt != "" {
		ed = &editor{}
	}
	if opts.Conv == (core.ConversationKey{}) {
		opts.Conv = core.ConversationKey{Platform: Name, Channel: "local"}
	}
	if opts.User == (core.User{}) {
		opts.User = core.User{ID: "local", Name: defaultUserName(os.Getenv, user.Current)}
	}
	return &Adapter{
		in:        in,
		out:       out,
		conv:      opts.Conv,
		user:      opts.User,
		prompt:    opts.Prompt,
		width:     opts.Width,
		idPrefix:  fmt.Sprintf("%x", time.Now().UnixNano()),
		posts:     make(map[string]*post),
		lineStart: true,
		ed:        ed,
		rows:      1,
	}
}

// Name returns "console".
func (a *Adapter) Name() string { return Name }

// Limits reports the terminal's limits: plain text, generous sizes, and a
// short edit interval since printing costs nothing.
func (a *Adapter) Limits() core.Limits {
	return core.Limits{
		MaxText:        maxText,
		EditInterval:   50 * time.Millisecond,
		MaxButtonValue: 256,
		Dialect:        render.Plain,
	}
}

// Run reads lines from the input and hands each non-empty one to h: as an
// Action when it is the key of a button on the most recent post with
// buttons (while those buttons are still shown), otherwise as a Message. It
// returns nil when the input reaches EOF, after handing over every line, or
// when ctx is done. Run may be called once.
//
// An io.Reader cannot be interrupted, so when ctx ends Run returns without
// waiting for a blocked read. The one goroutine reading the input is owned by
// Run and ends when the input reaches EOF or fails (close the pipe, or exit).
func (a *Adapter) Run(ctx context.Context, h core.Handler) error {
	if !a.running.CompareAndSwap(false, true) {
		return errors.New("console: run: already running")
	}
	lines := make(chan string)
	keys := make(chan key)
	errc := make(chan error, 1)
	done := make(chan struct{})
	if a.ed != nil {
		go readKeys(a.in, keys, errc, done)
	} else {
		go readLines(a.in, lines, errc, done)
	}
	defer func() {
		close(done)
		a.mu.Lock()
		a.waiting = false
		if a.timer != nil {
			a.timer.Stop()
		}
		a.mu.Unlock()
	}()

	a.mu.Lock()
	a.waiting = true
	a.showPromptLocked()
	a.mu.Unlock()
	for {
		select {
		case <-ctx.Done():
			return nil
		case line := <-lines:
			a.handleLine(ctx, h, line)
		case k := <-keys:
			if !a.handleKey(ctx, h, k) {
				return nil // Ctrl-D on an empty line
			}
		case err := <-errc:
			if err != nil {
				return fmt.Errorf("console: read input: %w", err)
			}
			return nil
		}
	}
}

// readLines sends each input line on lines, then the read error (nil at
// EOF) on errc. It stops early when done is closed, except that a read in
// progress cannot be interrupted.
func readLines(in io.Reader, lines chan<- string, errc chan<- error, done <-chan struct{}) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 4096), maxText+2)
	for sc.Scan() {
		select {
		case lines <- sc.Text():
		case <-done:
			return
		}
	}
	errc <- sc.Err()
}

// handleKey applies one keypress to the line being typed, and hands the
// line on at Enter. It reports false for Ctrl-D on an empty line: the end
// of input.
func (a *Adapter) handleKey(ctx context.Context, h core.Handler, k key) bool {
	a.mu.Lock()
	if k.code == keyEnter {
		// Leave the prompt and the line on screen as the record of what
		// was said, as a terminal's echo would, and go to the next line.
		if a.drawInput(true) {
			a.control("\n", true)
		}
	}
	line, submit, eof := a.ed.apply(k)
	switch {
	case eof:
		a.mu.Unlock()
		return false
	case submit:
		a.mu.Unlock()
		a.handleLine(ctx, h, line)
		return true
	}
	a.drawInput(false)
	a.mu.Unlock()
	return true
}

// handleLine turns one input line into a Message or an Action.
func (a *Adapter) handleLine(ctx context.Context, h core.Handler, line string) {
	text := strings.TrimSpace(line)
	a.mu.Lock()
	if a.prompt != "" {
		// The line and its newline follow the prompt (the terminal's echo,
		// or handleKey's).
		a.promptShown, a.lineStart, a.tail = false, true, ""
		a.begin("", "")
	}
	var act *core.Action
	var reask *post
	if p := a.posts[a.lastButtons]; p != nil && len(p.buttons) > 0 && text != "" {
		if i := p.pressed(text); i >= 0 {
			act = &core.Action{Conv: p.ref.Conv, From: a.user, Value: p.buttons[i].Value, Ref: p.ref}
		} else if !strings.HasPrefix(text, "/") {
			reask = p
		}
	}
	if reask != nil {
		// Buttons are waiting: a stray line is not a message for the
		// agent, which could not read it before the answer anyway.
		a.freshLine()
		a.begin("", "")
		words := ""
		if slices.ContainsFunc(reask.buttons, func(b core.Button) bool { return b.Answer != 0 }) {
			words = " (or y / n)" // a permission prompt: ParseAnswer's words work too
		}
		a.write("  Please answer " + reask.keyLine() + words + ", or send a /command.\n")
		a.schedulePromptLocked()
		a.mu.Unlock()
		return
	}
	a.mu.Unlock()

	switch {
	case text == "":
	case act != nil:
		act.Reply = a.reply
		h.HandleAction(ctx, *act)
	default:
		h.HandleMessage(ctx, core.Message{
			Conv: a.conv,
			ID:   fmt.Sprintf("%s-%d", a.idPrefix, a.msgSeq.Add(1)),
			From: a.user,
			Text: text,
			Time: time.Now(),
		})
	}
	a.mu.Lock()
	a.schedulePromptLocked()
	a.mu.Unlock()
}

// Send prints p on a fresh line, with its button keys, and returns a
// reference for edits.
func (a *Adapter) Send(ctx context.Context, to core.ConversationKey, p core.Post) (core.MessageRef, error) {
	if err := ctx.Err(); err != nil {
		return core.MessageRef{}, fmt.Errorf("console: send: %w", err)
	}
	if tooLong(p.Text) {
		return core.MessageRef{}, fmt.Errorf("console: send: %w", core.ErrMessageTooLong)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seq++
	ps := &post{
		ref:     core.MessageRef{Conv: to, ID: fmt.Sprintf("%s-%d", a.idPrefix, a.seq)},
		text:    p.Text,
		buttons: slices.Clone(p.Buttons),
		keys:    buttonKeys(p.Buttons),
	}
	a.remember(ps)
	if len(ps.buttons) > 0 {
		a.lastButtons = ps.ref.ID
	}
	err := a.printPost(ps, "")
	a.schedulePromptLocked()
	if err != nil {
		return core.MessageRef{}, fmt.Errorf("console: send: %w", err)
	}
	return ps.ref, nil
}

// Edit shows the new content of a message:
//
//   - When the message's text ends at the cursor and the new text extends
//     it, only the new suffix is printed, so streamed text grows in place.
//   - When the edit removes the buttons and extends the text (an answered
//     prompt), the added text goes on a fresh indented line.
//   - On an interactive terminal (Options.Prompt set), any other change to
//     the message printed last is redrawn in place: the cursor moves up over
//     the rows it spans, the screen below is cleared, and it is printed
//     again. A continuation after a pause, with the prompt shown below it,
//     resumes at the text's end instead.
//   - An edit that extends a message printed before other output prints the
//     new suffix on a fresh line marked "↳ …".
//   - Any other change prints the whole new text on a fresh line marked
//     "↳"; escapes would corrupt a log or pipe.
func (a *Adapter) Edit(ctx context.Context, ref core.MessageRef, p core.Post) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("console: edit: %w", err)
	}
	if tooLong(p.Text) {
		return fmt.Errorf("console: edit: %w", core.ErrMessageTooLong)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	old := a.posts[ref.ID]
	if old == nil || old.ref.Conv != ref.Conv {
		return fmt.Errorf("console: edit %s: %w", ref.ID, core.ErrNotFound)
	}
	sameButtons := slices.Equal(old.buttons, p.Buttons)
	if old.text == p.Text && sameButtons {
		return fmt.Errorf("console: edit %s: %w", ref.ID, core.ErrNotModified)
	}
	suffix, extends := strings.CutPrefix(p.Text, old.text)
	removed := len(old.buttons) > 0 && len(p.Buttons) == 0
	redraw := a.prompt != "" && a.lastID == ref.ID

	old.text = p.Text
	old.buttons = slices.Clone(p.Buttons)
	old.keys = buttonKeys(p.Buttons)
	if len(p.Buttons) > 0 {
		a.lastButtons = ref.ID
	}

	var err error
	switch {
	case extends && a.tail == ref.ID:
		a.erasePrompt()
		err = a.write(suffix)
		if len(old.buttons) > 0 {
			// Buttons added to the last message: its keys go under it.
			err = errors.Join(err, a.printKeys(old))
		}
	case extends && removed:
		// The engine appends the outcome after a blank line; the prompt
		// and its keys stay above as they were.
		if outcome := strings.TrimLeftFunc(suffix, unicode.IsSpace); outcome != "" {
			a.freshLine()
			a.begin(ref.ID, editMark)
			err = a.write("  " + outcome)
			a.tail = ref.ID
		}
	case redraw && extends && sameButtons && a.canResume():
		a.resume()
		err = a.write(suffix)
		a.tail = ref.ID
	case redraw:
		mark := a.lastMark
		a.clearBlock()
		err = a.printPost(old, mark)
	case extends && suffix != "" && sameButtons:
		a.freshLine()
		a.begin(ref.ID, editMark)
		err = a.write(moreMark + suffix)
		a.tail = ref.ID
		if len(old.buttons) > 0 {
			err = errors.Join(err, a.printKeys(old))
		}
	default:
		err = a.printPost(old, editMark)
	}
	a.schedulePromptLocked()
	if err != nil {
		return fmt.Errorf("console: edit %s: %w", ref.ID, err)
	}
	return nil
}

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

// reply answers a button press: Action.Reply.
func (a *Adapter) reply(text string) {
	if text == "" {
		return // a press core had nothing to say about
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.freshLine()
	a.begin("", "")
	a.write("  → " + text + "\n")
	a.schedulePromptLocked()
}

// remember stores p for edits, forgetting the oldest beyond maxPosts.
func (a *Adapter) remember(p *post) {
	a.posts[p.ref.ID] = p
	a.order = append(a.order, p.ref.ID)
	if len(a.order) > maxPosts {
		delete(a.posts, a.order[0])
		a.order = slices.Delete(a.order, 0, 1)
	}
}

// printPost prints p's whole text (after mark) on a fresh line, then its
// button keys on the next line.
func (a *Adapter) printPost(p *post, mark string) error {
	a.freshLine()
	a.begin(p.ref.ID, mark)
	err := a.write(mark + p.text)
	a.tail = p.ref.ID
	if len(p.buttons) > 0 {
		err = errors.Join(err, a.printKeys(p))
	}
	return err
}

// printKeys prints p's button keys on their own line.
func (a *Adapter) printKeys(p *post) error {
	a.freshLine()
	err := a.write("  " + p.keyLine() + "\n")
	a.tail = ""
	return err
}

// keyLine shows p's buttons with their keys: "[A]llow / [D]eny".
func (p *post) keyLine() string {
	labels := make([]string, len(p.keys))
	for i, k := range p.keys {
		labels[i] = k.display(p.buttons[i].Label)
	}
	return strings.Join(labels, " / ")
}

// pressed returns the index of the button that text presses — its key,
// or a word core.ParseAnswer reads as the button's answer — or -1.
func (p *post) pressed(text string) int {
	for i, k := range p.keys {
		if strings.EqualFold(text, k.key) {
			return i
		}
	}
	if ans, ok := core.ParseAnswer(text); ok {
		for i, b := range p.buttons {
			if b.Answer == ans {
				return i
			}
		}
	}
	return -1
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

// defaultUserName names the terminal's user: $USER, $LOGNAME, the OS
// account, or "local".
func defaultUserName(getenv func(string) string, current func() (*user.User, error)) string {
	for _, v := range []string{"USER", "LOGNAME"} {
		if name := getenv(v); name != "" {
			return name
		}
	}
	if u, err := current(); err == nil {
		// Windows names the account DOMAIN\user.
		if name := u.Username[strings.LastIndexByte(u.Username, '\\')+1:]; name != "" {
			return name
		}
	}
	return "local"
}

func (p *post) textOrEmpty() string {
	if p == nil {
		return ""
	}
	return p.text
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

// tooLong reports whether s exceeds MaxText in UTF-16 code units. UTF-8
// never takes fewer bytes than UTF-16 units, so short strings skip the count.
func tooLong(s string) bool {
	if len(s) <= maxText {
		return false
	}
	n := 0
	for _, r := range s {
		n += utf16Len(r)
	}
	return n > maxText
}

func utf16Len(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}

// buttonKey is the key that presses one button, and where it sits in the
// label (-1: not in it).
type buttonKey struct {
	key string
	pos int
}

// display shows label with its key marked: "[A]llow", or "✅ [1]" when the
// key is not a letter of the label.
func (k buttonKey) display(label string) string {
	if k.pos < 0 {
		return strings.TrimSpace(label + " [" + k.key + "]")
	}
	_, size := utf8.DecodeRuneInString(label[k.pos:])
	return label[:k.pos] + "[" + label[k.pos:k.pos+size] + "]" + label[k.pos+size:]
}

// buttonKeys picks a key per button: the first unused of the first letter
// of its first word, the first letter of its last word, any other letter of
// the label; failing all, a digit.
func buttonKeys(bs []core.Button) []buttonKey {
	used := make(map[string]bool)
	keys := make([]buttonKey, len(bs))
	for i, b := range bs {
		keys[i] = buttonKey{pos: -1}
		for _, pos := range keyCandidates(b.Label) {
			r, _ := utf8.DecodeRuneInString(b.Label[pos:])
			k := string(unicode.ToLower(r))
			if !used[k] {
				used[k] = true
				keys[i] = buttonKey{key: k, pos: pos}
				break
			}
		}
		for d := '1'; keys[i].key == "" && d <= '9'; d++ {
			if k := string(d); !used[k] {
				used[k] = true
				keys[i].key = k
			}
		}
	}
	return keys
}

// keyCandidates lists byte offsets of letters in label, in preference order.
func keyCandidates(label string) []int {
	var letters, wordFirst []int // every letter; first letter of each word
	inWord, seenInWord := false, false
	for i, r := range label {
		if unicode.IsSpace(r) {
			inWord = false
			continue
		}
		if !inWord {
			inWord, seenInWord = true, false
		}
		if unicode.IsLetter(r) {
			letters = append(letters, i)
			if !seenInWord {
				wordFirst = append(wordFirst, i)
				seenInWord = true
			}
		}
	}
	var out []int
	if len(wordFirst) > 0 {
		out = append(out, wordFirst[0], wordFirst[len(wordFirst)-1])
	}
	return append(out, letters...)
}
