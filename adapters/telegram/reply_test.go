package telegram_test

import (
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge/adapters/telegram/telegramtest"
	"github.com/agentbridge/agentbridge/core"
)

// TestGroupRepliesQuoteTheUsersMessage checks the sendMessage bodies: in a
// group or forum topic a post quotes the message its ReplyTo names
// (reply_parameters, still sent if it was deleted); a post without ReplyTo
// does not; a private chat never quotes.
func TestGroupRepliesQuoteTheUsersMessage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.run(newRecorder())
	ctx := t.Context()
	g := strconv.FormatInt(group, 10)
	topic := core.ConversationKey{Platform: "telegram", Channel: g, Thread: "55"}
	general := core.ConversationKey{Platform: "telegram", Channel: g}
	dm := core.ConversationKey{Platform: "telegram", Channel: "1001"}
	send := func(to core.ConversationKey, p core.Post) {
		t.Helper()
		if _, err := e.ad.Send(ctx, to, p); err != nil {
			t.Fatal(err)
		}
	}
	quote := func(id int) string {
		return `{"message_id":` + strconv.Itoa(id) + `,"allow_sending_without_reply":true}`
	}
	html := func(chat, thread, text, reply string) url.Values {
		v := url.Values{"chat_id": {chat}, "text": {text}, "parse_mode": {"HTML"}}
		if thread != "" {
			v["message_thread_id"] = []string{thread}
		}
		if reply != "" {
			v["reply_parameters"] = []string{reply}
		}
		return v
	}

	// A reply in a topic in two messages, a notice and a prompt.
	send(topic, core.Post{Text: "<b>answer</b> part 1", ReplyTo: g + ":7"})
	send(topic, core.Post{Text: "part 2"})
	send(topic, core.Post{Text: "⏳ Queued", Plain: true, ReplyTo: g + ":9"})
	send(topic, core.Post{Text: "Permission needed", Buttons: []core.Button{{Label: "Allow", Value: "t:a"}}, ReplyTo: g + ":7"})
	send(general, core.Post{Text: "to bob", ReplyTo: g + ":8"})
	// Private chats never quote, not even notices or prompts.
	send(dm, core.Post{Text: "dm answer", ReplyTo: "1001:5"})
	send(dm, core.Post{Text: "dm notice", Plain: true, ReplyTo: "1001:5"})
	send(dm, core.Post{Text: "dm prompt", Buttons: []core.Button{{Label: "Allow", Value: "t:a"}}, ReplyTo: "1001:5"})

	prompt := url.Values{"chat_id": {g}, "message_thread_id": {"55"}, "text": {"Permission needed"}, "parse_mode": {"HTML"},
		"reply_markup": {`{"inline_keyboard":[[{"text":"Allow","callback_data":"t:a"}]]}`}, "reply_parameters": {quote(7)}}
	dmPrompt := url.Values{"chat_id": {"1001"}, "text": {"dm prompt"}, "parse_mode": {"HTML"},
		"reply_markup": {`{"inline_keyboard":[[{"text":"Allow","callback_data":"t:a"}]]}`}}
	want := []url.Values{
		html(g, "55", "<b>answer</b> part 1", quote(7)),
		html(g, "55", "part 2", ""),
		{"chat_id": {g}, "message_thread_id": {"55"}, "text": {"⏳ Queued"}, "reply_parameters": {quote(9)}},
		prompt,
		html(g, "", "to bob", quote(8)),
		html("1001", "", "dm answer", ""),
		{"chat_id": {"1001"}, "text": {"dm notice"}},
		dmPrompt,
	}
	var got []url.Values
	for _, c := range e.fake.Calls("sendMessage") {
		got = append(got, c.Form)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("sendMessage bodies (-want +got):\n%s", d)
	}
	var replyTo []int
	for _, m := range e.fake.Messages(group) {
		replyTo = append(replyTo, m.ReplyTo)
	}
	if d := cmp.Diff([]int{7, 0, 9, 7, 8}, replyTo); d != "" {
		t.Errorf("quoted messages as the fake saw them (-want +got):\n%s", d)
	}
}

// TestE2EGroupReplyQuotesTheQuestion runs a real turn in a group: the
// long answer's first message quotes the question, the others do not.
func TestE2EGroupReplyQuotesTheQuestion(t *testing.T) {
	t.Parallel()
	fake := telegramtest.NewServer(token)
	t.Cleanup(fake.Close)
	startStack(t, fake, "", nil)
	fake.Push(telegramtest.GroupMessage(group, 31, 0, alice, "@"+telegramtest.BotUsername+" code:250"))
	waitMsg(t, fake, group, contains("END"))
	msgs := fake.Messages(group)
	if len(msgs) < 3 {
		t.Fatalf("got %d messages; want the answer split into at least 3", len(msgs))
	}
	for i, m := range msgs {
		want := 0
		if i == 0 {
			want = 31
		}
		if m.ReplyTo != want {
			t.Errorf("message %d (%.40q) quotes %d; want %d", i, m.Text, m.ReplyTo, want)
		}
	}
	for _, c := range fake.Calls("sendMessage") {
		if rp := c.Form.Get("reply_parameters"); rp != "" && !strings.Contains(rp, `"allow_sending_without_reply":true`) {
			t.Errorf("reply_parameters = %s", rp)
		}
	}
}

// TestE2EGroupQuoteFollowsTheQuestion: a message sent while an answer
// streams gets its own quote (on its queue notice and its answer), and the
// running answer keeps quoting the question it answers.
func TestE2EGroupQuoteFollowsTheQuestion(t *testing.T) {
	t.Parallel()
	fake := telegramtest.NewServer(token)
	t.Cleanup(fake.Close)
	startStack(t, fake, "", nil)
	mention := "@" + telegramtest.BotUsername + " "
	gate := filepath.Join(t.TempDir(), "gate")
	// The first turn stays open until the second message is queued, however
	// slow the machine.
	fake.Push(telegramtest.GroupMessage(group, 41, 0, alice, mention+"gate:"+gate))
	waitMsg(t, fake, group, contains("gated"))
	fake.Push(telegramtest.GroupMessage(group, 42, 0, alice, mention+"second"))
	waitMsg(t, fake, group, contains("Queued"))
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitMsg(t, fake, group, contains("second END"))
	quotes := map[string]int{}
	for _, m := range fake.Messages(group) {
		switch {
		case strings.Contains(m.Text, "released"):
			quotes["first answer"] = m.ReplyTo
		case strings.Contains(m.Text, "Queued"):
			quotes["queue notice"] = m.ReplyTo
		case strings.Contains(m.Text, "second END"):
			quotes["second answer"] = m.ReplyTo
		}
	}
	if d := cmp.Diff(map[string]int{"first answer": 41, "queue notice": 42, "second answer": 42}, quotes); d != "" {
		t.Errorf("quoted messages (-want +got):\n%s\nmessages: %+v", d, fake.Messages(group))
	}
}
