package stream_test

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/platformtest"
	"github.com/agentbridge/agentbridge/core/stream"
)

// shownTexts returns what the reply showed, post by post and edit by edit.
func shownTexts(p *platformtest.Platform) []string {
	var out []string
	for _, c := range p.Calls() {
		if (c.Op == platformtest.OpSend || c.Op == platformtest.OpEdit) && c.Err == nil {
			out = append(out, c.Post.Text)
		}
	}
	return out
}

// TestPlaceholderShowsTheTurnIsAlive: a silent agent gets the placeholder
// after PlaceholderDelay, then one edit per Heartbeat with the elapsed
// time — a handful of platform calls a minute, not a stream of them.
func TestPlaceholderShowsTheTurnIsAlive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := platformtest.New("fake", plainLimits(4000, time.Second))
		s := stream.Start(t.Context(), p, conv, stream.Options{PlaceholderDelay: 1500 * time.Millisecond, Heartbeat: 20 * time.Second})
		time.Sleep(2*time.Minute + 10*time.Second)
		synctest.Wait()
		want := []string{"thinking…", "thinking… (20 s)", "thinking… (40 s)", "thinking… (1 min)",
			"thinking… (1 min 20 s)", "thinking… (1 min 40 s)", "thinking… (2 min)"}
		if got := shownTexts(p); !slices.Equal(got, want) {
			t.Errorf("placeholder over 2 min 10 s = %q, want %q", got, want)
		}
		s.Partial(core.RoleOutput, "answer")
		if err := s.Finish(stream.Final{}); err != nil {
			t.Fatal(err)
		}
		if got := p.Texts(conv); len(got) != 1 || got[0] != "answer" {
			t.Errorf("final = %q, want the placeholder replaced by the answer", got)
		}
		// Nothing ticks after the answer: the loop has ended.
		n := len(p.Calls())
		time.Sleep(time.Minute)
		if len(p.Calls()) != n {
			t.Error("the heartbeat edited the reply after it was final")
		}
	})
}

// TestNoThinkingPlaceholderUnderAnOpenPrompt: while a permission prompt
// waits, no placeholder is posted, and one already shown says the turn
// waits for an answer (and stops ticking) until the prompt closes.
func TestNoThinkingPlaceholderUnderAnOpenPrompt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := platformtest.New("fake", plainLimits(4000, time.Second))
		s := stream.Start(t.Context(), p, conv, stream.Options{PlaceholderDelay: time.Second, Heartbeat: 20 * time.Second})
		s.Prompt(true) // the agent asks before the placeholder is due
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := len(p.Calls()); n != 0 {
			t.Fatalf("%d calls while a prompt was open from the start: %q", n, shownTexts(p))
		}
		s.Prompt(false)
		synctest.Wait()
		if got := shownTexts(p); !slices.Equal(got, []string{"thinking… (1 min)"}) {
			t.Fatalf("after the prompt closed: %q, want the placeholder with the elapsed time", got)
		}
		s.Prompt(true) // a second request while the placeholder shows
		synctest.Wait()
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		want := []string{"thinking… (1 min)", "⏸ waiting for an answer to the permission request"}
		if got := shownTexts(p); !slices.Equal(got, want) {
			t.Fatalf("with a prompt open under the placeholder: %q, want %q", got, want)
		}
		s.Prompt(false)
		s.Partial(core.RoleOutput, "done")
		if err := s.Finish(stream.Final{}); err != nil {
			t.Fatal(err)
		}
		if got := p.Texts(conv); len(got) != 1 || got[0] != "done" {
			t.Errorf("final = %q", got)
		}
	})
}

// TestUnstreamedReplyFollowsTheBridgesNotes: a bridge note streamed ahead
// of a non-streaming agent's answer does not hide the answer.
func TestUnstreamedReplyFollowsTheBridgesNotes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := platformtest.New("fake", plainLimits(4000, time.Second))
		s := stream.Start(t.Context(), p, conv, stream.Options{})
		s.Partial(core.RoleOutput, "🔀 note\n\n")
		if err := s.Finish(stream.Final{Reply: "the answer"}); err != nil {
			t.Fatal(err)
		}
		if got := p.Texts(conv); len(got) != 1 || got[0] != "🔀 note\n\nthe answer" {
			t.Errorf("reply = %q, want the note then the answer", got)
		}
	})
}

// TestOnShowReportsTheLastMessage: the journal hook sees each message as it
// becomes the reply's last, with its text.
func TestOnShowReportsTheLastMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := platformtest.New("fake", plainLimits(300, 100*time.Millisecond))
		var last core.Shown
		s := stream.Start(t.Context(), p, conv, stream.Options{OnShow: func(sh core.Shown, _ bool) { last = sh }})
		for i := range 6 {
			s.Partial(core.RoleOutput, string(rune('a'+i))+" paragraph of some length to fill the message up\n\n")
			time.Sleep(200 * time.Millisecond)
		}
		if err := s.Finish(stream.Final{}); err != nil {
			t.Fatal(err)
		}
		msgs := p.Messages(conv)
		if len(msgs) < 2 {
			t.Fatalf("messages = %q, want the reply split", p.Texts(conv))
		}
		end := msgs[len(msgs)-1]
		if last.Ref != end.Ref || last.Text != end.Post.Text || !last.Plain {
			t.Errorf("OnShow last saw %+v, want the last message %+v", last, end)
		}
	})
}

// TestQuietReplyStaysVisiblyAlive: when the agent goes quiet after some
// output (a long tool call with its thinking hidden), a line under the
// text counts the quiet time every Heartbeat; new output takes it away,
// and an open prompt has none.
func TestQuietReplyStaysVisiblyAlive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := platformtest.New("fake", plainLimits(4000, time.Second))
		s := stream.Start(t.Context(), p, conv, stream.Options{Heartbeat: 20 * time.Second})
		s.Partial(core.RoleOutput, "hello")
		time.Sleep(50 * time.Second)
		s.Partial(core.RoleThinking, "hidden thinking does not count as shown")
		time.Sleep(15 * time.Second)
		synctest.Wait()
		want := []string{"hello", "hello\n\n⏳ still working… (20 s)", "hello\n\n⏳ still working… (40 s)", "hello\n\n⏳ still working… (1 min)"}
		if got := shownTexts(p); !slices.Equal(got, want) {
			t.Fatalf("quiet reply = %q, want %q", got, want)
		}
		s.Partial(core.RoleOutput, " world")
		synctest.Wait()
		time.Sleep(time.Second)
		synctest.Wait()
		if got := p.Texts(conv); len(got) != 1 || got[0] != "hello world" {
			t.Fatalf("after new output = %q, want the quiet line gone", got)
		}
		s.Prompt(true)
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := p.Texts(conv); got[0] != "hello world" {
			t.Errorf("with a prompt open = %q, want no quiet line", got)
		}
		s.Prompt(false)
		if err := s.Finish(stream.Final{}); err != nil {
			t.Fatal(err)
		}
		if got := p.Texts(conv); len(got) != 1 || got[0] != "hello world" {
			t.Errorf("final = %q", got)
		}
	})
}
