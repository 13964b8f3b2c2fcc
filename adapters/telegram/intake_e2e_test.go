package telegram_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/telegram"
	"github.com/agentbridge/agentbridge/adapters/telegram/telegramtest"
	"github.com/agentbridge/agentbridge/core"
)

// countIn counts the messages in chat that contain s.
func countIn(fake *telegramtest.Server, chat int64, s string) int {
	n := 0
	for _, m := range fake.Messages(chat) {
		if strings.Contains(m.Text, s) {
			n++
		}
	}
	return n
}

// Messages fired back to back into one chat are handled in delivery order:
// each is queued behind the previous one and answered in that order.
func TestE2EBackToBackMessagesInOrder(t *testing.T) {
	t.Parallel()
	fake := telegramtest.NewServer(token)
	t.Cleanup(fake.Close)
	startStack(t, fake, "", nil)
	for i := 1; i <= 5; i++ {
		fake.Push(telegramtest.PrivateMessage(i, alice, fmt.Sprintf("order-%d", i)))
	}
	waitMsg(t, fake, 1001, contains("order-5 END"))
	var got []string
	for _, m := range fake.Messages(1001) {
		for i := 1; i <= 5; i++ {
			if strings.Contains(m.Text, fmt.Sprintf("order-%d END", i)) {
				got = append(got, fmt.Sprint(i))
			}
		}
	}
	if want := []string{"1", "2", "3", "4", "5"}; !slices.Equal(got, want) {
		t.Errorf("replies in order %v, want %v", got, want)
	}
}

// A flood of 200 messages into one DM does not delay another chat's reply:
// it arrives while the flood's first turn still runs and its queue is full,
// and the flood gets its queue and one busy notice.
func TestE2EFloodInOneChatDoesNotDelayAnother(t *testing.T) {
	t.Parallel()
	fake := telegramtest.NewServer(token)
	t.Cleanup(fake.Close)
	s := startStack(t, fake, "", nil)
	fake.Push(telegramtest.PrivateMessage(1, alice, "hang"))
	waitMsg(t, fake, 1001, contains("working"))
	for i := range 200 {
		fake.Push(telegramtest.PrivateMessage(100+i, alice, fmt.Sprintf("flood %d", i)))
	}
	pushed := time.Now()
	fake.Push(telegramtest.GroupMessage(group, 7, 0, bob, "@"+telegramtest.BotUsername+" other chat"))
	waitMsg(t, fake, group, contains("other chat END"))
	t.Logf("other chat answered %v after a 200-message flood into a DM", time.Since(pushed).Round(time.Millisecond))
	// Causality, not a clock: the flood's queue had not drained (its
	// first turn cannot end before /stop).
	if n := countIn(fake, 1001, "END"); n != 0 {
		t.Errorf("%d flood turns finished before the other chat's reply; want 0", n)
	}
	// /status comes after the whole flood on the DM's intake.
	fake.Push(telegramtest.PrivateMessage(400, alice, "/status"))
	waitMsg(t, fake, 1001, contains("Running for"))
	if n := countIn(fake, 1001, "🚦 Busy"); n != 1 {
		t.Errorf("%d busy notices for one flood, want 1", n)
	}
	if n := countIn(fake, 1001, "Queued — position"); n != 5 {
		t.Errorf("%d queued notices, want 5 (the default queue_depth)", n)
	}
	// Shutdown under the flood: the turn that never ends is stopped after
	// the grace, and the queued ones are told, within the stop grace. The
	// stop grace is long: the six messages share the chat's pace of about
	// one a second, and Shutdown returns as soon as they are out.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	s.eng.Shutdown(ctx, 30*time.Second)
	t.Logf("Shutdown with a 2 s grace and a 30 s stop grace took %v under the flood", time.Since(start).Round(time.Millisecond))
	waitMsg(t, fake, 1001, contains("Stopped: the bridge is shutting down"))
}

// 100 messages from a user who is not allowed get one refusal and do not
// delay an allowed user.
func TestE2EStrangerFloodGetsOneRefusal(t *testing.T) {
	t.Parallel()
	fake := telegramtest.NewServer(token)
	t.Cleanup(fake.Close)
	startStack(t, fake, "", nil)
	for i := range 100 {
		fake.Push(telegramtest.PrivateMessage(100+i, bob, fmt.Sprintf("let me in %d", i)))
	}
	pushed := time.Now()
	fake.Push(telegramtest.PrivateMessage(1, alice, "allowed"))
	waitMsg(t, fake, 1001, contains("allowed END"))
	t.Logf("allowed user answered %v after 100 messages from a stranger", time.Since(pushed).Round(time.Millisecond))
	// /whoami comes after the stranger's flood on their intake.
	fake.Push(telegramtest.PrivateMessage(300, bob, "/whoami"))
	waitMsg(t, fake, 1002, contains("You are telegram user 1002"))
	if n := countIn(fake, 1002, "not allowed"); n != 1 {
		t.Errorf("%d refusals to 100 messages, want 1", n)
	}
	if n := len(fake.Messages(1002)); n != 2 {
		t.Errorf("%d messages to the stranger, want the refusal and the whoami answer", n)
	}
}

// A notice that waits out a 429 in one chat does not delay another chat's
// reply.
func TestE2ERateLimitedNoticeDoesNotDelayAnotherChat(t *testing.T) {
	t.Parallel()
	fake := telegramtest.NewServer(token)
	t.Cleanup(fake.Close)
	startStack(t, fake, "", nil)
	fake.Push(telegramtest.PrivateMessage(1, alice, "hang"))
	waitMsg(t, fake, 1001, contains("working"))
	fake.Fail("sendMessage", telegramtest.RateLimit(20))
	fake.Push(telegramtest.PrivateMessage(2, alice, "queued behind"))
	// Wait until the queued notice was refused with the 429.
	timeout := time.After(60 * time.Second)
	for limited := false; !limited; {
		ch := fake.Changed()
		for _, c := range fake.Calls("sendMessage") {
			limited = limited || (c.Fault != nil && c.Fault.Code == 429)
		}
		if !limited {
			select {
			case <-ch:
			case <-timeout:
				t.Fatal("the notice was never rate limited")
			}
		}
	}
	fake.Push(telegramtest.GroupMessage(group, 7, 0, bob, "@"+telegramtest.BotUsername+" other chat"))
	waitMsg(t, fake, group, contains("other chat END"))
	if n := countIn(fake, 1001, "Queued"); n != 0 {
		t.Errorf("the rate-limited notice was sent before the other chat's reply; want it still waiting")
	}
}

// While draining, the adapter fetches no more updates: what is sent
// meanwhile stays with Telegram, and the next instance answers it.
func TestE2EDrainLeavesUpdatesForTheNextInstance(t *testing.T) {
	t.Parallel()
	fake := telegramtest.NewServer(token)
	t.Cleanup(fake.Close)
	db := filepath.Join(t.TempDir(), "bridge.db")
	s := startStack(t, fake, db, nil)
	fake.Push(telegramtest.PrivateMessage(1, alice, "before"))
	waitMsg(t, fake, 1001, contains("before END"))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	shut := make(chan struct{})
	go func() {
		defer close(shut)
		s.eng.Shutdown(ctx, time.Second)
	}()
	<-core.DrainSignal(s.eng.Handler(s.ad))
	id := fake.Push(telegramtest.PrivateMessage(2, alice, "during the drain"))
	<-shut
	s.stop()
	if !slices.Contains(fake.Pending(), id) {
		t.Fatalf("update %d sent while draining was confirmed; pending %v", id, fake.Pending())
	}
	if n := countIn(fake, 1001, "during the drain") + countIn(fake, 1001, "restarting"); n != 0 {
		t.Fatalf("the draining instance answered the held update: %+v", fake.Messages(1001))
	}
	startStack(t, fake, db, nil)
	waitMsg(t, fake, 1001, contains("during the drain END"))
}

// draining is a recorder whose handler has begun to drain.
type draining struct{ *recorder }

func (draining) Draining() <-chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}

// In webhook mode a draining bridge answers deliveries 503: Telegram keeps
// them and retries, so the next instance gets them.
func TestWebhookWhileDraining(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const secret = "hook-SECRET_2"
	e := newEnv(t, func(o *telegram.Options) {
		o.Mode = telegram.ModeWebhook
		o.WebhookListener = ln
		o.WebhookURL = "https://bridge.example/telegram"
		o.WebhookSecret = core.Secret(secret)
	})
	rec := draining{newRecorder()}
	e.run(rec)
	e.waitFor("setWebhook", func() bool { return len(e.fake.Calls("setWebhook")) == 1 })
	update := telegramtest.PrivateMessage(1, alice, "while draining")
	update["update_id"] = 6000
	body, _ := json.Marshal(update)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+ln.Addr().String()+"/", bytes.NewReader(body))
	req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("delivery while draining: HTTP %d, want 503", res.StatusCode)
	}
	select {
	case m := <-rec.msgs:
		t.Errorf("handed over %q while draining", m.Text)
	default:
	}
}
