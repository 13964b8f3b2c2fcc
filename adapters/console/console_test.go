package console

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/user"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unicode"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/goleak"

	"github.com/agentbridge/agentbridge/core"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// syncBuffer is an output shared by Run's caller and Send/Edit callers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// recorder is a core.Handler that hands every event to the test.
type recorder struct {
	events chan any // core.Message or core.Action
}

func newRecorder() *recorder { return &recorder{events: make(chan any, 64)} }

func (r *recorder) HandleMessage(_ context.Context, m core.Message) { r.events <- m }
func (r *recorder) HandleAction(_ context.Context, a core.Action)   { r.events <- a }

// session runs an Adapter on an io.Pipe input.
type session struct {
	a      *Adapter
	in     *io.PipeWriter
	out    *syncBuffer
	rec    *recorder
	done   chan error
	cancel context.CancelFunc
}

func start(t *testing.T, opts Options) *session {
	t.Helper()
	inR, inW := io.Pipe()
	out := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	s := &session{a: New(inR, out, opts), in: inW, out: out, rec: newRecorder(), done: make(chan error, 1), cancel: cancel}
	go func() { s.done <- s.a.Run(ctx, s.rec) }()
	t.Cleanup(func() {
		cancel()
		inW.Close() // ends the reader goroutine Run could not interrupt
		<-s.done
	})
	return s
}

func (s *session) typeLine(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func (s *session) next(t *testing.T) any {
	t.Helper()
	return <-s.rec.events
}

var ignoreVolatile = cmpopts.IgnoreFields(core.Message{}, "ID", "Time")

func TestMessagesInOrder(t *testing.T) {
	t.Setenv("USER", "ada")
	s := start(t, Options{})
	s.typeLine(t, "hello")
	s.typeLine(t, "")
	s.typeLine(t, "   ")
	s.typeLine(t, "  second line \r")
	s.in.Close()
	if err := <-s.done; err != nil {
		t.Fatalf("Run at EOF = %v, want nil", err)
	}
	s.done <- nil // for Cleanup

	conv := core.ConversationKey{Platform: "console", Channel: "local"}
	user := core.User{ID: "local", Name: "ada"}
	want := []any{
		core.Message{Conv: conv, From: user, Text: "hello"},
		core.Message{Conv: conv, From: user, Text: "second line"},
	}
	var got []any
	for len(s.rec.events) > 0 {
		got = append(got, <-s.rec.events)
	}
	if diff := cmp.Diff(want, got, ignoreVolatile); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	m0, m1 := got[0].(core.Message), got[1].(core.Message)
	if m0.ID == m1.ID || m0.ID == "" {
		t.Errorf("message ids %q, %q: want unique", m0.ID, m1.ID)
	}
	if m0.Time.IsZero() {
		t.Error("message time is zero")
	}
	// Ids stay unique across restarts: a second adapter never reuses them.
	if other := New(strings.NewReader(""), io.Discard, Options{}); other.idPrefix == s.a.idPrefix {
		t.Errorf("two adapters share id prefix %q", other.idPrefix)
	}
}

func TestOptions(t *testing.T) {
	conv := core.ConversationKey{Platform: "console", Channel: "dev", Thread: "t"}
	user := core.User{ID: "u1", Name: "Grace"}
	s := start(t, Options{Conv: conv, User: user})
	s.typeLine(t, "hi")
	want := core.Message{Conv: conv, From: user, Text: "hi"}
	if diff := cmp.Diff(want, s.next(t), ignoreVolatile); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
}

func TestButtonKeysMakeActions(t *testing.T) {
	s := start(t, Options{})
	ctx := t.Context()
	conv := core.ConversationKey{Platform: "console", Channel: "local"}
	buttons := []core.Button{
		{Label: "Allow", Value: "p:1:allow", Answer: core.AnswerAllow},
		{Label: "Deny", Value: "p:1:deny", Answer: core.AnswerDeny},
		{Label: "Allow for this session", Value: "p:1:session", Answer: core.AnswerAllowSession},
	}
	ref, err := s.a.Send(ctx, conv, core.Post{Text: "Allow write_file?", Buttons: buttons})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.out.String(), "Allow write_file?\n  [A]llow / [D]eny / Allow for this [s]ession\n"; got != want {
		t.Errorf("prompt printed as %q, want %q", got, want)
	}

	for _, tt := range []struct{ line, value string }{
		{"a", "p:1:allow"}, {"D", "p:1:deny"}, {" s ", "p:1:session"},
		{"y", "p:1:allow"}, {"Yes", "p:1:allow"}, {"allow", "p:1:allow"},
		{"n", "p:1:deny"}, {"no", "p:1:deny"}, {"DENY", "p:1:deny"},
	} {
		s.typeLine(t, tt.line)
		act, ok := s.next(t).(core.Action)
		if !ok {
			t.Fatalf("line %q did not press a button", tt.line)
		}
		if act.Value != tt.value || act.Ref != ref || act.Conv != conv || act.From.ID != "local" || act.Reply == nil {
			t.Errorf("line %q: action %+v, want value %q on %v", tt.line, act, tt.value, ref)
		}
	}
	// Any other line asks again and reaches no one; a /command goes on.
	s.typeLine(t, "x")
	s.typeLine(t, "/stop")
	if m, ok := s.next(t).(core.Message); !ok || m.Text != "/stop" {
		t.Errorf("a command while pending: %+v, want a message", m)
	}
	if want := "  Please answer [A]llow / [D]eny / Allow for this [s]ession (or y / n), or send a /command.\n"; !strings.Contains(s.out.String(), want) {
		t.Errorf("a stray line was not asked again; output %q", s.out.String())
	}

	// Answered: the buttons are edited away, and "a" is a message again.
	if err := s.a.Edit(ctx, ref, core.Post{Text: "Allow write_file? allowed"}); err != nil {
		t.Fatal(err)
	}
	s.typeLine(t, "a")
	if m, ok := s.next(t).(core.Message); !ok || m.Text != "a" {
		t.Errorf("key after buttons removed: %+v, want a message", m)
	}

	// A newer post with buttons takes over; an older one's keys do not count.
	old, _ := s.a.Send(ctx, conv, core.Post{Text: "first?", Buttons: []core.Button{{Label: "Yes", Value: "old"}}})
	_, _ = s.a.Send(ctx, conv, core.Post{Text: "second?", Buttons: []core.Button{{Label: "No", Value: "new"}}})
	s.typeLine(t, "y") // the older prompt's key: asked again
	s.typeLine(t, "n")
	if act, ok := s.next(t).(core.Action); !ok || act.Value != "new" {
		t.Errorf("key of the newest prompt: %+v, want its action", act)
	}
	if n := strings.Count(s.out.String(), "Please answer [N]o, or send a /command."); n != 1 {
		t.Errorf("the older prompt's key asked again %d times, want 1; output %q", n, s.out.String())
	}
	_ = old
}

func TestActionReplyPrints(t *testing.T) {
	s := start(t, Options{})
	conv := core.ConversationKey{Platform: "console", Channel: "local"}
	if _, err := s.a.Send(t.Context(), conv, core.Post{Text: "ok?", Buttons: []core.Button{{Label: "Yes", Value: "v"}}}); err != nil {
		t.Fatal(err)
	}
	s.typeLine(t, "y")
	act := s.next(t).(core.Action)
	act.Reply("only the requester may answer")
	if got := s.out.String(); !strings.HasSuffix(got, "\n  → only the requester may answer\n") {
		t.Errorf("reply printed as %q", got)
	}
}

func TestButtonKeys(t *testing.T) {
	tests := []struct {
		labels []string
		want   string
	}{
		{[]string{"Allow", "Deny", "Allow for this session"}, "[A]llow / [D]eny / Allow for this [s]ession"},
		{[]string{"Allow", "Always allow"}, "[A]llow / A[l]ways allow"},
		{[]string{"Yes", "Yes", "Yes", "Yes"}, "[Y]es / Y[e]s / Ye[s] / Yes [1]"},
		{[]string{"✅ Allow", "❌ Deny"}, "✅ [A]llow / ❌ [D]eny"},
		{[]string{"✅", "❌", ""}, "✅ [1] / ❌ [2] / [3]"},
		{[]string{"Stop now", "Start"}, "[S]top now / S[t]art"},
		{[]string{"Élan", "élan"}, "[É]lan / é[l]an"},
	}
	for _, tt := range tests {
		bs := make([]core.Button, len(tt.labels))
		for i, l := range tt.labels {
			bs[i] = core.Button{Label: l}
		}
		keys := buttonKeys(bs)
		shown := make([]string, len(keys))
		seen := map[string]bool{}
		for i, k := range keys {
			shown[i] = k.display(tt.labels[i])
			if seen[k.key] || k.key == "" {
				t.Errorf("%q: key %q empty or reused", tt.labels, k.key)
			}
			seen[k.key] = true
		}
		if got := strings.Join(shown, " / "); got != tt.want {
			t.Errorf("%q: shown %q, want %q", tt.labels, got, tt.want)
		}
	}
}

func TestEdits(t *testing.T) {
	ctx := t.Context()
	conv := core.ConversationKey{Platform: "console", Channel: "local"}
	out := &syncBuffer{}
	a := New(strings.NewReader(""), out, Options{})
	expect := func(step, want string) {
		t.Helper()
		if got := out.String(); got != want {
			t.Errorf("after %s:\n got %q\nwant %q", step, got, want)
		}
	}
	edit := func(ref core.MessageRef, p core.Post) {
		t.Helper()
		if err := a.Edit(ctx, ref, p); err != nil {
			t.Fatalf("Edit(%q): %v", p.Text, err)
		}
	}

	r1, err := a.Send(ctx, conv, core.Post{Text: "Hel"})
	if err != nil {
		t.Fatal(err)
	}
	expect("send", "Hel")
	edit(r1, core.Post{Text: "Hello"})
	edit(r1, core.Post{Text: "Hello, world\n- item"})
	expect("streaming edits", "Hello, world\n- item")

	r2, _ := a.Send(ctx, conv, core.Post{Text: "second"})
	expect("second send", "Hello, world\n- item\nsecond")
	// An older message that grows shows only its continuation.
	edit(r1, core.Post{Text: "Hello, world\n- item\n- more"})
	expect("edit of an older message", "Hello, world\n- item\nsecond\n  ↳ …\n- more")
	edit(r1, core.Post{Text: "Hello, world\n- item\n- more!"})
	expect("extending the continuation", "Hello, world\n- item\nsecond\n  ↳ …\n- more!")
	edit(r2, core.Post{Text: "rewritten"})
	expect("non-extending edit", "Hello, world\n- item\nsecond\n  ↳ …\n- more!\n  ↳ rewritten")
	edit(r2, core.Post{Text: "short"})
	expect("shrinking edit", "Hello, world\n- item\nsecond\n  ↳ …\n- more!\n  ↳ rewritten\n  ↳ short")

	if err := a.Edit(ctx, r2, core.Post{Text: "short"}); !errors.Is(err, core.ErrNotModified) {
		t.Errorf("identical edit: %v, want ErrNotModified", err)
	}
	if err := a.Edit(ctx, core.MessageRef{Conv: conv, ID: "nope"}, core.Post{Text: "x"}); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("unknown ref: %v, want ErrNotFound", err)
	}
	if err := a.Edit(ctx, core.MessageRef{Conv: core.ConversationKey{Platform: "other"}, ID: r2.ID}, core.Post{Text: "x"}); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("ref of another conversation: %v, want ErrNotFound", err)
	}
}

func TestEditAnsweredPrompt(t *testing.T) {
	ctx := t.Context()
	conv := core.ConversationKey{Platform: "console", Channel: "local"}
	out := &syncBuffer{}
	a := New(strings.NewReader(""), out, Options{})
	bs := []core.Button{{Label: "Allow", Value: "a"}, {Label: "Deny", Value: "d"}}
	ref, _ := a.Send(ctx, conv, core.Post{Text: "🔐 write_file?", Buttons: bs})
	want := "🔐 write_file?\n  [A]llow / [D]eny\n"
	if got := out.String(); got != want {
		t.Fatalf("prompt %q, want %q", got, want)
	}
	// Buttons removed and the text extended: only the outcome is printed,
	// indented, without the blank line the engine puts before it.
	if err := a.Edit(ctx, ref, core.Post{Text: "🔐 write_file?\n\n✅ allowed"}); err != nil {
		t.Fatal(err)
	}
	want += "  ✅ allowed"
	if got := out.String(); got != want {
		t.Errorf("answered prompt %q, want %q", got, want)
	}
	// Buttons removed, text unchanged: nothing new to show.
	ref2, _ := a.Send(ctx, conv, core.Post{Text: "again?", Buttons: bs})
	want += "\nagain?\n  [A]llow / [D]eny\n"
	if err := a.Edit(ctx, ref2, core.Post{Text: "again?"}); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != want {
		t.Errorf("buttons-only edit printed %q, want %q", got, want)
	}
	// Buttons added to the message printed last: suffix, then the keys.
	ref3, _ := a.Send(ctx, conv, core.Post{Text: "Run it"})
	if err := a.Edit(ctx, ref3, core.Post{Text: "Run it?", Buttons: bs}); err != nil {
		t.Fatal(err)
	}
	want += "Run it?\n  [A]llow / [D]eny\n"
	if got := out.String(); got != want {
		t.Errorf("buttons added: %q, want %q", got, want)
	}
}

func TestLimitsAndErrors(t *testing.T) {
	a := New(strings.NewReader(""), io.Discard, Options{})
	l := a.Limits()
	if l.MaxText != 1<<20 || l.EditInterval != 50*time.Millisecond || l.MaxButtonValue != 256 || l.Dialect.String() != "plain" {
		t.Errorf("Limits() = %+v", l)
	}
	if a.Name() != "console" {
		t.Errorf("Name() = %q", a.Name())
	}
	conv := core.ConversationKey{Platform: "console", Channel: "local"}
	if _, err := a.Send(t.Context(), conv, core.Post{Text: strings.Repeat("x", 1<<20+1)}); !errors.Is(err, core.ErrMessageTooLong) {
		t.Errorf("long send: %v, want ErrMessageTooLong", err)
	}
	// 2^19 emoji are 2^20 UTF-16 units: exactly at the limit.
	if _, err := a.Send(t.Context(), conv, core.Post{Text: strings.Repeat("😀", 1<<19)}); err != nil {
		t.Errorf("send at the limit: %v", err)
	}
	if _, err := a.Send(t.Context(), conv, core.Post{Text: strings.Repeat("😀", 1<<19) + "x"}); !errors.Is(err, core.ErrMessageTooLong) {
		t.Errorf("send one unit over: %v, want ErrMessageTooLong", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := a.Send(ctx, conv, core.Post{Text: "x"}); !errors.Is(err, context.Canceled) {
		t.Errorf("send with done ctx: %v", err)
	}
}

func TestCancelReturns(t *testing.T) {
	s := start(t, Options{})
	s.typeLine(t, "one")
	s.next(t)
	s.cancel()
	if err := <-s.done; err != nil {
		t.Errorf("Run after cancel = %v, want nil", err)
	}
	s.done <- nil // for Cleanup
	if err := s.a.Run(t.Context(), s.rec); err == nil {
		t.Error("second Run returned nil, want an error")
	}
}

func TestReadError(t *testing.T) {
	inR, inW := io.Pipe()
	inW.CloseWithError(errors.New("tty gone"))
	err := New(inR, io.Discard, Options{}).Run(t.Context(), newRecorder())
	if err == nil || !strings.Contains(err.Error(), "tty gone") {
		t.Errorf("Run = %v, want the read error", err)
	}
}

func TestConcurrentOutput(t *testing.T) {
	s := start(t, Options{})
	conv := core.ConversationKey{Platform: "console", Channel: "local"}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ref, err := s.a.Send(t.Context(), conv, core.Post{Text: fmt.Sprintf("g%d:", g)})
			if err != nil {
				t.Error(err)
				return
			}
			text := fmt.Sprintf("g%d:", g)
			for i := range 20 {
				text += fmt.Sprint(i)
				if err := s.a.Edit(t.Context(), ref, core.Post{Text: text}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for i := range 10 {
		s.typeLine(t, fmt.Sprint("line ", i))
		if m := s.next(t).(core.Message); m.Text != fmt.Sprint("line ", i) {
			t.Errorf("message %d = %q", i, m.Text)
		}
	}
	wg.Wait()
	// Every edit's final state is visible somewhere in the output.
	for g := range 4 {
		if !strings.Contains(s.out.String(), fmt.Sprintf("g%d:", g)) || !strings.Contains(s.out.String(), "19") {
			t.Errorf("output lacks goroutine %d's message", g)
		}
	}
}

func TestPrompt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inR, inW := io.Pipe()
		out := &syncBuffer{}
		a := New(inR, out, Options{Prompt: "you> "})
		rec := newRecorder()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx, rec) }()
		synctest.Wait()
		want := "you> "
		if got := out.String(); got != want {
			t.Fatalf("before reading: %q, want %q", got, want)
		}

		io.WriteString(inW, "hi\n") // the terminal echoes "hi\n" itself
		<-rec.events
		conv := core.ConversationKey{Platform: "console", Channel: "local"}
		ref, _ := a.Send(ctx, conv, core.Post{Text: "Hel"})
		a.Edit(ctx, ref, core.Post{Text: "Hello"})
		want += "Hello"
		if got := out.String(); got != want {
			t.Errorf("answer right after the line: %q, want %q", got, want)
		}

		// Quiet output: the prompt comes back on a fresh line.
		time.Sleep(promptDelay)
		synctest.Wait()
		want += "\nyou> "
		if got := out.String(); got != want {
			t.Errorf("after quiet: %q, want %q", got, want)
		}

		// New output erases the prompt first.
		late, _ := a.Send(ctx, conv, core.Post{Text: "late\n"})
		want += eraseLine + "late\n"
		if got := out.String(); got != want {
			t.Errorf("output over the prompt: %q, want %q", got, want)
		}
		time.Sleep(promptDelay)
		synctest.Wait()
		want += "you> "
		// That message ended its line, so extending it still appends in place.
		a.Edit(ctx, late, core.Post{Text: "late\nmore"})
		want += eraseLine + "more"
		if got := out.String(); got != want {
			t.Errorf("final: %q, want %q", got, want)
		}

		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
		inW.Close()
		synctest.Wait()
	})
}

// BenchmarkStreamingEdit measures an in-place edit of a growing answer, the
// adapter's hot path while an agent streams.
func BenchmarkStreamingEdit(b *testing.B) {
	a := New(strings.NewReader(""), io.Discard, Options{})
	conv := core.ConversationKey{Platform: "console", Channel: "local"}
	ref, err := a.Send(b.Context(), conv, core.Post{Text: ""})
	if err != nil {
		b.Fatal(err)
	}
	text := ""
	for b.Loop() {
		text += "word "
		if len(text) > 64<<10 {
			text = "w "
			if ref, err = a.Send(b.Context(), conv, core.Post{Text: ""}); err != nil {
				b.Fatal(err)
			}
		}
		if err := a.Edit(b.Context(), ref, core.Post{Text: text}); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzButtonKeys checks that any labels get distinct keys, shown inside the
// label without losing any of it.
func FuzzButtonKeys(f *testing.F) {
	f.Add("Allow", "Deny", "Allow for this session")
	f.Add("✅", "", " \t")
	f.Add("Éé", "éÉ", "ÉÉ")
	f.Fuzz(func(t *testing.T, l1, l2, l3 string) {
		labels := []string{l1, l2, l3}
		bs := []core.Button{{Label: l1}, {Label: l2}, {Label: l3}}
		seen := map[string]bool{}
		for i, k := range buttonKeys(bs) {
			if k.key == "" || seen[k.key] {
				t.Fatalf("labels %q: key %d %q empty or reused", labels, i, k.key)
			}
			seen[k.key] = true
			shown := k.display(labels[i])
			if k.pos >= 0 && strings.NewReplacer("[", "", "]", "").Replace(shown) !=
				strings.NewReplacer("[", "", "]", "").Replace(labels[i]) {
				t.Errorf("label %q shown as %q", labels[i], shown)
			}
		}
	})
}

// FuzzEdit checks that any sequence of texts can be sent and edited without
// a panic, with and without a prompt, and that the last text printed is
// visible.
func FuzzEdit(f *testing.F) {
	f.Add("Hel", "Hello", "He", true)
	f.Add("", "x\n", "x\ny", false)
	f.Add("ok?", "ok?\n\n✅ Allowed by local.", "ok?\n\n✅ Allowed by local. Done", true)
	f.Fuzz(func(t *testing.T, t1, t2, t3 string, buttons bool) {
		for _, prompt := range []string{"", "you> "} {
			fuzzEdit(t, prompt, t1, t2, t3, buttons)
		}
	})
}

func fuzzEdit(t *testing.T, prompt, t1, t2, t3 string, buttons bool) {
	out := &syncBuffer{}
	a := New(strings.NewReader(""), out, Options{Prompt: prompt, Width: func() int { return 7 }})
	conv := core.ConversationKey{Platform: "console"}
	var bs []core.Button
	if buttons {
		bs = []core.Button{{Label: t1, Value: "v"}}
	}
	ref, err := a.Send(context.Background(), conv, core.Post{Text: t1, Buttons: bs})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{t2, t3} {
		err := a.Edit(context.Background(), ref, core.Post{Text: text})
		if err != nil && !errors.Is(err, core.ErrNotModified) {
			t.Fatal(err)
		}
	}
	// An answered prompt's outcome is shown without its leading space.
	if !strings.Contains(out.String(), strings.TrimLeftFunc(t3[min(len(t3), len(t2)):], unicode.IsSpace)) {
		t.Errorf("prompt %q: output %q does not show the end of %q", prompt, out.String(), t3)
	}
}

// TestEditOutput checks the exact bytes printed for sequences of sends and
// edits, with and without a prompt (interactive), on a fixed-width terminal.
// No Run loop, so the prompt itself is never shown here; TestPromptRedraw
// covers that.
func TestEditOutput(t *testing.T) {
	yesNo := []core.Button{{Label: "Yes", Value: "y"}, {Label: "No", Value: "n"}}
	type step struct {
		send   bool // Send a new message; messages are numbered from 0
		notify bool // a private answer (Action.Reply) of text
		msg    int  // the message an edit changes
		text   string
		keys   bool // the post carries yesNo
	}
	send := func(text string) step { return step{send: true, text: text} }
	edit := func(msg int, text string) step { return step{msg: msg, text: text} }
	width := func(w int) func() int { return func() int { return w } }
	tests := []struct {
		name        string
		interactive bool
		width       func() int
		steps       []step
		want        string
	}{{
		name:        "rewrite of the last message is redrawn in place",
		interactive: true, width: width(20),
		steps: []step{send("said **hel"), edit(0, "said **hello"), edit(0, "said hello there")},
		want:  "said **hel" + "lo" + "\r\x1b[J" + "said hello there",
	}, {
		name:  "without a prompt the rewrite is reprinted, no escapes",
		width: width(20),
		steps: []step{send("said **hel"), edit(0, "said **hello"), edit(0, "said hello there")},
		want:  "said **hel" + "lo" + "\n  ↳ said hello there",
	}, {
		name:        "wrapped rows are moved over",
		interactive: true, width: width(10),
		steps: []step{send("0123456789abcdefghijKLM"), edit(0, "x")},
		want:  "0123456789abcdefghijKLM" + "\r\x1b[2A\x1b[J" + "x",
	}, {
		name:        "a full row does not wrap until the next character",
		interactive: true, width: width(10),
		steps: []step{send("0123456789"), edit(0, "x")},
		want:  "0123456789" + "\r\x1b[J" + "x",
	}, {
		name:        "a full row then a newline takes one row",
		interactive: true, width: width(10),
		steps: []step{send("0123456789\nab"), edit(0, "x")},
		want:  "0123456789\nab" + "\r\x1b[1A\x1b[J" + "x",
	}, {
		name:        "wide characters take two columns",
		interactive: true, width: width(10),
		steps: []step{send("✅✅✅✅✅x"), edit(0, "y")},
		want:  "✅✅✅✅✅x" + "\r\x1b[1A\x1b[J" + "y",
	}, {
		name:        "combining marks take none",
		interactive: true, width: width(10),
		steps: []step{send(strings.Repeat("e\u0301", 10)), edit(0, "y")},
		want:  strings.Repeat("e\u0301", 10) + "\r\x1b[J" + "y",
	}, {
		name:        "no width means 80 columns",
		interactive: true,
		steps:       []step{send(strings.Repeat("w", 81)), edit(0, "y")},
		want:        strings.Repeat("w", 81) + "\r\x1b[1A\x1b[J" + "y",
	}, {
		name:        "a failed width means 80 columns",
		interactive: true, width: width(0),
		steps: []step{send(strings.Repeat("w", 80)), edit(0, "y")},
		want:  strings.Repeat("w", 80) + "\r\x1b[J" + "y",
	}, {
		name:        "a message with keys is redrawn with them",
		interactive: true, width: width(20),
		steps: []step{{send: true, text: "ok?", keys: true}, {msg: 0, text: "ok??", keys: true}},
		want:  "ok?\n  [Y]es / [N]o\n" + "\r\x1b[2A\x1b[J" + "ok??\n  [Y]es / [N]o\n",
	}, {
		name:        "a reprinted message is redrawn with its mark",
		interactive: true, width: width(20),
		steps: []step{send("one"), send("two"), edit(0, "uno"), edit(0, "un")},
		want:  "one\ntwo" + "\n  ↳ uno" + "\r\x1b[J" + "  ↳ un",
	}, {
		// Problem 2: a permission prompt came between the reply's frames.
		name:        "an older message that grows shows its continuation",
		interactive: true, width: width(20),
		steps: []step{
			send("Work"), {send: true, text: "🔐 ok?", keys: true},
			edit(0, "Working"), edit(0, "Working on"),
		},
		want: "Work\n🔐 ok?\n  [Y]es / [N]o\n" + "  ↳ …ing" + " on",
	}, {
		name:  "an older message that grows shows its continuation, no prompt",
		width: width(20),
		steps: []step{
			send("Work"), {send: true, text: "🔐 ok?", keys: true},
			edit(0, "Working"), edit(0, "Working on"),
		},
		want: "Work\n🔐 ok?\n  [Y]es / [N]o\n" + "  ↳ …ing" + " on",
	}, {
		name:        "a rewritten continuation is redrawn whole",
		interactive: true, width: width(20),
		steps: []step{
			send("Work"), {send: true, text: "🔐 ok?", keys: true},
			edit(0, "Working"), edit(0, "Worked"),
		},
		want: "Work\n🔐 ok?\n  [Y]es / [N]o\n" + "  ↳ …ing" + "\r\x1b[J" + "  ↳ Worked",
	}, {
		name:  "a rewritten older message is reprinted whole",
		width: width(20),
		steps: []step{send("Work"), send("other"), edit(0, "Wonk")},
		want:  "Work\nother" + "\n  ↳ Wonk",
	}, {
		// Problem 3: the engine appends the outcome after a blank line.
		name:        "an answered prompt prints its outcome once",
		interactive: true, width: width(20),
		steps: []step{
			send("Hi"), {send: true, text: "🔐 ok?", keys: true},
			edit(1, "🔐 ok?\n\n✅ Allowed by local."), edit(0, "Hi there"),
		},
		want: "Hi\n🔐 ok?\n  [Y]es / [N]o\n" + "  ✅ Allowed by local." + "\n  ↳ … there",
	}, {
		name:  "an answered prompt prints its outcome once, no prompt",
		width: width(20),
		steps: []step{
			{send: true, text: "🔐 ok?", keys: true}, edit(0, "🔐 ok?\n\n❌ Denied by ada."),
		},
		want: "🔐 ok?\n  [Y]es / [N]o\n" + "  ❌ Denied by ada.",
	}, {
		name:        "after a notice the message is no longer last",
		interactive: true, width: width(20),
		steps: []step{send("a"), {notify: true, text: "hey"}, edit(0, "b")},
		want:  "a\n  → hey\n" + "  ↳ b",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := &syncBuffer{}
			opts := Options{Width: tt.width}
			if tt.interactive {
				opts.Prompt = "you> "
			}
			a := New(strings.NewReader(""), out, opts)
			conv := core.ConversationKey{Platform: "console", Channel: "local"}
			var refs []core.MessageRef
			for _, s := range tt.steps {
				p := core.Post{Text: s.text}
				if s.keys {
					p.Buttons = yesNo
				}
				switch {
				case s.send:
					ref, err := a.Send(t.Context(), conv, p)
					if err != nil {
						t.Fatal(err)
					}
					refs = append(refs, ref)
				case s.notify:
					a.reply(s.text)
				default:
					if err := a.Edit(t.Context(), refs[s.msg], p); err != nil {
						t.Fatalf("Edit(%q): %v", s.text, err)
					}
				}
			}
			if diff := cmp.Diff(tt.want, out.String()); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPromptRedraw follows a streamed answer on an interactive terminal
// through pauses, where the prompt comes back under it.
func TestPromptRedraw(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inR, inW := io.Pipe()
		out := &syncBuffer{}
		a := New(inR, out, Options{Prompt: "you> ", Width: func() int { return 10 }})
		rec := newRecorder()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx, rec) }()
		synctest.Wait()
		want := "you> "
		check := func(step string) {
			t.Helper()
			if diff := cmp.Diff(want, out.String()); diff != "" {
				t.Fatalf("after %s (-want +got):\n%s", step, diff)
			}
		}
		quiet := func() {
			time.Sleep(promptDelay)
			synctest.Wait()
			want += "\nyou> "
		}
		edit := func(ref core.MessageRef, text string) {
			t.Helper()
			if err := a.Edit(ctx, ref, core.Post{Text: text}); err != nil {
				t.Fatal(err)
			}
		}
		typeLine := func(line string) {
			io.WriteString(inW, line+"\n") // the terminal echoes it
			<-rec.events
		}

		typeLine("hi")
		conv := core.ConversationKey{Platform: "console", Channel: "local"}
		ref, _ := a.Send(ctx, conv, core.Post{Text: "Hel"})
		edit(ref, "Hello")
		want += "Hello"
		quiet()
		check("a pause")

		// The answer goes on: the prompt is erased and the text resumes at
		// column 6 of the row above.
		edit(ref, "Hello there, **wor")
		want += "\r\x1b[K\x1b[A\x1b[6G" + " there, **wor"
		check("resuming")
		quiet()

		// A rewrite goes up over the two rows of text and the prompt's row.
		edit(ref, "Hello there, world")
		want += "\r\x1b[2A\x1b[J" + "Hello there, world"
		check("a rewrite under the prompt")
		quiet()
		check("the prompt after the rewrite")

		// After a full row the cursor's wrap state is lost: redraw instead.
		typeLine("again")
		ref2, _ := a.Send(ctx, conv, core.Post{Text: "0123456789"})
		want += "0123456789"
		quiet()
		edit(ref2, "0123456789ab")
		want += "\r\x1b[1A\x1b[J" + "0123456789ab"
		check("continuing a full row")

		// Once the user typed a line the old answer is no longer last.
		typeLine("more")
		edit(ref, "Hello there, world!")
		want += "  ↳ …!"
		edit(ref, "Hello, world")
		want += "\r\x1b[J" + "  ↳ Hello, world"
		check("edits after the user's line")

		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
		inW.Close()
		synctest.Wait()
	})
}

func TestDefaultUserName(t *testing.T) {
	osUser := func(name string, err error) func() (*user.User, error) {
		return func() (*user.User, error) { return &user.User{Username: name}, err }
	}
	tests := []struct {
		name    string
		env     map[string]string
		current func() (*user.User, error)
		want    string
	}{
		{"USER first", map[string]string{"USER": "ada", "LOGNAME": "lin"}, osUser("root", nil), "ada"},
		{"then LOGNAME", map[string]string{"LOGNAME": "lin"}, osUser("root", nil), "lin"},
		{"then the OS user", nil, osUser("grace", nil), "grace"},
		{"without the Windows domain", nil, osUser(`CORP\grace`, nil), "grace"},
		{"else local", nil, osUser("", errors.New("no passwd entry")), "local"},
		{"empty OS user", nil, osUser("", nil), "local"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string { return tt.env[k] }
			if got := defaultUserName(getenv, tt.current); got != tt.want {
				t.Errorf("defaultUserName = %q, want %q", got, tt.want)
			}
		})
	}

	// New uses the real environment.
	t.Setenv("USER", "")
	t.Setenv("LOGNAME", "lin")
	if got := New(strings.NewReader(""), io.Discard, Options{}).user; got != (core.User{ID: "local", Name: "lin"}) {
		t.Errorf("default user = %+v, want lin", got)
	}
}

func TestCursorPos(t *testing.T) {
	tests := []struct {
		s        string
		width    int
		row, col int
	}{
		{"", 10, 0, 0},
		{"abc", 10, 0, 3},
		{"abc\n", 10, 1, 0},
		{"0123456789", 10, 0, 10},
		{"0123456789a", 10, 1, 1},
		{"0123456789\n", 10, 1, 0},
		{"a\tb", 10, 0, 9},
		{"abcdefghi\t", 10, 0, 10},
		{"123456789✅", 10, 1, 2}, // a wide character does not split
		{"한국어", 10, 0, 6},
		{"a\u200db\ufe0f", 10, 0, 2},
		{"ab\rc", 10, 0, 1},
		{"\x1b", 10, 0, 0},
	}
	for _, tt := range tests {
		if row, col := cursorPos([]byte(tt.s), tt.width); row != tt.row || col != tt.col {
			t.Errorf("cursorPos(%q, %d) = %d, %d; want %d, %d", tt.s, tt.width, row, col, tt.row, tt.col)
		}
	}
}

// TestEcho drives the line editor (Options.Echo) as a terminal in character
// mode would: keys in, the prompt and the typed line drawn by the adapter,
// and taken away before output so typing never lands inside an answer.
func TestEcho(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inR, inW := io.Pipe()
		out := &syncBuffer{}
		defer inW.Close() // ends Run, also when the test fails
		a := New(inR, out, Options{Prompt: "you> ", Width: func() int { return 12 }, Echo: true})
		rec := newRecorder()
		ctx := t.Context()
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx, rec) }()
		synctest.Wait()
		want := "you> "
		check := func(step string) {
			t.Helper()
			synctest.Wait()
			if diff := cmp.Diff(want, out.String()); diff != "" {
				t.Fatalf("after %s (-want +got):\n%s", step, diff)
			}
		}
		keys := func(s string) {
			t.Helper()
			io.WriteString(inW, s)
			synctest.Wait()
		}
		check("start")

		keys("hi")
		want += "\r\x1b[Kyou> h" + "\r\x1b[Kyou> hi"
		check("typing")
		keys("\r")
		want += "\r\x1b[Kyou> hi" + "\n"
		if m, ok := (<-rec.events).(core.Message); !ok || m.Text != "hi" {
			t.Fatalf("Enter handed over %+v, want the message hi", m)
		}
		check("Enter")

		conv := core.ConversationKey{Platform: "console", Channel: "local"}
		ref, _ := a.Send(ctx, conv, core.Post{Text: "Hel"})
		a.Edit(ctx, ref, core.Post{Text: "Hello"})
		want += "Hello"
		check("the answer")

		// Typing while the answer streams shows the line under it...
		keys("x")
		want += "\nyou> x"
		check("typing during the answer")
		// ...and the answer resumes where it stood, the line drawn again below.
		a.Edit(ctx, ref, core.Post{Text: "Hello there"})
		want += "\r\x1b[K\x1b[A\x1b[6G" + " there" + "\nyou> x"
		check("the answer goes on")

		// Editing: Backspace, a wide line that wraps, Left, Ctrl-A.
		keys("\x7f")
		want += "\r\x1b[Kyou> "
		keys("abcdefg")
		want += "\r\x1b[Kyou> a" + "\r\x1b[Kyou> ab" + "\r\x1b[Kyou> abc" + "\r\x1b[Kyou> abcd" +
			"\r\x1b[Kyou> abcde" + "\r\x1b[Kyou> abcdef" +
			// 12 columns: the row is full, so the cursor goes to the next one.
			"\r\x1b[Kyou> abcdefg \r"
		check("a full row")
		keys("\x1b[D")
		want += "\r\x1b[1A\x1b[J" + "you> abcdefg \r" + "\x1b[1A\x1b[12G"
		check("Left")
		keys("\x01")
		want += "\r\x1b[J" + "you> abcdefg \r" + "\x1b[1A\x1b[6G"
		check("Ctrl-A")

		// Output takes the two-row line away first.
		a.Send(ctx, conv, core.Post{Text: "notice\n"})
		want += "\r\x1b[J" + "notice\n" + "you> abcdefg \r" + "\x1b[1A\x1b[6G"
		check("output over a wrapped line")

		// Ctrl-E, then Ctrl-U empties the line.
		keys("\x05\x15")
		want += "\r\x1b[J" + "you> abcdefg \r" + "\r\x1b[1A\x1b[J" + "you> "
		check("Ctrl-E, Ctrl-U")
		// After fg the terminal's screen is not the adapter's any more: the
		// prompt and the line are drawn anew, not erased first.
		keys("ok")
		want += "\r\x1b[Kyou> o" + "\r\x1b[Kyou> ok"
		a.Redraw()
		want += "you> ok"
		check("Redraw")
		keys("\x15")
		want += "\r\x1b[Kyou> "
		// Ctrl-D on an empty line ends the input; End ends the last line.
		keys("\x04")
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
		a.End()
		want += "\r\x1b[Kyou> " + "\n"
		check("End")
		inW.Close()
		synctest.Wait()
	})
}

func TestEditorHistory(t *testing.T) {
	var e editor
	typeLine := func(s string) {
		for _, r := range s {
			e.apply(key{code: keyRune, r: r})
		}
	}
	typeLine("one")
	e.apply(key{code: keyEnter})
	typeLine("two")
	e.apply(key{code: keyEnter})
	typeLine("dr")
	e.apply(key{code: keyUp})
	if string(e.line) != "two" {
		t.Errorf("Up = %q, want two", string(e.line))
	}
	e.apply(key{code: keyUp})
	e.apply(key{code: keyUp})
	if string(e.line) != "one" {
		t.Errorf("Up Up Up = %q, want one", string(e.line))
	}
	e.apply(key{code: keyDown})
	e.apply(key{code: keyDown})
	if string(e.line) != "dr" {
		t.Errorf("back down = %q, want the draft", string(e.line))
	}
	typeLine("aft word")
	e.apply(key{code: keyKillWord})
	if line, submit, _ := e.apply(key{code: keyEnter}); !submit || line != "draft " {
		t.Errorf("after Ctrl-W, Enter = %q, %v; want %q", line, submit, "draft ")
	}
}

func FuzzDecodeKeys(f *testing.F) {
	f.Add([]byte("hi\r\n\x1b[D\x1b[3~\x1bOH\x7f\x04é✅"))
	f.Fuzz(func(t *testing.T, in []byte) {
		keys := make(chan key)
		errc := make(chan error, 1)
		done := make(chan struct{})
		go readKeys(bytes.NewReader(in), keys, errc, done)
		var e editor
		for {
			select {
			case k := <-keys:
				e.apply(k)
				if e.pos < 0 || e.pos > len(e.line) {
					t.Fatalf("cursor %d outside the line %q", e.pos, string(e.line))
				}
			case <-errc:
				close(done)
				return
			}
		}
	})
}

// TestEscapesShown attacks the terminal through the text the adapter prints
// (issue 27, item 6): an agent's OSC 52 (the clipboard), OSC 0 (the title)
// and \r ESC [K (erasing the line to hide what came before) are shown as
// control pictures in a message, its streamed end and a redraw, while the
// adapter's own escapes (the prompt's erase) still work.
func TestEscapesShown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inR, inW := io.Pipe()
		out := &syncBuffer{}
		a := New(inR, out, Options{Prompt: "you> "})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx, newRecorder()) }()
		synctest.Wait()

		conv := core.ConversationKey{Platform: "console", Channel: "local"}
		ref, _ := a.Send(ctx, conv, core.Post{Text: "clip\x1b]52;c;cm0gLXJmIH4=\x07 title\x1b]0;pwned\x07\n"})
		a.Edit(ctx, ref, core.Post{Text: "clip\x1b]52;c;cm0gLXJmIH4=\x07 title\x1b]0;pwned\x07\nSECRET\r\x1b[Kall good"})
		a.Edit(ctx, ref, core.Post{Text: "\u009b2J\x7f"})
		want := "you> " + eraseLine +
			"clip␛]52;c;cm0gLXJmIH4=␇ title␛]0;pwned␇\n" +
			"SECRET␍␛[Kall good" +
			"\r\x1b[1A" + clearDown + "␛[2J␡" // the redraw goes up over two rows
		if got := out.String(); got != want {
			t.Errorf("output:\n%q\nwant\n%q", got, want)
		}
		cancel()
		inW.Close()
		<-done
	})
}
