package stream_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/platformtest"
	"github.com/agentbridge/agentbridge/core/stream"
)

// shown is what conv shows, oldest first: each message's text, a file as
// [name].
func shown(p *platformtest.Platform) []string {
	var out []string
	for _, m := range p.Messages(conv) {
		if m.File != nil {
			out = append(out, "["+m.File.Meta.Name+"]")
			continue
		}
		out = append(out, m.Post.Text)
	}
	return out
}

func spooled(t *testing.T, name, data string) core.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return core.File{Name: name, MIME: "image/png", Kind: "image", Size: int64(len(data)), Path: path}
}

// fileLog records what OnFile heard.
type fileLog struct {
	mu   sync.Mutex
	errs map[string]error
}

func (l *fileLog) on(f core.File, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.errs == nil {
		l.errs = map[string]error{}
	}
	l.errs[f.Name] = err
}

// TestFileComesWhereTheAgentSentIt: the text before a file is its own
// message, finished before the file goes; the file answers the same
// message; the text after it starts a new message (X-FILE-1).
func TestFileComesWhereTheAgentSentIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := platformtest.New("fake", plainLimits(4000, time.Second))
		var log fileLog
		s := stream.Start(t.Context(), p, conv, stream.Options{ReplyTo: "m1", OnFile: log.on})
		s.Partial(core.RoleOutput, "Here is the chart:")
		time.Sleep(1500 * time.Millisecond) // the text is shown, then more comes
		s.Partial(core.RoleOutput, " it rose")
		s.File(spooled(t, "chart.png", "png bytes"))
		s.Partial(core.RoleOutput, "\n\nAnd the notes:")
		s.File(spooled(t, "notes.txt", "n"))
		s.Partial(core.RoleOutput, "\n\nThat is all.")
		if err := s.Finish(stream.Final{Footer: "3 tokens"}); err != nil {
			t.Fatal(err)
		}
		want := []string{"Here is the chart: it rose", "[chart.png]", "And the notes:", "[notes.txt]", "That is all.\n\n3 tokens"}
		if got := shown(p); !slices.Equal(got, want) {
			t.Fatalf("conversation shows %q, want %q", got, want)
		}
		files := p.Files(conv)
		if string(files[0].Data) != "png bytes" || files[0].Meta.ReplyTo != "m1" || files[1].Meta.ReplyTo != "m1" {
			t.Errorf("files %+v: want the bytes, answering m1", files)
		}
		// The text before each file was final before the file went.
		var lastEdit, firstFile time.Time
		for _, c := range p.Calls() {
			if c.Op == platformtest.OpFile && firstFile.IsZero() {
				firstFile = c.At
			}
			if c.Op == platformtest.OpEdit && c.Post.Text == "Here is the chart: it rose" {
				lastEdit = c.At
			}
		}
		if lastEdit.After(firstFile) {
			t.Errorf("the text before the file was edited after the file went")
		}
		if log.errs["chart.png"] != nil || log.errs["notes.txt"] != nil || len(log.errs) != 2 {
			t.Errorf("OnFile heard %v", log.errs)
		}
	})
}

// TestFileRateLimitedIsWaitedOut: a 429 on an upload, however often,
// is waited out and the file still comes in its place.
func TestFileRateLimitedIsWaitedOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := platformtest.New("fake", plainLimits(4000, time.Second))
		p.RateLimit(platformtest.OpFile, 20*time.Second, 6) // more than a one-off's tries
		s := stream.Start(t.Context(), p, conv, stream.Options{})
		s.Partial(core.RoleOutput, "before")
		s.File(spooled(t, "a.png", "x"))
		s.Partial(core.RoleOutput, "after")
		start := time.Now()
		if err := s.Finish(stream.Final{}); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < 120*time.Second {
			t.Errorf("done after %v, before six 20 s rate limits", d)
		}
		if got, want := shown(p), []string{"before", "[a.png]", "after"}; !slices.Equal(got, want) {
			t.Errorf("conversation shows %q, want %q", got, want)
		}
	})
}

// TestFileFailureIsALine: an upload the platform keeps refusing becomes
// a line where the file would have been, and OnFile hears the error; a
// platform that takes no files gets a line too.
func TestFileFailureIsALine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := platformtest.New("fake", plainLimits(4000, time.Second))
		boom := errors.New("upload refused")
		p.Fail(platformtest.OpFile, boom, boom, boom, boom, boom)
		var log fileLog
		s := stream.Start(t.Context(), p, conv, stream.Options{OnFile: log.on})
		s.Partial(core.RoleOutput, "before")
		s.File(spooled(t, "a.png", "x"))
		s.Partial(core.RoleOutput, "after")
		if err := s.Finish(stream.Final{}); err != nil {
			t.Fatal(err)
		}
		if got, want := shown(p), []string{"before", "📎 a.png could not be sent: upload refused\n\nafter"}; !slices.Equal(got, want) {
			t.Errorf("conversation shows %q, want %q", got, want)
		}
		if !errors.Is(log.errs["a.png"], boom) {
			t.Errorf("OnFile heard %v", log.errs)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		fake := platformtest.New("fake", plainLimits(4000, time.Second))
		var log fileLog
		s := stream.Start(t.Context(), noFiles{fake}, conv, stream.Options{OnFile: log.on})
		s.File(spooled(t, "a.png", "x"))
		if err := s.Finish(stream.Final{}); err != nil {
			t.Fatal(err)
		}
		if got, want := fake.Texts(conv), []string{"📎 a.png not sent: this platform does not take files"}; !slices.Equal(got, want) {
			t.Errorf("conversation shows %q, want %q", got, want)
		}
		if !errors.Is(log.errs["a.png"], stream.ErrNoFiles) {
			t.Errorf("OnFile heard %v", log.errs)
		}
	})
}

// noFiles is the fake with only core.Platform's methods: no
// core.FileSender.
type noFiles struct{ fake *platformtest.Platform }

func (n noFiles) Name() string                                  { return n.fake.Name() }
func (n noFiles) Limits() core.Limits                           { return n.fake.Limits() }
func (n noFiles) Run(ctx context.Context, h core.Handler) error { return n.fake.Run(ctx, h) }
func (n noFiles) Send(ctx context.Context, to core.ConversationKey, post core.Post) (core.MessageRef, error) {
	return n.fake.Send(ctx, to, post)
}
func (n noFiles) Edit(ctx context.Context, ref core.MessageRef, post core.Post) error {
	return n.fake.Edit(ctx, ref, post)
}

// TestFileAfterThePlaceholder: a file that comes while only the
// placeholder shows turns the placeholder into a line naming it, not a
// "thinking…" left above the file; a turn that ends with the file says
// nothing more.
func TestFileAfterThePlaceholder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := platformtest.New("fake", plainLimits(4000, time.Second))
		s := stream.Start(t.Context(), p, conv, stream.Options{PlaceholderDelay: time.Second})
		time.Sleep(2 * time.Second)
		s.File(spooled(t, "a.png", "x"))
		time.Sleep(time.Minute) // no placeholder after the file
		if err := s.Finish(stream.Final{}); err != nil {
			t.Fatal(err)
		}
		if got, want := shown(p), []string{"📎 a.png", "[a.png]"}; !slices.Equal(got, want) {
			t.Errorf("conversation shows %q, want %q", got, want)
		}
	})
}

// TestFileBreaksTheNativeStream: a native stream ends where a file came;
// the rest of the reply is posted after the file.
func TestFileBreaksTheNativeStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := platformtest.New("fake", plainLimits(4000, time.Second))
		p.EnableStreams()
		s := stream.Start(t.Context(), p, conv, stream.Options{})
		s.Partial(core.RoleOutput, "one ")
		time.Sleep(1500 * time.Millisecond)
		s.Partial(core.RoleOutput, "two")
		s.File(spooled(t, "a.png", "x"))
		s.Partial(core.RoleOutput, "three")
		if err := s.Finish(stream.Final{}); err != nil {
			t.Fatal(err)
		}
		got := shown(p)
		if len(got) != 3 || strings.TrimSpace(got[0]) != "one two" || got[1] != "[a.png]" || got[2] != "three" {
			t.Errorf("conversation shows %q, want the stream up to the file, the file, the rest", got)
		}
	})
}
