package slack_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/slack/slacktest"
	"github.com/agentbridge/agentbridge/core"
)

// Messages fired back to back into one thread are answered in delivery
// order (Slack's events once reached the engine from a goroutine each, so
// two quick ones could swap).
func TestEndToEndBackToBackMessagesInOrder(t *testing.T) {
	fake := newFake(t, slacktest.Options{})
	startBridge(t, fake, newDB(t), nil)
	const thread = "500.000001"
	fake.SendEvent("Ev0", mention("U1", "C1", thread, "", "<@UBOT> order-0"))
	for i := 1; i <= 4; i++ {
		fake.SendEvent(fmt.Sprintf("Ev%d", i), mention("U1", "C1", fmt.Sprintf("500.00000%d", i+1), thread, fmt.Sprintf("<@UBOT> order-%d", i)))
	}
	var got []int
	waitFake(t, fake, "five replies", func(s *slacktest.State) bool {
		got = got[:0]
		for _, m := range s.Messages() {
			for i := range 5 {
				if m.ThreadTS == thread && strings.Contains(m.Text, fmt.Sprintf("order-%d", i)) {
					got = append(got, i)
				}
			}
		}
		return len(got) == 5
	})
	if want := []int{0, 1, 2, 3, 4}; !slices.Equal(got, want) {
		t.Errorf("replies in order %v, want %v", got, want)
	}
}

// While draining, new message envelopes are left unacknowledged; Slack
// redelivers them on the next connection, and the next instance answers.
// Presses are still taken.
func TestEndToEndDrainLeavesEnvelopesForTheNextInstance(t *testing.T) {
	fake := newFake(t, slacktest.Options{})
	db := newDB(t)
	b := startBridge(t, fake, db, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b.eng.Shutdown(ctx, time.Second) // nothing runs: the drain is at once
	<-core.DrainSignal(b.eng.Handler(b.a))

	const thread = "600.000001"
	held := fake.SendEvent("EvHeld", mention("U1", "C1", thread, "", "<@UBOT> sent while draining"))
	// Envelopes are read in order: once the press after it is acked, the
	// held one was seen, and left unacknowledged.
	press := fake.Press("U1", "C1", thread, thread, "tok:a")
	waitFake(t, fake, "the press acked while draining", func(s *slacktest.State) bool { return s.Acked(press) })
	if slices.Contains(fake.Acks(), held) {
		t.Fatal("the envelope sent while draining was acknowledged")
	}
	b.stop()
	for _, m := range fake.Messages() {
		if strings.Contains(m.Text, "sent while draining") || strings.Contains(m.Text, "restarting") {
			t.Fatalf("the draining instance answered the held event: %q", m.Text)
		}
	}

	next := startBridge(t, fake, db, nil)
	next.reply(thread, "sent while draining")
	waitFake(t, fake, "the redelivery acked", func(s *slacktest.State) bool { return s.Acked(held) })
}
