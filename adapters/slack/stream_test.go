package slack_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge/adapters/slack"
	"github.com/agentbridge/agentbridge/adapters/slack/slacktest"
	"github.com/agentbridge/agentbridge/core"
)

const wj = "\u2060" // the word joiner that defuses mentions

func native(o *slack.Options) { o.NativeStreaming = true }

// streamIn runs an adapter with native streaming, lets U1 mention it in
// C1 (so the adapter knows whom the thread's reply is for) and opens a
// stream for the reply.
func streamIn(t *testing.T, fake *slacktest.Server, tweak func(*slack.Options)) (*running, core.ConversationKey, core.Stream) {
	t.Helper()
	r := start(t, fake, func(o *slack.Options) {
		native(o)
		o.AppendsPerMinute, o.AppendBurst = 6000, 100 // the budget has its own test
		if tweak != nil {
			tweak(o)
		}
	}, nil)
	fake.SendEvent("Ev1", mention("U1", "C1", "20.000001", "", "<@UBOT> hi"))
	r.rec.wait(t, "mention", func(msgs []core.Message, _ []core.Action) bool { return len(msgs) == 1 })
	conv := r.rec.messages()[0].Conv
	st, err := r.a.StartStream(t.Context(), conv)
	if err != nil || st == nil {
		t.Fatalf("StartStream = %v, %v; want a stream", st, err)
	}
	return r, conv, st
}

func streamed(t *testing.T, fake *slacktest.Server, ts string) slacktest.Message {
	t.Helper()
	for _, m := range fake.Messages() {
		if m.TS == ts {
			return m
		}
	}
	t.Fatalf("no message %s", ts)
	return slacktest.Message{}
}

// The three calls: startStream in the thread addressed to the requester,
// appendStream with the Markdown as written, stopStream with the end;
// <…> mention syntax is defused even when a delta boundary splits it, and
// bare @channel-style words stay as written (Slack pings only through <!…>).
func TestNativeStreamCalls(t *testing.T) {
	t.Parallel()
	fake := newFake(t, slacktest.Options{})
	_, conv, st := streamIn(t, fake, nil)
	ctx := t.Context()
	if st.Ref().Conv != conv || st.Ref().ID == "" {
		t.Fatalf("Ref = %+v", st.Ref())
	}
	for _, delta := range []string{"Hello **world**", "\n\nping @chan", "nel and <", "!here> and @Every", "one, mail me@host"} {
		if err := st.Append(ctx, delta); err != nil {
			t.Fatalf("Append(%q): %v", delta, err)
		}
	}
	if err := st.Stop(ctx, ".\n\n_1 in / 2 out tokens_"); err != nil {
		t.Fatal(err)
	}
	if err := st.Stop(ctx, "again"); err != nil {
		t.Errorf("a second Stop: %v; want nil (already stopped)", err)
	}
	if err := st.Append(ctx, "late"); err == nil {
		t.Error("Append after Stop succeeded")
	}
	m := streamed(t, fake, st.Ref().ID)
	want := "Hello **world**\n\nping @channel and <" + wj + "!here> and @Everyone, mail me@host.\n\n_1 in / 2 out tokens_"
	if m.Text != want {
		t.Errorf("streamed text\n got %q\nwant %q", m.Text, want)
	}
	if !m.Streamed || m.Streaming || m.ThreadTS != conv.Thread || m.Channel != "C1" {
		t.Errorf("message %+v; want a stopped stream in the thread", m)
	}
	start := fake.Calls("chat.startStream")
	if len(start) != 1 {
		t.Fatalf("%d startStream calls", len(start))
	}
	got := map[string]string{}
	for _, k := range []string{"channel", "thread_ts", "recipient_user_id", "recipient_team_id"} {
		got[k] = start[0].Form.Get(k)
	}
	if diff := cmp.Diff(map[string]string{"channel": "C1", "thread_ts": "20.000001", "recipient_user_id": "U1", "recipient_team_id": "T1"}, got); diff != "" {
		t.Errorf("startStream (-want +got):\n%s", diff)
	}
	if n := len(fake.Calls("chat.stopStream")); n != 1 {
		t.Errorf("%d stopStream calls; want 1", n)
	}
	if n := len(fake.Calls("chat.postMessage", "chat.update")); n != 0 {
		t.Errorf("%d post/update calls; want none", n)
	}
}

// Where native streaming does not apply StartStream returns nil without
// calling Slack, and the presenter posts and edits.
func TestNativeStreamNotApplicable(t *testing.T) {
	t.Parallel()
	fake := newFake(t, slacktest.Options{})
	ctx := t.Context()
	off := start(t, fake, nil, nil)
	on := start(t, fake, native, nil)
	thread := core.ConversationKey{Platform: "slack", Workspace: "T1", Channel: "C1", Thread: "1.000001"}
	tests := []struct {
		name string
		a    *slack.Adapter
		conv core.ConversationKey
	}{
		{"option off", off.a, thread},
		{"not a thread", on.a, core.ConversationKey{Platform: "slack", Workspace: "T1", Channel: "D1"}},
		{"nobody asked in this channel thread", on.a, thread},
	}
	for _, tc := range tests {
		st, err := tc.a.StartStream(ctx, tc.conv)
		if st != nil || err != nil {
			t.Errorf("%s: StartStream = %v, %v; want nil, nil", tc.name, st, err)
		}
	}
	if n := len(fake.Calls("chat.startStream")); n != 0 {
		t.Errorf("%d startStream calls; want none", n)
	}
	// A thread in a DM needs no recipient.
	st, err := on.a.StartStream(ctx, core.ConversationKey{Platform: "slack", Workspace: "T1", Channel: "D1", Thread: "2.000001"})
	if err != nil || st == nil {
		t.Fatalf("DM thread: StartStream = %v, %v", st, err)
	}
	if err := st.Stop(ctx, "done"); err != nil {
		t.Fatal(err)
	}
	// A workspace without the feature: nil from then on, without asking again.
	fake.Fail("chat.startStream", slacktest.Failure{Error: "unknown_method"})
	for range 2 {
		st, err := on.a.StartStream(ctx, core.ConversationKey{Platform: "slack", Workspace: "T1", Channel: "D1", Thread: "3.000001"})
		if st != nil || err != nil {
			t.Errorf("unavailable: StartStream = %v, %v; want nil, nil", st, err)
		}
	}
	if n := len(fake.Calls("chat.startStream")); n != 2 {
		t.Errorf("%d startStream calls; want 2 (one stream, one refusal)", n)
	}
}

// Text over Slack's 12,000 characters per call goes in several appends,
// each under the limit, and arrives whole.
func TestNativeStreamSplitsLongText(t *testing.T) {
	t.Parallel()
	fake := newFake(t, slacktest.Options{})
	_, _, st := streamIn(t, fake, nil)
	ctx := t.Context()
	var b strings.Builder
	for i := range 1500 {
		b.WriteString("line ")
		b.WriteString(strings.Repeat("é", i%13))
		b.WriteString(" <!channel>\n")
	}
	long := b.String()
	if err := st.Append(ctx, long); err != nil {
		t.Fatal(err)
	}
	if err := st.Stop(ctx, ""); err != nil {
		t.Fatal(err)
	}
	calls := fake.Calls("chat.appendStream")
	if len(calls) < 2 {
		t.Errorf("%d appendStream calls for %d characters; want it split", len(calls), utf8.RuneCountInString(long))
	}
	for _, c := range calls {
		if n := utf8.RuneCountInString(c.Form.Get("markdown_text")); n > 12000 || c.Error != "" {
			t.Errorf("appendStream of %d characters answered %q", n, c.Error)
		}
	}
	m := streamed(t, fake, st.Ref().ID)
	if got := strings.ReplaceAll(m.Text, wj, ""); got != long {
		t.Errorf("streamed text differs from the input (%d vs %d bytes)", len(got), len(long))
	}
	if strings.Contains(m.Text, "<!channel>") {
		t.Error("a <!channel> reached Slack intact")
	}
}

func TestNativeStreamErrors(t *testing.T) {
	t.Parallel()
	fake := newFake(t, slacktest.Options{})
	_, _, st := streamIn(t, fake, nil)
	ctx := t.Context()

	// A 429 adds nothing, says how long to wait, and holds the workspace's
	// streams without calling Slack meanwhile.
	fake.Fail("chat.appendStream", slacktest.Failure{Status: 429, RetryAfter: 3, Error: "ratelimited"})
	err := st.Append(ctx, "one")
	if ra, ok := core.RetryAfter(err); !ok || ra != 3*time.Second {
		t.Fatalf("Append under 429 = %v; want a RateLimitError of 3s", err)
	}
	n := len(fake.Calls("chat.appendStream"))
	err = st.Append(ctx, "one two")
	if ra, ok := core.RetryAfter(err); !ok || ra <= 0 || ra > 3*time.Second {
		t.Errorf("Append during the hold = %v; want a RateLimitError", err)
	}
	if len(fake.Calls("chat.appendStream")) != n {
		t.Error("Append during the hold called Slack")
	}
	if m := streamed(t, fake, st.Ref().ID); m.Text != "" {
		t.Errorf("text after refused appends = %q; want none", m.Text)
	}

	// Slack saying the stream is over is core.ErrNotFound.
	fake2 := newFake(t, slacktest.Options{})
	_, _, st2 := streamIn(t, fake2, nil)
	fake2.Fail("chat.appendStream", slacktest.Failure{Error: "message_not_in_streaming_state"})
	if err := st2.Append(ctx, "x"); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("Append to an ended stream = %v; want ErrNotFound", err)
	}
	// A call that fails midway through a long text resumes where it broke
	// off: nothing is sent twice.
	long := strings.Repeat("0123456789abcdef\n", 1000) // 17,000 characters: three calls
	fake2.Fail("chat.appendStream", slacktest.Failure{Skip: 1, Status: 500, Error: "internal_error"})
	if err := st2.Append(ctx, long); err == nil {
		t.Fatal("Append with a failing second call succeeded")
	}
	if err := st2.Append(ctx, long+"tail"); err != nil {
		t.Fatal(err)
	}
	if err := st2.Stop(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if m := streamed(t, fake2, st2.Ref().ID); m.Text != long+"tail" {
		t.Errorf("text after a resumed append: %d bytes, %d lines; want the input once (%d bytes)",
			len(m.Text), strings.Count(m.Text, "\n"), len(long)+4)
	}
}

// Streaming calls share the workspace's Tier 4 budget: once spent, Append
// says how long to wait without calling Slack.
func TestNativeStreamBudget(t *testing.T) {
	t.Parallel()
	fake := newFake(t, slacktest.Options{})
	_, _, st := streamIn(t, fake, func(o *slack.Options) { o.AppendsPerMinute, o.AppendBurst = 60, 3 }) // two, and one kept for the end
	ctx := t.Context()
	start := time.Now()
	for _, d := range []string{"a", "b"} {
		if err := st.Append(ctx, d); err != nil {
			t.Fatalf("Append within the burst: %v", err)
		}
	}
	err := st.Append(ctx, "c")
	// The budget refills while the calls run (slowly on a loaded
	// machine): the wait is 1.0–1.2 s less the time they took.
	elapsed := time.Since(start)
	if ra, ok := core.RetryAfter(err); !ok || ra <= time.Second-elapsed || ra > 1200*time.Millisecond {
		t.Fatalf("third Append = %v after %v; want a RateLimitError of 1.0–1.2 s less that (90 %% of 60 a minute)", err, elapsed)
	}
	if n := len(fake.Calls("chat.appendStream")); n != 2 {
		t.Errorf("%d appendStream calls; want 2 (the refused one must not reach Slack)", n)
	}
}

// FuzzNativeStreamDefuse splits text into three appends at arbitrary
// points: the streamed message is the text with only word joiners added,
// and no mention syntax reaches Slack intact, whatever the boundaries.
func FuzzNativeStreamDefuse(f *testing.F) {
	f.Add("hi <!channel> and @here", 4, 12)
	f.Add("@everyone@Everyone<@U1><#C1>", 1, 2)
	f.Add("mail me@host and @chan", 21, 22)
	f.Add("<<!!@@here", 1, 5)
	fake := slacktest.NewServer(slacktest.Options{})
	defer fake.Close()
	opts := options(fake)
	opts.NativeStreaming = true
	opts.AppendsPerMinute, opts.AppendBurst = 1e9, 1000
	a, err := slack.New(opts, nil)
	if err != nil {
		f.Fatal(err)
	}
	n := 0
	f.Fuzz(func(t *testing.T, text string, i, j int) {
		if len(text) > 2000 || !utf8.ValidString(text) {
			return
		}
		i, j = clamp(i, len(text)), clamp(j, len(text))
		if i > j {
			i, j = j, i
		}
		n++
		conv := core.ConversationKey{Platform: "slack", Workspace: "T1", Channel: "D" + strconv.Itoa(n), Thread: "1.000001"}
		st, err := a.StartStream(t.Context(), conv)
		if err != nil || st == nil {
			t.Fatalf("StartStream = %v, %v", st, err)
		}
		for _, part := range []string{text[:i], text[i:j]} {
			if err := st.Append(t.Context(), part); err != nil {
				t.Fatalf("Append(%q): %v", part, err)
			}
		}
		if err := st.Stop(t.Context(), text[j:]); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		var got string
		for _, m := range fake.Messages() {
			if m.Channel == conv.Channel {
				got = m.Text
			}
		}
		if strings.ReplaceAll(got, wj, "") != strings.ReplaceAll(text, wj, "") {
			t.Fatalf("streamed %q; want %q with word joiners only", got, text)
		}
		low := strings.ToLower(got)
		for _, bad := range []string{"<!", "<@", "<#"} {
			if strings.Contains(low, bad) {
				t.Fatalf("%q reached Slack intact in %q", bad, got)
			}
		}
	})
}

func clamp(i, n int) int {
	if i < 0 {
		i = -i
	}
	if n == 0 {
		return 0
	}
	return i % (n + 1)
}
