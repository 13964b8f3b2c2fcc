package engine_test

import (
	"testing"

	"github.com/agentbridge/agentbridge/core"
)

// Message.Accepted is called for a message core accepts (its author is
// allowed; a command or a turn), before anything answers it, and never for
// a stranger's message (even /whoami, which is answered) or a redelivery:
// adapters create what only an accepted message may (issue 27 item 7).
func TestAcceptedOnlyForAllowedMessages(t *testing.T) {
	h := newHarness(t, "", nil)
	mallory := core.User{ID: "mallory"}
	type delivery struct {
		id       string
		from     core.User
		text     string
		accepted bool
	}
	deliveries := []delivery{
		{"acc-1", mallory, "let me in", false},
		{"acc-2", mallory, "/whoami", false},
		{"acc-3", alice, "/help", true},
		{"acc-4", alice, "hello", true},
		{"acc-4", alice, "hello", false}, // a redelivery
	}
	for _, d := range deliveries {
		calls, handled := 0, make(chan struct{})
		posts, postsAtAccept := len(h.plat.Messages(conv)), 0
		h.plat.Deliver(t.Context(), core.Message{Conv: conv, ID: d.id, From: d.from, Text: d.text,
			Reply:    h.plat.PrivateReply(conv, d.from),
			Accepted: func() { calls++; postsAtAccept = len(h.plat.Messages(conv)) },
			Handled:  func() { close(handled) },
		})
		<-handled
		want := 0
		if d.accepted {
			want = 1
		}
		if calls != want {
			t.Errorf("%s %q from %s: Accepted called %d times, want %d", d.id, d.text, d.from.ID, calls, want)
		}
		if calls > 0 && postsAtAccept != posts {
			t.Errorf("%q: Accepted called after an answer was posted", d.text)
		}
	}
	h.waitText("hello")
}
