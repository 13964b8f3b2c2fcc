// Package platformtest provides an in-memory chat platform for tests, in the
// spirit of net/http/httptest: it implements core.Platform and its optional
// capabilities, records every call with a timestamp, keeps the current
// content of every message, enforces its Limits like a real platform would,
// and can inject rate limits, failures and delays. TestPlatform is the
// other way round: the contract every adapter keeps, run against the
// adapter and its own fake.
package platformtest

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/render"
)

// Op names a platform call.
type Op string

// The calls a Platform records.
const (
	OpSend     Op = "send"
	OpEdit     Op = "edit"
	OpTyping   Op = "typing"
	OpNotify   Op = "notify"
	OpDownload Op = "download"
	OpFinalize Op = "finalize"
	OpStart    Op = "stream-start"
	OpAppend   Op = "stream-append"
	OpStop     Op = "stream-stop"
	OpFile     Op = "file"
)

// Call is one recorded call.
type Call struct {
	Op   Op
	At   time.Time
	Conv core.ConversationKey
	Ref  core.MessageRef // send: the new message; edit: the edited one
	Post core.Post
	User core.User // notify
	File *File     // file: what was posted
	Err  error     // what the call returned
}

// File is a file posted with SendFile, as the fake received it.
type File struct {
	Ref  core.MessageRef
	Meta core.File // as passed, Path included
	Data []byte    // the bytes read from Meta.Path
}

// Message is the current state of a message the bridge sent.
type Message struct {
	Ref   core.MessageRef
	Post  core.Post // a file's: its caption and ReplyTo
	Edits int
	File  *File // set when the message is a file SendFile posted
}

// Platform is a fake core.Platform. The zero value is not usable; call New.
type Platform struct {
	name   string
	limits core.Limits

	mu       sync.Mutex
	calls    []Call
	msgs     []*Message
	byID     map[string]*Message
	nextID   int
	failures map[Op][]error
	delays   map[Op]time.Duration
	files    map[string][]byte
	handler  core.Handler
	streams  bool
	changed  chan struct{} // closed and replaced on every recorded call
	running  chan struct{} // closed when Run has a handler
}

var (
	_ core.Platform         = (*Platform)(nil)
	_ core.Typer            = (*Platform)(nil)
	_ core.Downloader       = (*Platform)(nil)
	_ core.MessageFinalizer = (*Platform)(nil)
	_ core.Streamer         = (*Platform)(nil)
	_ core.FileSender       = (*Platform)(nil)
)

// DefaultLimits are generous limits with a Discord-like shape.
var DefaultLimits = core.Limits{
	MaxText:        2000,
	EditInterval:   100 * time.Millisecond,
	MaxButtonValue: 64,
	Dialect:        render.DiscordMarkdown,
}

// New returns a fake platform called name with the given limits.
func New(name string, limits core.Limits) *Platform {
	return &Platform{
		name:     name,
		limits:   limits,
		byID:     map[string]*Message{},
		failures: map[Op][]error{},
		delays:   map[Op]time.Duration{},
		files:    map[string][]byte{},
		changed:  make(chan struct{}),
		running:  make(chan struct{}),
	}
}

// Name implements core.Platform.
func (p *Platform) Name() string { return p.name }

// Limits implements core.Platform: the limits given to New, or set since
// (SetMaxFileBytes).
func (p *Platform) Limits() core.Limits {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.limits
}

// SetMaxFileBytes changes Limits().MaxFileBytes, the largest file
// SendFile takes.
func (p *Platform) SetMaxFileBytes(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.limits.MaxFileBytes = n
}

// Run implements core.Platform: it keeps h for Deliver and Press and blocks
// until ctx ends.
func (p *Platform) Run(ctx context.Context, h core.Handler) error {
	p.mu.Lock()
	p.handler = h
	select {
	case <-p.running:
	default:
		close(p.running)
	}
	p.mu.Unlock()
	<-ctx.Done()
	return nil
}

// Running is closed once Run has been called.
func (p *Platform) Running() <-chan struct{} { return p.running }

// Send implements core.Platform.
func (p *Platform) Send(ctx context.Context, to core.ConversationKey, post core.Post) (core.MessageRef, error) {
	if err := p.delay(ctx, OpSend); err != nil {
		return core.MessageRef{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	c := Call{Op: OpSend, At: time.Now(), Conv: to, Post: clonePost(post)}
	if err := p.check(OpSend, post); err != nil {
		c.Err = err
		p.record(c)
		return core.MessageRef{}, err
	}
	p.nextID++
	ref := core.MessageRef{Conv: to, ID: strconv.Itoa(p.nextID)}
	m := &Message{Ref: ref, Post: clonePost(post)}
	p.msgs = append(p.msgs, m)
	p.byID[ref.ID] = m
	c.Ref = ref
	p.record(c)
	return ref, nil
}

// Edit implements core.Platform.
func (p *Platform) Edit(ctx context.Context, ref core.MessageRef, post core.Post) error {
	if err := p.delay(ctx, OpEdit); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	c := Call{Op: OpEdit, At: time.Now(), Conv: ref.Conv, Ref: ref, Post: clonePost(post)}
	m, ok := p.byID[ref.ID]
	switch err := p.check(OpEdit, post); {
	case err != nil:
		c.Err = err
	case !ok || m.Ref.Conv != ref.Conv:
		c.Err = fmt.Errorf("edit message %s: %w", ref.ID, core.ErrNotFound)
	case m.Post.Text == post.Text && m.Post.Plain == post.Plain && slices.Equal(m.Post.Buttons, post.Buttons):
		c.Err = core.ErrNotModified
	default:
		m.Post = clonePost(post)
		m.Edits++
	}
	p.record(c)
	return c.Err
}

// Typing implements core.Typer.
func (p *Platform) Typing(ctx context.Context, conv core.ConversationKey) error {
	if err := p.delay(ctx, OpTyping); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	c := Call{Op: OpTyping, At: time.Now(), Conv: conv, Err: p.injected(OpTyping)}
	p.record(c)
	return c.Err
}

// PrivateReply returns a core.PrivateReply for an event of user in conv
// that records an OpNotify call (like a Slack ephemeral message), ignoring
// the "" an answered press may get.
func (p *Platform) PrivateReply(conv core.ConversationKey, user core.User) core.PrivateReply {
	return func(text string) {
		if text == "" {
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		p.record(Call{Op: OpNotify, At: time.Now(), Conv: conv, User: user, Post: core.Post{Text: text, Plain: true}, Err: p.injected(OpNotify)})
	}
}

// FinalizeMessage implements core.MessageFinalizer by recording the call.
func (p *Platform) FinalizeMessage(ctx context.Context, ref core.MessageRef) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := Call{Op: OpFinalize, At: time.Now(), Conv: ref.Conv, Ref: ref, Err: p.injected(OpFinalize)}
	p.record(c)
	return c.Err
}

// EnableStreams makes StartStream open native streams (off by default, so
// replies are posted and edited).
func (p *Platform) EnableStreams() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.streams = true
}

// StartStream implements core.Streamer. With streams enabled it creates a
// message whose text is the Markdown appended to the stream.
func (p *Platform) StartStream(ctx context.Context, conv core.ConversationKey) (core.Stream, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.streams {
		return nil, nil
	}
	c := Call{Op: OpStart, At: time.Now(), Conv: conv, Err: p.injected(OpStart)}
	if c.Err == nil {
		p.nextID++
		c.Ref = core.MessageRef{Conv: conv, ID: strconv.Itoa(p.nextID)}
		m := &Message{Ref: c.Ref}
		p.msgs = append(p.msgs, m)
		p.byID[c.Ref.ID] = m
	}
	p.record(c)
	if c.Err != nil {
		return nil, c.Err
	}
	return &stream{p: p, ref: c.Ref}, nil
}

// stream is a native stream on the fake platform.
type stream struct {
	p   *Platform
	ref core.MessageRef
}

func (s *stream) Ref() core.MessageRef { return s.ref }

func (s *stream) Append(ctx context.Context, markdown string) error {
	return s.p.streamWrite(OpAppend, s.ref, markdown)
}

func (s *stream) Stop(ctx context.Context, markdown string) error {
	return s.p.streamWrite(OpStop, s.ref, markdown)
}

func (p *Platform) streamWrite(op Op, ref core.MessageRef, markdown string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := Call{Op: op, At: time.Now(), Conv: ref.Conv, Ref: ref, Post: core.Post{Text: markdown}, Err: p.injected(op)}
	if m := p.byID[ref.ID]; c.Err == nil && m != nil {
		m.Post.Text += markdown
		m.Edits++
	}
	p.record(c)
	return c.Err
}

// SendFile implements core.FileSender: it reads f.Path and records an
// OpFile call. A file over Limits().MaxFileBytes (when set) is refused, as
// a platform's upload limit would.
func (p *Platform) SendFile(ctx context.Context, to core.ConversationKey, f core.File) (core.MessageRef, error) {
	if err := p.delay(ctx, OpFile); err != nil {
		return core.MessageRef{}, err
	}
	data, readErr := os.ReadFile(f.Path)
	p.mu.Lock()
	defer p.mu.Unlock()
	c := Call{Op: OpFile, At: time.Now(), Conv: to}
	switch {
	case readErr != nil:
		c.Err = fmt.Errorf("send file %q: %w", f.Name, readErr)
	default:
		if err := p.injected(OpFile); err != nil {
			c.Err = err
		} else if max := p.limits.MaxFileBytes; max > 0 && int64(len(data)) > max {
			c.Err = fmt.Errorf("send file %q: %d bytes is over the %d byte limit", f.Name, len(data), max)
		}
	}
	if c.Err == nil {
		p.nextID++
		c.Ref = core.MessageRef{Conv: to, ID: strconv.Itoa(p.nextID)}
		c.File = &File{Ref: c.Ref, Meta: f, Data: data}
		m := &Message{Ref: c.Ref, Post: core.Post{Text: f.Caption, Plain: true, ReplyTo: f.ReplyTo}, File: c.File}
		p.msgs = append(p.msgs, m)
		p.byID[c.Ref.ID] = m
	}
	p.record(c)
	return c.Ref, c.Err
}

// Files returns the files posted to conv, oldest first.
func (p *Platform) Files(conv core.ConversationKey) []File {
	var out []File
	for _, m := range p.Messages(conv) {
		if m.File != nil {
			out = append(out, *m.File)
		}
	}
	return out
}

// AddFile makes data downloadable under the attachment source handle src.
func (p *Platform) AddFile(src string, data []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.files[src] = data
}

// Download implements core.Downloader for files added with AddFile.
func (p *Platform) Download(ctx context.Context, a core.Attachment, w io.Writer, max int64) error {
	if err := p.delay(ctx, OpDownload); err != nil {
		return err
	}
	p.mu.Lock()
	data, ok := p.files[a.Source]
	err := p.injected(OpDownload)
	p.record(Call{Op: OpDownload, At: time.Now(), Err: err})
	p.mu.Unlock()
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("download %s: %w", a.Source, core.ErrNotFound)
	case int64(len(data)) > max:
		return fmt.Errorf("download %s: %d bytes is over the %d byte limit", a.Source, len(data), max)
	}
	_, err = w.Write(data)
	return err
}

// Deliver hands m to the handler given to Run, as an adapter would.
func (p *Platform) Deliver(ctx context.Context, m core.Message) {
	p.handlerOrPanic().HandleMessage(ctx, m)
}

// Press hands a button press to the handler given to Run.
func (p *Platform) Press(ctx context.Context, a core.Action) {
	p.handlerOrPanic().HandleAction(ctx, a)
}

func (p *Platform) handlerOrPanic() core.Handler {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.handler == nil {
		panic("platformtest: Deliver or Press before Run") // a test bug, not runtime input
	}
	return p.handler
}

// Fail makes the next len(errs) calls of op return errs in order (a nil
// entry lets that call through).
func (p *Platform) Fail(op Op, errs ...error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failures[op] = append(p.failures[op], errs...)
}

// RateLimit makes the next n calls of op fail with a RateLimitError asking
// to wait retryAfter.
func (p *Platform) RateLimit(op Op, retryAfter time.Duration, n int) {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = &core.RateLimitError{RetryAfter: retryAfter}
	}
	p.Fail(op, errs...)
}

// Delay makes every later call of op take d (or until its ctx ends).
func (p *Platform) Delay(op Op, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delays[op] = d
}

// Calls returns a copy of every recorded call, in order.
func (p *Platform) Calls() []Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.calls)
}

// CallsOf returns the recorded calls of op.
func (p *Platform) CallsOf(op Op) []Call {
	var out []Call
	for _, c := range p.Calls() {
		if c.Op == op {
			out = append(out, c)
		}
	}
	return out
}

// Messages returns the current state of every message sent to conv, oldest
// first.
func (p *Platform) Messages(conv core.ConversationKey) []Message {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Message
	for _, m := range p.msgs {
		if m.Ref.Conv == conv {
			mm := *m
			mm.Post = clonePost(m.Post)
			out = append(out, mm)
		}
	}
	return out
}

// Texts returns the current text of every message sent to conv.
func (p *Platform) Texts(conv core.ConversationKey) []string {
	var out []string
	for _, m := range p.Messages(conv) {
		out = append(out, m.Post.Text)
	}
	return out
}

// Wait blocks until cond, evaluated after every recorded call, returns true,
// or until ctx ends; it reports whether cond became true.
func (p *Platform) Wait(ctx context.Context, cond func() bool) bool {
	for {
		p.mu.Lock()
		ch := p.changed
		p.mu.Unlock()
		if cond() {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return cond()
		}
	}
}

// check applies the platform's limits and injected failures. p.mu is held.
func (p *Platform) check(op Op, post core.Post) error {
	if err := p.injected(op); err != nil {
		return err
	}
	if n := len(utf16.Encode([]rune(post.Text))); p.limits.MaxText > 0 && n > p.limits.MaxText {
		return fmt.Errorf("%d units over limit %d: %w", n, p.limits.MaxText, core.ErrMessageTooLong)
	}
	if post.Text == "" && len(post.Buttons) == 0 {
		return fmt.Errorf("empty message: %w", core.ErrFormatting)
	}
	for _, b := range post.Buttons {
		if p.limits.MaxButtonValue > 0 && len(b.Value) > p.limits.MaxButtonValue {
			return fmt.Errorf("button value of %d bytes over limit %d", len(b.Value), p.limits.MaxButtonValue)
		}
	}
	return nil
}

// injected pops the next injected failure of op. p.mu is held.
func (p *Platform) injected(op Op) error {
	q := p.failures[op]
	if len(q) == 0 {
		return nil
	}
	p.failures[op] = q[1:]
	return q[0]
}

func (p *Platform) delay(ctx context.Context, op Op) error {
	p.mu.Lock()
	d := p.delays[op]
	p.mu.Unlock()
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// record appends c and wakes waiters. p.mu is held.
func (p *Platform) record(c Call) {
	p.calls = append(p.calls, c)
	close(p.changed)
	p.changed = make(chan struct{})
}

func clonePost(post core.Post) core.Post {
	post.Buttons = slices.Clone(post.Buttons)
	return post
}
