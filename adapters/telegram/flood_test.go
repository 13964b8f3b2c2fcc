package telegram_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/telegram"
	"github.com/agentbridge/agentbridge/adapters/telegram/telegramtest"
	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/stream"
)

// Several replies streamed at once into one chat (a schedule's reply and a
// person's, say) share the chat's flood budget: against a fake with
// Telegram's limits, drafts and edits are paced by the bridge, no call
// earns a 429, and every reply's final message holds all its text.
func TestConcurrentRepliesStayWithinFloodLimits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		chat    int64
		replies int
	}{
		// Unpaced, four drafts a second would break the chat's limit.
		{"private chat with drafts", 1001, 4},
		{"group", -100777, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := telegramtest.NewServer(token)
			t.Cleanup(fake.Close)
			a, err := telegram.New(telegram.Options{Token: core.Secret(token), APIURL: fake.URL, Drafts: true, DraftIdle: time.Minute}, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			conv := core.ConversationKey{Platform: telegram.Name, Channel: strconv.FormatInt(tc.chat, 10)}
			const words = 40
			replies := tc.replies
			var wg sync.WaitGroup
			errs := make([]error, replies)
			for r := range replies {
				wg.Go(func() {
					pr := stream.Start(ctx, a, conv, stream.Options{})
					tick := time.NewTicker(50 * time.Millisecond)
					defer tick.Stop()
					for w := range words {
						pr.Partial(core.RoleOutput, fmt.Sprintf("r%dw%d ", r, w))
						<-tick.C
					}
					pr.Partial(core.RoleOutput, fmt.Sprintf("END%d.", r))
					errs[r] = pr.Finish(stream.Final{})
				})
			}
			wg.Wait()
			for r, err := range errs {
				if err != nil {
					t.Fatalf("reply %d: %v", r, err)
				}
			}
			for _, c := range fake.Calls() {
				if c.Fault != nil && c.Fault.Code == 429 {
					t.Errorf("%s at %v earned a 429: %s", c.Method, c.At.Format("15:04:05.000"), c.Fault.Description)
				}
			}
			if tc.chat > 0 && len(fake.Calls("sendMessageDraft")) == 0 {
				t.Errorf("no drafts; want the replies streamed as drafts")
			}
			msgs := fake.Messages(tc.chat)
			for r := range replies {
				var all []string
				for w := range words {
					all = append(all, fmt.Sprintf("r%dw%d", r, w))
				}
				want := strings.Join(all, " ") + fmt.Sprintf(" END%d.", r)
				found := false
				for _, m := range msgs {
					found = found || strings.Contains(m.Text, want)
				}
				if !found {
					t.Errorf("no message holds reply %d's whole text %q; messages: %+v", r, want, msgs)
				}
			}
		})
	}
}

// A draft over the chat's budget is refused by the adapter without calling
// Telegram (a turn, for the presenter to come back at), a reply's final
// text still goes at once, and the refused first draft posts when its turn
// comes.
func TestDraftOverBudgetWaitsItsTurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *telegram.Options) { o.Drafts, o.DraftIdle = true, time.Minute })
	ctx := t.Context()
	dm := core.ConversationKey{Platform: "telegram", Channel: "1001"}
	drafts := func() int { return len(e.fake.Calls("sendMessageDraft")) }
	a, err := e.ad.Send(ctx, dm, core.Post{Text: "a", Priority: core.PriorityInterim})
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.ad.Send(ctx, dm, core.Post{Text: "b", Priority: core.PriorityInterim})
	if err != nil {
		t.Fatal(err)
	}
	turn := func(what string, err error) time.Duration {
		t.Helper()
		var rl *core.RateLimitError
		if !errors.As(err, &rl) || !rl.Turn || rl.RetryAfter <= 0 {
			t.Fatalf("%s over the budget = %v; want the adapter's turn refusal", what, err)
		}
		return rl.RetryAfter
	}
	_, err = e.ad.Send(ctx, dm, core.Post{Text: "c", Priority: core.PriorityInterim})
	wait := turn("a third first draft", err)
	turn("a draft update", e.ad.Edit(ctx, a, core.Post{Text: "a2", Priority: core.PriorityInterim}))
	if n := drafts(); n != 2 {
		t.Errorf("%d sendMessageDraft calls; want the refused ones not sent", n)
	}
	// The final text takes the call interim ones left free.
	if err := e.ad.Edit(ctx, a, core.Post{Text: "a done"}); err != nil {
		t.Fatalf("final text: %v", err)
	}
	if msgs := e.fake.Messages(1001); len(msgs) != 1 || msgs[0].Text != "a done" {
		t.Errorf("messages %+v; want the final text as a message at once", msgs)
	}
	// The presenter sends the refused first draft again when told.
	var c core.MessageRef
	for attempt := 0; ; attempt++ {
		time.Sleep(wait) // the turn the adapter named: what is under test, not synchronization
		c, err = e.ad.Send(ctx, dm, core.Post{Text: "c", Priority: core.PriorityInterim})
		if err == nil {
			break
		}
		if attempt == 10 {
			t.Fatalf("the refused draft never got its turn: %v", err)
		}
		wait = turn("the draft sent again", err)
	}
	if n := drafts(); n != 3 || e.fake.Calls("sendMessageDraft")[2].Form.Get("text") != "c" {
		t.Errorf("%d sendMessageDraft calls; want the refused draft sent once its turn came", n)
	}
	finishDrafts(t, e, b, c)
	for _, c := range e.fake.Calls() {
		if c.Fault != nil && c.Fault.Code == 429 {
			t.Errorf("%s earned a 429", c.Method)
		}
	}
}

// A draft turning into a message that waits out a 429 in one private chat
// holds up no other chat's drafts: each chat's drafts are serialized on
// their own.
func TestDraftWaitInOneChatHoldsUpNoOther(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *telegram.Options) { o.Drafts, o.DraftIdle = true, time.Minute })
	ctx := t.Context()
	a, err := e.ad.Send(ctx, core.ConversationKey{Platform: "telegram", Channel: "1001"}, core.Post{Text: "a", Priority: core.PriorityInterim})
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.ad.Send(ctx, core.ConversationKey{Platform: "telegram", Channel: "1002"}, core.Post{Text: "b", Priority: core.PriorityInterim})
	if err != nil {
		t.Fatal(err)
	}
	e.fake.Fail("sendMessage", telegramtest.RateLimit(5))
	finalA := make(chan error, 1)
	go func() { finalA <- e.ad.Edit(ctx, a, core.Post{Text: "a done"}) }()
	e.waitFor("chat 1001's final text refused with a 429", func() bool {
		calls := e.fake.Calls("sendMessage")
		return len(calls) > 0 && calls[0].Fault != nil
	})
	if err := e.ad.Edit(ctx, b, core.Post{Text: "b2", Priority: core.PriorityInterim}); err != nil {
		t.Fatalf("chat 1002's draft update: %v", err)
	}
	if err := <-finalA; err != nil {
		t.Fatalf("chat 1001's final text: %v", err)
	}
	var draftAt, finalAt time.Time
	for _, c := range e.fake.Calls() {
		switch {
		case c.Method == "sendMessageDraft" && c.Form.Get("text") == "b2":
			draftAt = c.At
		case c.Method == "sendMessage" && c.Fault == nil:
			finalAt = c.At
		}
	}
	if draftAt.IsZero() || finalAt.IsZero() || !draftAt.Before(finalAt) {
		t.Errorf("chat 1002's draft update at %v, chat 1001's final text at %v; want the draft not to wait for the other chat's retry_after",
			draftAt.Format("15:04:05.000"), finalAt.Format("15:04:05.000"))
	}
	if msgs := e.fake.Messages(1001); len(msgs) != 1 || msgs[0].Text != "a done" {
		t.Errorf("chat 1001's messages %+v; want its final text once", msgs)
	}
	finishDrafts(t, e, b)
}

// finishDrafts turns the drafts a test left open into messages, as the
// presenter would, so their quiet timers do not fire after the test.
func finishDrafts(t *testing.T, e *env, refs ...core.MessageRef) {
	t.Helper()
	for _, ref := range refs {
		if err := e.ad.FinalizeMessage(t.Context(), ref); err != nil {
			t.Errorf("finalize %s: %v", ref.ID, err)
		}
	}
}
