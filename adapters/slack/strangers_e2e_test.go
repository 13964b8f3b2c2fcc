package slack_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentbridge/agentbridge/adapters/slack"
	"github.com/agentbridge/agentbridge/adapters/slack/slacktest"
	"github.com/agentbridge/agentbridge/core"
)

// cursorWrites is the store as the adapter sees it, counting the thread
// records written.
type cursorWrites struct {
	core.Cursors
	mu      sync.Mutex
	threads []string
}

func (c *cursorWrites) SetCursor(ctx context.Context, name, value string) error {
	if strings.Contains(name, "/thread/") {
		c.mu.Lock()
		c.threads = append(c.threads, name)
		c.mu.Unlock()
	}
	return c.Cursors.SetCursor(ctx, name, value)
}

func (c *cursorWrites) written() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.threads...)
}

// A stranger's 400 mentions record no thread: the bot takes part in a
// thread only once the engine accepts a message in it (issue 27 item 7;
// before, each mention wrote the thread to the store before the access
// check). An allowed user's mention does, and their reply in the thread
// without a mention is answered.
func TestEndToEndStrangersMentionsRecordNoThread(t *testing.T) {
	fake := newFake(t, slacktest.Options{})
	writes := &cursorWrites{}
	b := startBridge(t, fake, newDB(t), func(o *slack.Options) {
		writes.Cursors = o.Store
		o.Store = writes
	})
	for i := range 400 {
		fake.SendEvent(fmt.Sprintf("EvX%d", i), mention("UX", "C1", fmt.Sprintf("700.%06d", i), "", "<@UBOT> open a thread"))
	}
	// The adapter takes events in order: once this is answered, every
	// mention before it has been through it.
	const thread = "701.000001"
	fake.SendEvent("EvA1", mention("U1", "C1", thread, "", "<@UBOT> first"))
	b.reply(thread, "first")
	fake.SendEvent("EvA2", message("U1", "C1", "channel", "701.000002", thread, "second, no mention"))
	b.reply(thread, "second, no mention")
	if got := writes.written(); len(got) != 1 || !strings.HasSuffix(got[0], "/C1/"+thread) {
		t.Errorf("thread records written: %d (%q…); want only the allowed user's thread", len(got), got[:min(len(got), 3)])
	}
}
