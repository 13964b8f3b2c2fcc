package stream_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/platformtest"
	"github.com/agentbridge/agentbridge/core/stream"
)

// TestOneOffWritesWaitOutRateLimits: a notice outside any reply waits out
// the platform's rate limits and retries a failure, and is shown once.
func TestOneOffWritesWaitOutRateLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := platformtest.New("fake", plainLimits(4000, time.Second))
		p.RateLimit(platformtest.OpSend, 10*time.Second, 2)
		p.Fail(platformtest.OpSend, errors.New("connection reset"))
		start := time.Now()
		if _, err := stream.Send(t.Context(), p, conv, core.Post{Text: "notice", Plain: true}); err != nil {
			t.Fatalf("Send after two rate limits and a failure: %v", err)
		}
		if d := time.Since(start); d < 20*time.Second {
			t.Errorf("delivered after %v, before the rate limits' 20 s", d)
		}
		if got := p.Texts(conv); !slices.Equal(got, []string{"notice"}) {
			t.Errorf("shown %q, want the notice once", got)
		}
	})
}

// TestOneOffWritesGiveUp: a one-off write is tried four times at most, and
// once when a retry cannot help (the message is gone, or too long).
func TestOneOffWritesGiveUp(t *testing.T) {
	for _, tt := range []struct {
		err      error
		attempts int
	}{
		{errors.New("bad gateway"), 4},
		{fmt.Errorf("unknown channel: %w", core.ErrNotFound), 1},
		{fmt.Errorf("msg_too_long: %w", core.ErrMessageTooLong), 1},
	} {
		t.Run(tt.err.Error(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := platformtest.New("fake", plainLimits(4000, time.Second))
				p.Fail(platformtest.OpSend, tt.err, tt.err, tt.err, tt.err, tt.err)
				if _, err := stream.Send(t.Context(), p, conv, core.Post{Text: "lost", Plain: true}); !errors.Is(err, tt.err) {
					t.Errorf("Send = %v, want %v", err, tt.err)
				}
				if n := len(p.CallsOf(platformtest.OpSend)); n != tt.attempts {
					t.Errorf("%d attempts, want %d", n, tt.attempts)
				}
			})
		})
	}
}

// TestAskComesAfterTheReplySoFar: a permission prompt goes out once the
// reply shows what the agent said before asking, through the presenter,
// and its outcome edits it there.
func TestAskComesAfterTheReplySoFar(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := platformtest.New("fake", plainLimits(4000, time.Second))
		s := stream.Start(t.Context(), p, conv, stream.Options{})
		s.Partial(core.RoleOutput, "I will touch a file.")
		prompt := core.Post{Text: "Permission needed", Buttons: []core.Button{{Label: "Allow", Value: "a"}}}
		ref, done, err := s.Ask(t.Context(), prompt, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Amend(t.Context(), ref, core.Post{Text: "Permission needed\n\nAllowed."}); err != nil {
			t.Fatal(err)
		}
		done()
		if err := s.Finish(stream.Final{}); err != nil {
			t.Fatal(err)
		}
		want := []string{"I will touch a file.", "Permission needed\n\nAllowed."}
		if got := p.Texts(conv); !slices.Equal(got, want) {
			t.Errorf("messages %q, want %q (the reply's text first)", got, want)
		}
	})
}
