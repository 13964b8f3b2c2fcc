package console

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

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
		{Label: "Allow", Value: "p:1:allow"},
		{Label: "Deny", Value: "p:1:deny"},
		{Label: "Allow for this session", Value: "p:1:session"},
	}
	ref, err := s.a.Send(ctx, conv, core.Post{Text: "Allow write_file?", Buttons: buttons})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.out.String(), "Allow write_file?\n  [A]llow / [D]eny / Allow for this [s]ession\n"; got != want {
		t.Errorf("prompt printed as %q, want %q", got, want)
	}

	for _, tt := range []struct{ line, value string }{{"a", "p:1:allow"}, {"D", "p:1:deny"}, {" s ", "p:1:session"}} {
		s.typeLine(t, tt.line)
		act, ok := s.next(t).(core.Action)
		if !ok {
			t.Fatalf("line %q did not press a button", tt.line)
		}
		if act.Value != tt.value || act.Ref != ref || act.Conv != conv || act.From.ID != "local" || act.Reply == nil {
			t.Errorf("line %q: action %+v, want value %q on %v", tt.line, act, tt.value, ref)
		}
	}
	s.typeLine(t, "x")
	if m, ok := s.next(t).(core.Message); !ok || m.Text != "x" {
		t.Errorf("non-key line while pending: %+v, want a message", m)
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
	s.typeLine(t, "y")
	if m, ok := s.next(t).(core.Message); !ok || m.Text != "y" {
		t.Errorf("key of an older prompt: %+v, want a message", m)
	}
	s.typeLine(t, "n")
	if act, ok := s.next(t).(core.Action); !ok || act.Value != "new" {
		t.Errorf("key of the newest prompt: %+v, want its action", act)
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
	edit(r1, core.Post{Text: "Hello, world\n- item\n- more"})
	expect("edit of an older message", "Hello, world\n- item\nsecond\n  ↳ Hello, world\n- item\n- more")
	edit(r1, core.Post{Text: "Hello, world\n- item\n- more!"})
	expect("extending the reprinted message", "Hello, world\n- item\nsecond\n  ↳ Hello, world\n- item\n- more!")
	edit(r2, core.Post{Text: "rewritten"})
	expect("non-extending edit", "Hello, world\n- item\nsecond\n  ↳ Hello, world\n- item\n- more!\n  ↳ rewritten")
	edit(r2, core.Post{Text: "short"})
	expect("shrinking edit", "Hello, world\n- item\nsecond\n  ↳ Hello, world\n- item\n- more!\n  ↳ rewritten\n  ↳ short")

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
	// Buttons removed and the text extended: only the outcome is printed.
	if err := a.Edit(ctx, ref, core.Post{Text: "🔐 write_file? ✅ allowed"}); err != nil {
		t.Fatal(err)
	}
	want += "  ↳ ✅ allowed"
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

func TestNotify(t *testing.T) {
	out := &syncBuffer{}
	a := New(strings.NewReader(""), out, Options{})
	conv := core.ConversationKey{Platform: "console", Channel: "local"}
	a.Send(t.Context(), conv, core.Post{Text: "partial"})
	if err := a.Notify(t.Context(), conv, core.User{ID: "local"}, "you may not answer"); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "partial\n  (only you) you may not answer\n"; got != want {
		t.Errorf("notice %q, want %q", got, want)
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
// a panic, and that the last text printed is visible.
func FuzzEdit(f *testing.F) {
	f.Add("Hel", "Hello", "He", true)
	f.Add("", "x\n", "x\ny", false)
	f.Fuzz(func(t *testing.T, t1, t2, t3 string, buttons bool) {
		out := &syncBuffer{}
		a := New(strings.NewReader(""), out, Options{})
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
		if !strings.Contains(out.String(), strings.TrimLeft(t3[min(len(t3), len(t2)):], " ")) {
			t.Errorf("output %q does not show the end of %q", out.String(), t3)
		}
	})
}
