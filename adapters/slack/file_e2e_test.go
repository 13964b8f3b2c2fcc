package slack_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/slack/slacktest"
	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/core/engine"
	"github.com/agentbridge/agentbridge/internal/testagent"
)

// TestEndToEndFileBetweenTexts runs the engine, the adapter, the fake and
// the test agent's files script (X-FILE-1: a data: PNG between "before"
// and "middle"): chart.png is uploaded into the thread after the text
// before it and before the text after it.
func TestEndToEndFileBetweenTexts(t *testing.T) {
	t.Parallel()
	fake := newFake(t, slacktest.Options{})
	cwd := t.TempDir() // the script writes notes.txt there
	b := startBridgeWith(t, fake, newDB(t), nil, engine.PresenterSettings{}, func(p *agentproc.Profile) { p.Cwd = cwd })
	const thread = "300.000001"
	fake.SendEvent("Ev1", mention("U1", "C1", thread, "", "<@UBOT> files"))
	b.reply(thread, "after")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := b.eng.Idle(ctx); err != nil {
		t.Fatal(err)
	}
	var msgs []slacktest.Message
	for _, m := range fake.Messages() {
		if m.ThreadTS == thread {
			msgs = append(msgs, m)
		}
	}
	before := slices.IndexFunc(msgs, func(m slacktest.Message) bool { return m.File == nil && strings.Contains(m.Text, "before") })
	chart := slices.IndexFunc(msgs, func(m slacktest.Message) bool { return m.File != nil && m.File.Name == "chart.png" })
	after := slices.IndexFunc(msgs, func(m slacktest.Message) bool { return m.File == nil && strings.Contains(m.Text, "middle") })
	if before < 0 || !(before < chart && chart < after) {
		t.Fatalf("before at %d, chart.png at %d, middle at %d: want the file between the texts\n%+v", before, chart, after, msgs)
	}
	if f := msgs[chart].File; !bytes.Equal(f.Data, testagent.PNG) || msgs[chart].Channel != "C1" {
		t.Errorf("chart.png arrived in %s with %d bytes, want the agent's PNG in C1", msgs[chart].Channel, len(f.Data))
	}
}
