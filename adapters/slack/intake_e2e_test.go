package slack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/slack"
	"github.com/agentbridge/agentbridge/adapters/slack/slacktest"
	"github.com/agentbridge/agentbridge/core"
)

// Messages fired back to back into one thread are answered in delivery
// order (Slack's events once reached the engine from a goroutine each, so
// two quick ones could swap).
func TestEndToEndBackToBackMessagesInOrder(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// draining is a recorder whose handler has begun to drain.
type draining struct{ *recorder }

func (draining) Draining() <-chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}

// Over the Events API a draining bridge answers message events 503, so
// Slack retries them later, and still takes button presses.
func TestEventsAPIWhileDraining(t *testing.T) {
	t.Parallel()
	fake := newFake(t, slacktest.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := draining{newRecorder()}
	start(t, fake, func(o *slack.Options) {
		o.Mode, o.SigningSecret, o.EventsListener = slack.ModeEvents, signingSecret, ln
	}, rec)
	endpoint := "http://" + ln.Addr().String() + "/slack/events"
	post := func(body []byte, contentType string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, endpoint, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = slacktest.SignedHeader(signingSecret, time.Now(), body)
		req.Header.Set("Content-Type", contentType)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	body := fake.EventCallback("EvDrain", mention("U1", "C1", "700.000001", "", "<@UBOT> while draining"))
	if code := post(body, "application/json"); code != http.StatusServiceUnavailable {
		t.Errorf("a message event while draining: HTTP %d, want 503 for Slack to retry", code)
	}
	payload, _ := json.Marshal(fake.BlockActions("U1", "C1", "700.000001", "700.000002", "tok:a"))
	form := []byte("payload=" + url.QueryEscape(string(payload)))
	if code := post(form, "application/x-www-form-urlencoded"); code != http.StatusOK {
		t.Errorf("a press while draining: HTTP %d, want 200", code)
	}
	rec.wait(t, "the press", func(ms []core.Message, as []core.Action) bool { return len(as) == 1 })
	if ms := rec.messages(); len(ms) != 0 {
		t.Errorf("messages handed over while draining: %+v", ms)
	}
}
