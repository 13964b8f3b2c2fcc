// Package console is the terminal adapter: a core.Platform that reads chat
// messages as lines from an input and prints the bridge's posts to an
// output, so agentbridge can be tried without any chat service.
//
// A streamed answer appears in place: an edit that extends the message
// printed last prints only the new text. Buttons are shown with a key each
// ("[A]llow / [D]eny / Allow for this [s]ession"); typing a key on its own
// line presses the button.
package console

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge/core"
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
	// eraseLine returns to the start of the line and clears it; used to
	// take the prompt away before output.
	eraseLine = "\r\x1b[K"
)

var _ core.Platform = (*Adapter)(nil)
var _ core.Notifier = (*Adapter)(nil)

// Options configures an Adapter. Zero fields take the defaults.
type Options struct {
	Conv   core.ConversationKey // default {Platform: "console", Channel: "local"}
	User   core.User            // default {ID: "local", Name: $USER}
	Prompt string               // printed before reading a line when interactive, e.g. "you> "
}

// Adapter is a core.Platform for a terminal. Its methods are safe for
// concurrent use; output is serialized.
type Adapter struct {
	in       io.Reader
	conv     core.ConversationKey
	user     core.User
	prompt   string
	idPrefix string // start time: ids stay unique across restarts
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
	if opts.Conv == (core.ConversationKey{}) {
		opts.Conv = core.ConversationKey{Platform: Name, Channel: "local"}
	}
	if opts.User == (core.User{}) {
		opts.User = core.User{ID: "local", Name: os.Getenv("USER")}
	}
	return &Adapter{
		in:        in,
		out:       out,
		conv:      opts.Conv,
		user:      opts.User,
		prompt:    opts.Prompt,
		idPrefix:  fmt.Sprintf("%x", time.Now().UnixNano()),
		posts:     make(map[string]*post),
		lineStart: true,
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
	errc := make(chan error, 1)
	done := make(chan struct{})
	go readLines(a.in, lines, errc, done)
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

// handleLine turns one input line into a Message or an Action.
func (a *Adapter) handleLine(ctx context.Context, h core.Handler, line string) {
	text := strings.TrimSpace(line)
	a.mu.Lock()
	if a.prompt != "" {
		// The terminal echoed the line and its newline after the prompt.
		a.promptShown, a.lineStart, a.tail = false, true, ""
	}
	var act *core.Action
	if p := a.posts[a.lastButtons]; p != nil && len(p.buttons) > 0 && text != "" {
		for i, k := range p.keys {
			if strings.EqualFold(text, k.key) {
				act = &core.Action{Conv: p.ref.Conv, From: a.user, Value: p.buttons[i].Value, Ref: p.ref}
				break
			}
		}
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

// Edit shows the new content of a message. When the message is the one
// printed last and the new text extends the old, only the new suffix is
// printed, so streamed text grows in place; likewise when the edit removes
// the buttons and extends the text (an answered prompt), the suffix goes on
// a fresh marked line. Any other change prints the whole new text on a
// fresh line marked "↳".
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
			if kerr := a.printKeys(old); err == nil {
				err = kerr
			}
		}
	case extends && removed:
		if suffix != "" {
			a.freshLine()
			err = a.write(editMark + strings.TrimLeft(suffix, " "))
			a.tail = ref.ID
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

// Notify prints a notice meant for user alone; on a terminal that is the
// only user.
func (a *Adapter) Notify(ctx context.Context, conv core.ConversationKey, user core.User, text string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("console: notify: %w", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.freshLine()
	err := a.write("  (only you) " + text + "\n")
	a.schedulePromptLocked()
	if err != nil {
		return fmt.Errorf("console: notify: %w", err)
	}
	return nil
}

// reply answers a button press: Action.Reply.
func (a *Adapter) reply(text string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.freshLine()
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
	err := a.write(mark + p.text)
	a.tail = p.ref.ID
	if len(p.buttons) > 0 {
		if kerr := a.printKeys(p); err == nil {
			err = kerr
		}
	}
	return err
}

// printKeys prints p's button keys on their own line.
func (a *Adapter) printKeys(p *post) error {
	labels := make([]string, len(p.keys))
	for i, k := range p.keys {
		labels[i] = k.display(p.buttons[i].Label)
	}
	a.freshLine()
	err := a.write("  " + strings.Join(labels, " / ") + "\n")
	a.tail = ""
	return err
}

// freshLine moves output to the start of a line: it erases a shown prompt,
// or ends the current line.
func (a *Adapter) freshLine() {
	a.erasePrompt()
	if !a.lineStart {
		a.write("\n")
	}
	a.tail = ""
}

// erasePrompt takes a shown prompt away, leaving the cursor at the start of
// its line.
func (a *Adapter) erasePrompt() {
	if a.promptShown {
		a.promptShown = false
		a.write(eraseLine)
	}
}

// write prints s and tracks whether the cursor is at a line start.
func (a *Adapter) write(s string) error {
	if s == "" {
		return nil
	}
	a.lineStart = strings.HasSuffix(s, "\n") || strings.HasSuffix(s, eraseLine)
	_, err := io.WriteString(a.out, s)
	return err
}

// showPromptLocked prints the prompt on a fresh line, when interactive.
func (a *Adapter) showPromptLocked() {
	if a.prompt == "" || !a.waiting || a.promptShown {
		return
	}
	tail := a.tail
	a.freshLine()
	a.write(a.prompt)
	a.promptShown = true
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
