package telegram_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/telegram"
	"github.com/agentbridge/agentbridge/adapters/telegram/telegramtest"
	"github.com/agentbridge/agentbridge/internal/testagent"
)

// TestE2EFileBetweenTexts runs the engine, the adapter, the fake and the
// test agent's files script (X-FILE-1: a data: PNG between "before" and
// "middle") in a private chat streaming with drafts: the text before the
// image becomes a message first, the image goes as a photo, the text after
// it follows.
func TestE2EFileBetweenTexts(t *testing.T) {
	t.Parallel()
	fake := telegramtest.NewServer(token)
	t.Cleanup(fake.Close)
	s := startStack(t, fake, "", nil, func(o *telegram.Options) { o.Drafts = true })
	fake.Push(telegramtest.PrivateMessage(1, alice, "files"))
	waitMsg(t, fake, 1001, contains("END"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := s.eng.Idle(ctx); err != nil {
		t.Fatal(err)
	}
	msgs := fake.Messages(1001)
	before := slices.IndexFunc(msgs, contains("before"))
	chart := slices.IndexFunc(msgs, func(m telegramtest.Message) bool { return m.File != nil && m.File.Name == "chart.png" })
	after := slices.IndexFunc(msgs, contains("middle"))
	if before < 0 || !(before < chart && chart < after) {
		t.Fatalf("before at %d, chart.png at %d, middle at %d: want the file between the texts\n%+v", before, chart, after, msgs)
	}
	if f := msgs[chart].File; f.Method != "sendPhoto" || !bytes.Equal(f.Data, testagent.PNG) {
		t.Errorf("chart.png went with %s, %d bytes; want the agent's PNG as a photo", f.Method, len(f.Data))
	}
	if strings.Contains(msgs[before].Text, "middle") {
		t.Errorf("the text after the file is in the message before it: %q", msgs[before].Text)
	}
}
