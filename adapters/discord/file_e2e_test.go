package discord

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/discord/discordtest"
	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/internal/testagent"
)

// TestEngineFileBetweenTexts runs the engine, the adapter, the fake and
// the test agent's files script (X-FILE-1: a data: PNG between "before"
// and "middle"): the image is a message with chart.png attached, after
// the text before it and before the text after it, a reply to the
// question like the answer's first message.
func TestEngineFileBetweenTexts(t *testing.T) {
	t.Parallel()
	fake := discordtest.NewServer(testToken)
	t.Cleanup(fake.Close) // after the engine's cleanup: its turns finish against a live fake
	fake.AddChannel(discordtest.Channel{ID: "C1", Type: 0, GuildID: "G1"})
	cwd := t.TempDir() // the script writes notes.txt there
	eng := runEngine(t, fake, nil, func(p *agentproc.Profile) { p.Cwd = cwd })
	fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M1", "C1", "G1", alice, "files", true))
	waitFor(t, fake, "the reply's end", func() bool {
		return strings.Contains(strings.Join(fake.Contents("C1"), "\n"), "after")
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := eng.Idle(ctx); err != nil {
		t.Fatal(err)
	}
	msgs := fake.Messages("C1")
	before := slices.IndexFunc(msgs, func(m discordtest.Message) bool { return strings.Contains(m.Content, "before") })
	chart := slices.IndexFunc(msgs, func(m discordtest.Message) bool {
		return len(m.Files) == 1 && m.Files[0].Name == "chart.png"
	})
	after := slices.IndexFunc(msgs, func(m discordtest.Message) bool { return strings.Contains(m.Content, "middle") })
	if before < 0 || !(before < chart && chart < after) {
		t.Fatalf("before at %d, chart.png at %d, middle at %d: want the file between the texts\n%+v", before, chart, after, msgs)
	}
	if f := msgs[chart].Files[0]; !bytes.Equal(f.Data, testagent.PNG) || f.ContentType != "image/png" {
		t.Errorf("chart.png arrived as %s with %d bytes, want the agent's PNG", f.ContentType, len(f.Data))
	}
	if msgs[chart].ReplyTo != "M1" {
		t.Errorf("chart.png replies to %q, want the question M1", msgs[chart].ReplyTo)
	}
}
