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
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/outfile"
	"github.com/agentbridge/agentbridge/core/render"
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
	// FilesDir is where files an agent sends are saved (SendFile); ""
	// takes no files.
	FilesDir string
}

// Adapter is a core.Platform for a terminal. Its methods are safe for
// concurrent use; output is serialized.
type Adapter struct {
	in       io.Reader
	conv     core.ConversationKey
	user     core.User
	prompt   string
	filesDir string
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
		filesDir:  opts.FilesDir,
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
		MaxFileBytes:   a.maxFileBytes(),
	}
}

// maxFileBytes is Limits().MaxFileBytes: a saved file costs disk only.
func (a *Adapter) maxFileBytes() int64 {
	if a.filesDir == "" {
		return 0
	}
	return maxFile
}

// maxFile bounds one saved file: the bridge's per-turn limits are far
// lower by default.
const maxFile = 1 << 30

// SendFile implements core.FileSender: it saves f under Options.FilesDir,
// never over an existing file (name-1.ext, name-2.ext…), and prints where.
func (a *Adapter) SendFile(ctx context.Context, to core.ConversationKey, f core.File) (core.MessageRef, error) {
	if a.filesDir == "" {
		return core.MessageRef{}, errors.New("console: send file: no directory to save files in")
	}
	path, err := outfile.Save(a.filesDir, f)
	if err != nil {
		return core.MessageRef{}, fmt.Errorf("console: %w", err)
	}
	text := "📎 " + filepath.Base(path) + " saved: " + path
	if f.Caption != "" {
		text += "\n" + f.Caption
	}
	return a.Send(ctx, to, core.Post{Text: text, Plain: true})
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
		} else if !strings.HasPrefix(text, "/") && slices.ContainsFunc(p.buttons, func(b core.Button) bool { return !b.Optional }) {
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
