package stream_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/platformtest"
	"github.com/agentbridge/agentbridge/core/render"
	"github.com/agentbridge/agentbridge/core/stream"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var conv = core.ConversationKey{Platform: "fake", Channel: "c1"}

func plainLimits(maxText int, interval time.Duration) core.Limits {
	return core.Limits{MaxText: maxText, EditInterval: interval, Dialect: render.Plain}
}

// assertCadence fails if two platform writes of the reply came closer than
// interval.
func assertCadence(t *testing.T, p *platformtest.Platform, interval time.Duration) {
	t.Helper()
	var last time.Time
	for _, c := range p.Calls() {
		if c.Op != platformtest.OpSend && c.Op != platformtest.OpEdit {
			continue
		}
		if !last.IsZero() && c.At.Sub(last) < interval {
			t.Errorf("%s at +%v came %v after the previous write; cadence is %v", c.Op, c.At.Sub(last), c.At.Sub(last), interval)
		}
		last = c.At
	}
}

func TestCoalescesPartialsWithinCadence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := platformtest.New("fake", plainLimits(4000, time.Second))
		s := stream.Start(t.Context(), p, conv, stream.Options{})
		var want strings.Builder
		for i := range 100 {
			word := "w" + string(rune('a'+i%26)) + " "
			want.WriteString(word)
			s.Partial(core.RoleOutput, word)
			time.Sleep(50 * time.Millisecond) // the agent's pace, in fake time
		}
		if err := s.Finish(stream.Final{}); err != nil {
			t.Fatal(err)
		}
		got := p.Texts(conv)
		if len(got) != 1 || got[0] != strings.TrimSpace(want.String()) {
			t.Fatalf("final messages = %q, want one message with all words", got)
		}
		writes := len(p.CallsOf(platformtest.OpSend)) + len(p.CallsOf(platformtest.OpEdit))
		// 5 s of streaming at one write per second: about 6 writes, not 100.
		if writes > 8 {
			t.Errorf("%d platform writes for 100 partials over 5s; want coalescing to ~6", writes)
		}
		assertCadence(t, p, time.Second)
	})
}

func TestRateLimitWaitsAndFinalIsIntact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := platformtest.New("fake", plainLimits(4000, 100*time.Millisecond))
		s := stream.Start(t.Context(), p, conv, stream.Options{})
		s.Partial(core.RoleOutput, "hello")
		synctest.Wait()
		p.RateLimit(platformtest.OpEdit, 3*time.Second, 1)
		start := time.Now()
		s.Partial(core.RoleOutput, " world")
		time.Sleep(200 * time.Millisecond)
		s.Partial(core.RoleOutput, "!")
		if err := s.Finish(stream.Final{}); err != nil {
			t.Fatal(err)
		}
		edits := p.CallsOf(platformtest.OpEdit)
		if len(edits) < 2 || edits[0].Err == nil {
			t.Fatalf("edits = %+v, want a rate-limited edit then a successful one", edits)
		}
		// The retry waited Retry-After and sent the latest text, skipping the stale frame.
		if retry := edits[1]; retry.At.Sub(start) < 3*time.Second || retry.Post.Text != "hello world!" {
			t.Errorf("retry at +%v with %q; want ≥3s and the latest text", retry.At.Sub(start), retry.Post.Text)
		}
		if got := p.Texts(conv); len(got) != 1 || got[0] != "hello world!" {
			t.Errorf("final = %q", got)
		}
	})
}

func TestOverflowContinuesInFollowUpMessages(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := platformtest.New("fake", plainLimits(300, 100*time.Millisecond))
		s := stream.Start(t.Context(), p, conv, stream.Options{})
		var paras []string
		for i := range 12 {
			para := strings.Repeat(string(rune('a'+i))+"x ", 30) // 90 chars each
			paras = append(paras, strings.TrimSpace(para))
			s.Partial(core.RoleOutput, para+"\n\n")
			time.Sleep(150 * time.Millisecond)
		}
		if err := s.Finish(stream.Final{}); err != nil {
			t.Fatal(err)
		}
		got := p.Texts(conv)
		if len(got) < 4 {
			t.Fatalf("got %d messages, want the 1,000+ characters split over at least 4", len(got))
		}
		all := strings.Join(got, "\n\n")
		for _, para := range paras {
			if !strings.Contains(all, para) {
				t.Errorf("paragraph %q lost", para[:10])
			}
		}
		for _, c := range p.Calls() {
			if c.Err != nil {
				t.Errorf("%s failed: %v", c.Op, c.Err)
			}
		}
	})
}

func TestFinalDeliveredDespiteFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := platformtest.New("fake", plainLimits(4000, 100*time.Millisecond))
		s := stream.Start(t.Context(), p, conv, stream.Options{})
		s.Partial(core.RoleOutput, "partial answer")
		synctest.Wait()
		boom := errors.New("502 bad gateway")
		p.Fail(platformtest.OpEdit, boom, boom, boom)
		if err := s.Finish(stream.Final{Error: "upstream rate limited"}); err != nil {
			t.Fatal(err)
		}
		got := p.Texts(conv)
		if len(got) != 1 || !strings.HasPrefix(got[0], "partial answer") || !strings.Contains(got[0], "upstream rate limited") {
			t.Fatalf("final = %q; want the partial text kept and the error after it", got)
		}
		if strings.Index(got[0], "partial answer") > strings.Index(got[0], "upstream") {
			t.Error("error shown before the partials")
		}
	})
}

func TestPlaceholderThenContent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := platformtest.New("fake", plainLimits(4000, 100*time.Millisecond))
		var refs []bool
		s := stream.Start(t.Context(), p, conv, stream.Options{
			PlaceholderDelay: time.Second,
			OnShow:           func(_ core.Shown, placeholder bool) { refs = append(refs, placeholder) },
		})
		time.Sleep(500 * time.Millisecond)
		synctest.Wait()
		if n := len(p.Calls()); n != 0 {
			t.Fatalf("%d calls before the placeholder delay", n)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if got := p.Texts(conv); len(got) != 1 || got[0] != "thinking…" {
			t.Fatalf("after delay: %q, want the placeholder", got)
		}
		s.Partial(core.RoleOutput, "answer")
		if err := s.Finish(stream.Final{}); err != nil {
			t.Fatal(err)
		}
		if got := p.Texts(conv); len(got) != 1 || got[0] != "answer" {
			t.Fatalf("final %q: the placeholder must be replaced in place", got)
		}
		if len(refs) != 2 || !refs[0] || refs[1] {
			t.Errorf("OnShow placeholder flags = %v, want [true false]", refs)
		}
	})
}

func TestFormattingRejectedFallsBackToPlain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := plainLimits(4096, 100*time.Millisecond)
		lim.Dialect = render.TelegramHTML
		p := platformtest.New("fake", lim)
		p.Fail(platformtest.OpSend, core.ErrFormatting)
		s := stream.Start(t.Context(), p, conv, stream.Options{})
		s.Partial(core.RoleOutput, "**bold** and <tag>")
		if err := s.Finish(stream.Final{}); err != nil {
			t.Fatal(err)
		}
		msgs := p.Messages(conv)
		if len(msgs) != 1 || !msgs[0].Post.Plain || !strings.Contains(msgs[0].Post.Text, "bold") {
			t.Fatalf("messages = %+v, want one plain-text message", msgs)
		}
	})
}

func TestThinkingShownApartOrHidden(t *testing.T) {
	for _, show := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			p := platformtest.New("fake", plainLimits(4000, 100*time.Millisecond))
			s := stream.Start(t.Context(), p, conv, stream.Options{ShowThinking: show})
			s.Partial(core.RoleThinking, "pondering deeply")
			s.Partial(core.RoleOutput, "The answer is 42.")
			if err := s.Finish(stream.Final{}); err != nil {
				t.Fatal(err)
			}
			got := strings.Join(p.Texts(conv), "\n")
			if strings.Contains(got, "pondering") != show {
				t.Errorf("ShowThinking=%v: %q", show, got)
			}
			if show && strings.Index(got, "pondering") > strings.Index(got, "42") {
				t.Errorf("thinking should come before the answer: %q", got)
			}
			if !strings.Contains(got, "The answer is 42.") {
				t.Errorf("answer missing: %q", got)
			}
		})
	}
}

func TestReplyUsedWhenNothingStreamedAndNoticeShown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := platformtest.New("fake", plainLimits(4000, 100*time.Millisecond))
		s := stream.Start(t.Context(), p, conv, stream.Options{})
		if err := s.Finish(stream.Final{Reply: "one-shot body", Notice: "Stopped.", Footer: "12 tokens"}); err != nil {
			t.Fatal(err)
		}
		got := p.Texts(conv)
		if len(got) != 1 || !strings.Contains(got[0], "one-shot body") || !strings.Contains(got[0], "Stopped.") || !strings.Contains(got[0], "12 tokens") {
			t.Fatalf("final = %q", got)
		}
	})
}

func TestFinishReturnsErrorWhenContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := platformtest.New("fake", plainLimits(4000, 100*time.Millisecond))
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		errs := make([]error, 100)
		for i := range errs {
			errs[i] = errors.New("down")
		}
		p.Fail(platformtest.OpSend, errs...)
		s := stream.Start(ctx, p, conv, stream.Options{})
		s.Partial(core.RoleOutput, "x")
		if err := s.Finish(stream.Final{}); err == nil {
			t.Fatal("Finish = nil although every send failed until the deadline")
		}
	})
}

func TestLongStreamContinuesPastTheEditWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := plainLimits(4000, time.Second)
		lim.EditWindow = 10 * time.Minute // Discord's is an hour
		p := platformtest.New("fake", lim)
		s := stream.Start(t.Context(), p, conv, stream.Options{})
		var paras []string
		for i := range 30 { // one paragraph a minute for half an hour
			para := fmt.Sprintf("paragraph %d of the long answer", i)
			paras = append(paras, para)
			s.Partial(core.RoleOutput, para+"\n\n")
			time.Sleep(time.Minute)
		}
		if err := s.Finish(stream.Final{Footer: "done"}); err != nil {
			t.Fatal(err)
		}
		sentAt := map[string]time.Time{}
		for _, c := range p.Calls() {
			switch c.Op {
			case platformtest.OpSend:
				sentAt[c.Ref.ID] = c.At
			case platformtest.OpEdit:
				if age := c.At.Sub(sentAt[c.Ref.ID]); age > lim.EditWindow {
					t.Errorf("edited message %s at age %v, past the %v edit window", c.Ref.ID, age, lim.EditWindow)
				}
			}
		}
		got := p.Texts(conv)
		if len(got) < 3 {
			t.Fatalf("%d messages for a 30-minute stream with a 10-minute edit window; want ≥3", len(got))
		}
		all := strings.Join(got, "\n\n")
		for _, para := range paras {
			if n := strings.Count(all+"\n", para+"\n"); n != 1 {
				t.Errorf("%q shown %d times, want once", para, n)
			}
		}
		if !strings.HasSuffix(got[len(got)-1], "done") {
			t.Errorf("the footer is not at the end of the last message: %q", got[len(got)-1])
		}
	})
}

func TestFinishedMessagesAreReportedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := platformtest.New("fake", plainLimits(300, 100*time.Millisecond))
		s := stream.Start(t.Context(), p, conv, stream.Options{})
		for i := range 8 {
			s.Partial(core.RoleOutput, strings.Repeat(string(rune('a'+i)), 80)+"\n\n")
			time.Sleep(200 * time.Millisecond)
		}
		// While the reply streams, every message but the last holds a full
		// piece: its text is final (a Telegram draft becomes a real
		// message at once, so nothing the user read vanishes).
		if n, m := len(p.CallsOf(platformtest.OpFinalize)), len(p.Messages(conv)); m < 2 || n != m-1 {
			t.Fatalf("%d FinalizeMessage calls while the reply streams in %d messages; want all but the last", n, m)
		}
		if err := s.Finish(stream.Final{}); err != nil {
			t.Fatal(err)
		}
		var finished []string
		for _, c := range p.CallsOf(platformtest.OpFinalize) {
			finished = append(finished, c.Ref.ID)
		}
		var sent []string
		for _, m := range p.Messages(conv) {
			sent = append(sent, m.Ref.ID)
		}
		if strings.Join(finished, ",") != strings.Join(sent, ",") {
			t.Errorf("FinalizeMessage calls %v, want each message once in order %v", finished, sent)
		}
		// FinalizeMessage comes after the message's last write.
		calls := p.Calls()
		if last := calls[len(calls)-1]; last.Op != platformtest.OpFinalize {
			t.Errorf("last call %s, want finish", last.Op)
		}
		done := map[string]bool{}
		for _, c := range calls {
			switch {
			case c.Op == platformtest.OpFinalize:
				done[c.Ref.ID] = true
			case c.Op == platformtest.OpEdit && done[c.Ref.ID]:
				t.Errorf("message %s edited after it was finalized", c.Ref.ID)
			}
		}
	})
}

func TestNativeStreamAppendsDeltasAndStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := platformtest.New("fake", plainLimits(4000, time.Second))
		p.EnableStreams()
		s := stream.Start(t.Context(), p, conv, stream.Options{})
		words := strings.Fields("the quick brown fox jumps over the lazy dog again and again")
		for _, w := range words {
			s.Partial(core.RoleOutput, w+" ")
			time.Sleep(300 * time.Millisecond)
		}
		if err := s.Finish(stream.Final{Footer: "12 tokens"}); err != nil {
			t.Fatal(err)
		}
		msgs := p.Messages(conv)
		if len(msgs) != 1 {
			t.Fatalf("%d messages, want the one streamed message", len(msgs))
		}
		if got := msgs[0].Post.Text; !strings.HasPrefix(got, strings.Join(words, " ")+" ") || !strings.HasSuffix(got, "_12 tokens_") {
			t.Errorf("streamed text = %q", got)
		}
		appends := p.CallsOf(platformtest.OpAppend)
		if len(appends) == 0 || len(appends) > 5 {
			t.Errorf("%d appends for 12 words over 3.6 s at 1/s; want coalesced deltas", len(appends))
		}
		if n := len(p.CallsOf(platformtest.OpStop)); n != 1 {
			t.Errorf("%d stops, want 1", n)
		}
		if n := len(p.CallsOf(platformtest.OpSend)) + len(p.CallsOf(platformtest.OpEdit)); n != 0 {
			t.Errorf("%d posts or edits besides the native stream", n)
		}
	})
}

func TestNativeStreamFailureFallsBackWithoutLosingText(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := platformtest.New("fake", plainLimits(4000, 100*time.Millisecond))
		p.EnableStreams()
		s := stream.Start(t.Context(), p, conv, stream.Options{})
		s.Partial(core.RoleOutput, "first part. ")
		synctest.Wait()
		time.Sleep(200 * time.Millisecond)
		p.Fail(platformtest.OpAppend, errors.New("stream gone"))
		s.Partial(core.RoleOutput, "second part.")
		if err := s.Finish(stream.Final{}); err != nil {
			t.Fatal(err)
		}
		all := strings.Join(p.Texts(conv), "|")
		if !strings.Contains(all, "first part.") || !strings.Contains(all, "second part.") || strings.Count(all, "first part.") != 1 {
			t.Errorf("messages %q: want both parts, each once", p.Texts(conv))
		}
	})
}

func TestNoNativeStreamWhenThePlatformDeclines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := platformtest.New("fake", plainLimits(4000, 100*time.Millisecond)) // streams not enabled
		s := stream.Start(t.Context(), p, conv, stream.Options{})
		s.Partial(core.RoleOutput, "hello")
		if err := s.Finish(stream.Final{}); err != nil {
			t.Fatal(err)
		}
		if got := p.Texts(conv); len(got) != 1 || got[0] != "hello" || len(p.CallsOf(platformtest.OpSend)) != 1 {
			t.Errorf("messages %q, sends %d: want one ordinary post", got, len(p.CallsOf(platformtest.OpSend)))
		}
	})
}

// TestReplyToOnTheFirstMessageOnly: the reply's first message names the
// message it answers (also when its first send failed and was retried, and
// when it is the placeholder); overflow continuations do not.
func TestReplyToOnTheFirstMessageOnly(t *testing.T) {
	for _, placeholder := range []time.Duration{0, time.Second} {
		synctest.Test(t, func(t *testing.T) {
			p := platformtest.New("fake", plainLimits(300, 100*time.Millisecond))
			p.Fail(platformtest.OpSend, errors.New("502 bad gateway"))
			s := stream.Start(t.Context(), p, conv, stream.Options{ReplyTo: "m1", PlaceholderDelay: placeholder})
			time.Sleep(2 * time.Second)
			for i := range 6 {
				s.Partial(core.RoleOutput, strings.Repeat(string(rune('a'+i))+"x ", 30)+"\n\n")
				time.Sleep(150 * time.Millisecond)
			}
			if err := s.Finish(stream.Final{}); err != nil {
				t.Fatal(err)
			}
			var replyTo []string
			for _, c := range p.CallsOf(platformtest.OpSend) {
				replyTo = append(replyTo, c.Post.ReplyTo)
			}
			if len(replyTo) < 3 {
				t.Fatalf("%d sends, want a failed one, its retry and follow-ups", len(replyTo))
			}
			for i, r := range replyTo {
				if want := map[bool]string{true: "m1", false: ""}[i < 2]; r != want {
					t.Errorf("placeholder delay %v: send %d ReplyTo = %q, want %q (all: %q)", placeholder, i, r, want, replyTo)
				}
			}
		})
	}
}

// TestFinalDoesNotWaitForAnInterimTurn: when the adapter's budget put an
// interim frame's turn 10 s away, the final text asks for its own turn
// (which comes first) at once instead of waiting those 10 s; a platform
// 429 (TestRateLimitWaitsAndFinalIsIntact) still holds it.
func TestFinalDoesNotWaitForAnInterimTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := platformtest.New("fake", plainLimits(4000, time.Second))
		s := stream.Start(t.Context(), p, conv, stream.Options{})
		s.Partial(core.RoleOutput, "hello")
		synctest.Wait()
		p.Fail(platformtest.OpEdit, &core.RateLimitError{RetryAfter: 10 * time.Second, Turn: true})
		time.Sleep(2 * time.Second)
		s.Partial(core.RoleOutput, " world")
		synctest.Wait() // the interim edit is refused: its turn is 10 s away
		end := time.Now()
		if err := s.Finish(stream.Final{}); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(end); got > 0 {
			t.Errorf("final text went %v after the agent's end; want at once", got)
		}
		if got := p.Texts(conv); len(got) != 1 || got[0] != "hello world" {
			t.Errorf("messages = %q", got)
		}
		edits := p.CallsOf(platformtest.OpEdit)
		if len(edits) != 2 {
			t.Fatalf("%d edits; want the refused interim one and the final one", len(edits))
		}
	})
}

// TestOverflowKeepsMessagesAsShown: a reply that outgrows its message
// keeps that message as it was shown (no word it showed moves away) and
// goes on in a new one, whatever the splitter would prefer.
func TestOverflowKeepsMessagesAsShown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := platformtest.New("fake", plainLimits(300, 100*time.Millisecond))
		s := stream.Start(t.Context(), p, conv, stream.Options{})
		for i := range 200 {
			s.Partial(core.RoleOutput, fmt.Sprintf("m%03d ", i))
			if i%40 == 39 {
				s.Partial(core.RoleOutput, "\n\n") // block boundaries the splitter likes to cut at
			}
			time.Sleep(30 * time.Millisecond)
		}
		if err := s.Finish(stream.Final{}); err != nil {
			t.Fatal(err)
		}
		if n := assertKeptAsShown(t, p, "m%03d", 200); n < 4 {
			t.Errorf("%d messages; want the 200 words in several", n)
		}
	})
}

// assertKeptAsShown fails if a message of the reply lost a word it showed
// or was written after it was finalized, or if the messages do not show
// the n words format makes of 0, 1, … once each, in order. It returns how
// many messages there are.
func assertKeptAsShown(t *testing.T, p *platformtest.Platform, format string, n int) int {
	t.Helper()
	shown := map[string][]string{} // message → words it showed last
	finalized := map[string]bool{}
	for _, c := range p.Calls() {
		switch {
		case c.Op == platformtest.OpFinalize:
			finalized[c.Ref.ID] = true
		case (c.Op == platformtest.OpSend || c.Op == platformtest.OpEdit) && c.Err == nil:
			if finalized[c.Ref.ID] {
				t.Errorf("message %s written after it was finalized: %q", c.Ref.ID, c.Post.Text)
			}
			words := strings.Fields(c.Post.Text)
			for _, w := range shown[c.Ref.ID] {
				if !slices.Contains(words, w) {
					t.Fatalf("message %s showed %q, then lost it: %q", c.Ref.ID, w, c.Post.Text)
				}
			}
			shown[c.Ref.ID] = words
		}
	}
	all := strings.Fields(strings.Join(p.Texts(conv), " "))
	if len(all) != n {
		t.Fatalf("%d words shown, want each of the %d once: %q", len(all), n, p.Texts(conv))
	}
	for i, w := range all {
		if w != fmt.Sprintf(format, i) {
			t.Fatalf("word %d is %q: %q", i, w, p.Texts(conv))
		}
	}
	return len(shown)
}

// TestNativeFinalDoesNotWaitForAnInterimTurn: on a native stream, as for
// posts and edits, an interim append refused its turn in the adapter's
// budget does not hold the end of the reply: Stop asks for its own turn.
func TestNativeFinalDoesNotWaitForAnInterimTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := platformtest.New("fake", plainLimits(4000, time.Second))
		p.EnableStreams()
		s := stream.Start(t.Context(), p, conv, stream.Options{})
		s.Partial(core.RoleOutput, "hello")
		synctest.Wait()
		p.Fail(platformtest.OpAppend, &core.RateLimitError{RetryAfter: 10 * time.Second, Turn: true})
		time.Sleep(2 * time.Second)
		s.Partial(core.RoleOutput, " world")
		synctest.Wait() // the interim append is refused: its turn is 10 s away
		end := time.Now()
		if err := s.Finish(stream.Final{Footer: "done"}); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(end); got > 0 {
			t.Errorf("the stream stopped %v after the agent's end; want at once", got)
		}
		stops := p.CallsOf(platformtest.OpStop)
		if len(stops) != 1 || stops[0].Post.Text != " world\n\n_done_" {
			t.Errorf("stops = %+v, want one with the rest and the footer", stops)
		}
		if got := p.Texts(conv); len(got) != 1 || got[0] != "hello world\n\n_done_" {
			t.Errorf("messages = %q", got)
		}
	})
}

// TestBurstKeepsMessagesAsShown: output that fills more than a message
// between two writes (a fast agent, or a wait for the platform) goes out in
// new messages, and no message loses a word it showed, is edited after it
// was finalized, or has its text repeated in another.
func TestBurstKeepsMessagesAsShown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := platformtest.New("fake", plainLimits(300, time.Second))
		s := stream.Start(t.Context(), p, conv, stream.Options{})
		n := 0
		words := func(k int) string {
			var b strings.Builder
			for range k {
				fmt.Fprintf(&b, "w%03d ", n)
				n++
			}
			return b.String()
		}
		s.Partial(core.RoleOutput, words(50)) // 250 characters: one message
		time.Sleep(2 * time.Second)
		// Within one cadence: the first message's last words, a short
		// paragraph, and one too long to join it.
		s.Partial(core.RoleOutput, words(9)+"\n\n"+words(20)+"\n\n"+words(55))
		time.Sleep(2 * time.Second)
		s.Partial(core.RoleOutput, words(5))
		if err := s.Finish(stream.Final{}); err != nil {
			t.Fatal(err)
		}
		assertKeptAsShown(t, p, "w%03d", n)
	})
}

// TestHeadingStaysWithItsBlock: a heading the agent has just written is
// not shown until its block starts, so when the reply then outgrows the
// message, the message kept as shown does not end with the heading
// (issue 15: a heading alone at a message's end, parted from its block).
func TestHeadingStaysWithItsBlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := platformtest.New("fake", core.Limits{MaxText: 300, EditInterval: time.Second, Dialect: render.DiscordMarkdown})
		s := stream.Start(t.Context(), p, conv, stream.Options{})
		var b strings.Builder
		for i := range 50 {
			fmt.Fprintf(&b, "w%03d ", i)
		}
		s.Partial(core.RoleOutput, b.String()+"\n\n## Part 2\n\n")
		time.Sleep(2 * time.Second) // a frame goes out
		b.Reset()
		for i := 50; i < 110; i++ {
			fmt.Fprintf(&b, "w%03d ", i)
		}
		s.Partial(core.RoleOutput, b.String())
		if err := s.Finish(stream.Final{}); err != nil {
			t.Fatal(err)
		}
		texts := p.Texts(conv)
		for i, text := range texts {
			if strings.HasSuffix(strings.TrimSpace(text), "Part 2") {
				t.Errorf("message %d of %d ends with the heading: %q", i+1, len(texts), texts)
			}
		}
		if all := strings.Join(texts, "\n"); strings.Count(all, "## Part 2") != 1 || !strings.Contains(all, "w109") {
			t.Errorf("messages %q; want the heading once and every word", texts)
		}
	})
}
