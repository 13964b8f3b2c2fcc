package console

import (
	"strings"
	"sync"
	"testing"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/platformtest"
)

// countingWriter counts the writes to the terminal.
type countingWriter struct {
	mu     sync.Mutex
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes++
	return len(p), nil
}

// TestPlatformContract runs core's adapter contract against the terminal,
// which has no rate budget and answers no 429.
func TestPlatformContract(t *testing.T) {
	out := &countingWriter{}
	a := New(strings.NewReader(""), out, Options{})
	conv := core.ConversationKey{Platform: Name, Channel: "terminal"}
	platformtest.TestPlatform(t, a, platformtest.Hooks{
		Conv: conv,
		Shown: func(ref core.MessageRef) (string, bool) {
			a.mu.Lock()
			defer a.mu.Unlock()
			p := a.posts[ref.ID]
			if p == nil {
				return "", false
			}
			return p.text, true
		},
		Requests: func() int {
			out.mu.Lock()
			defer out.mu.Unlock()
			return out.writes
		},
		Missing:    core.MessageRef{Conv: conv, ID: "never-sent"},
		Unbudgeted: true,
	})
}
