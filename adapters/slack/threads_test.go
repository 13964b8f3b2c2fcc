package slack_test

import (
	"fmt"
	"testing"

	"github.com/agentbridge/agentbridge/adapters/slack/slacktest"
	"github.com/agentbridge/agentbridge/core"
)

// A mention's thread becomes the bot's only once core accepts the mention
// (Message.Accepted). Until then the mention's author's quick follow-up in
// the thread still reaches core, while another member's reply without a
// mention does not; once accepted, anyone's reply in the thread does.
func TestThreadJoinedOnAcceptance(t *testing.T) {
	t.Parallel()
	fake := newFake(t, slacktest.Options{})
	rec := newRecorder()
	rec.held = []func(){}
	start(t, fake, nil, rec)
	const thread = "800.000001"
	texts := func(ms []core.Message) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.Text)
		}
		return out
	}
	marker := 0
	// sendMarked sends ev, then a DM marker, and waits for the marker: the
	// adapter takes events in order, so ev has been through it.
	sendMarked := func(id string, ev map[string]any) {
		t.Helper()
		marker++
		fake.SendEvent(id, ev)
		fake.SendEvent(id+"-marker", message("U1", "D1", "im", fmt.Sprintf("900.%06d", marker), "", "marker"))
		n := marker
		rec.wait(t, "the marker", func(ms []core.Message, _ []core.Action) bool {
			seen := 0
			for _, m := range ms {
				if m.Text == "marker" {
					seen++
				}
			}
			return seen == n
		})
	}
	sendMarked("EvT1", mention("U1", "C1", thread, "", "<@UBOT> start"))
	sendMarked("EvT2", message("U1", "C1", "channel", "800.000002", thread, "quick follow-up"))
	sendMarked("EvT3", message("U2", "C1", "channel", "800.000003", thread, "someone else, too early"))
	rec.mu.Lock()
	for _, accept := range rec.held {
		accept()
	}
	rec.held = nil
	rec.mu.Unlock()
	sendMarked("EvT4", message("U2", "C1", "channel", "800.000004", thread, "someone else, after"))
	got := texts(rec.messages())
	want := []string{"start", "marker", "quick follow-up", "marker", "marker", "someone else, after", "marker"}
	if len(got) != len(want) {
		t.Fatalf("delivered %q; want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("delivered %q; want %q", got, want)
		}
	}
}
