package telegram_test

import (
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge/adapters/telegram/telegramtest"
	"github.com/agentbridge/agentbridge/core"
)

// TestGroupRepliesQuoteTheUsersMessage checks the sendMessage bodies: in a
// group or forum topic the first message of a reply, every notice and
// every permission prompt quote the conversation's last inbound message
// (reply_parameters, still sent if it was deleted); continuations do not;
// a private chat never quotes.
func TestGroupRepliesQuoteTheUsersMessage(t *testing.T) {
	e := newEnv(t, nil)
	rec := newRecorder()
	e.run(rec)
	ctx := t.Context()
	g := strconv.FormatInt(group, 10)
	topic := core.ConversationKey{Platform: "telegram", Channel: g, Thread: "55"}
	general := core.ConversationKey{Platform: "telegram", Channel: g}
	dm := core.ConversationKey{Platform: "telegram", Channel: "1001"}
	mention := "@" + telegramtest.BotUsername + " "
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

	// A message in a topic, then a reply in two messages, a notice and a prompt.
	e.fake.Push(telegramtest.GroupMessage(group, 7, 55, alice, mention+"question"))
	recv(t, rec.msgs)
	send(topic, core.Post{Text: "<b>answer</b> part 1"})
	send(topic, core.Post{Text: "part 2"})
	send(topic, core.Post{Text: "⏳ Queued", Plain: true})
	send(topic, core.Post{Text: "Permission needed", Buttons: []core.Button{{Label: "Allow", Value: "t:a"}}})
	// The group's General conversation is apart from the topic.
	e.fake.Push(telegramtest.GroupMessage(group, 8, 0, bob, mention+"other"))
	recv(t, rec.msgs)
	send(general, core.Post{Text: "to bob"})
	send(topic, core.Post{Text: "part 3"})
	// The next message in the topic is quoted by its own reply.
	e.fake.Push(telegramtest.GroupMessage(group, 9, 55, alice, mention+"again"))
	recv(t, rec.msgs)
	send(topic, core.Post{Text: "second answer"})
	// Private chats never quote, not even notices or prompts.
	e.fake.Push(telegramtest.PrivateMessage(5, alice, "hi"))
	recv(t, rec.msgs)
	send(dm, core.Post{Text: "dm answer"})
	send(dm, core.Post{Text: "dm notice", Plain: true})
	send(dm, core.Post{Text: "dm prompt", Buttons: []core.Button{{Label: "Allow", Value: "t:a"}}})

	prompt := url.Values{"chat_id": {g}, "message_thread_id": {"55"}, "text": {"Permission needed"}, "parse_mode": {"HTML"},
		"reply_markup": {`{"inline_keyboard":[[{"text":"Allow","callback_data":"t:a"}]]}`}, "reply_parameters": {quote(7)}}
	dmPrompt := url.Values{"chat_id": {"1001"}, "text": {"dm prompt"}, "parse_mode": {"HTML"},
		"reply_markup": {`{"inline_keyboard":[[{"text":"Allow","callback_data":"t:a"}]]}`}}
	want := []url.Values{
		html(g, "55", "<b>answer</b> part 1", quote(7)),
		html(g, "55", "part 2", ""),
		{"chat_id": {g}, "message_thread_id": {"55"}, "text": {"⏳ Queued"}, "reply_parameters": {quote(7)}},
		prompt,
		html(g, "", "to bob", quote(8)),
		html(g, "55", "part 3", ""),
		html(g, "55", "second answer", quote(9)),
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
	if d := cmp.Diff([]int{7, 0, 7, 7, 8, 0, 9}, replyTo); d != "" {
		t.Errorf("quoted messages as the fake saw them (-want +got):\n%s", d)
	}
}

// TestGroupQuoteNotConsumedByAFailedSend: a reply that Telegram refused
// (core retries it) still quotes when it goes out.
func TestGroupQuoteNotConsumedByAFailedSend(t *testing.T) {
	e := newEnv(t, nil)
	rec := newRecorder()
	e.run(rec)
	e.fake.Push(telegramtest.GroupMessage(group, 7, 0, alice, "@"+telegramtest.BotUsername+" q"))
	recv(t, rec.msgs)
	conv := core.ConversationKey{Platform: "telegram", Channel: strconv.FormatInt(group, 10)}
	if _, err := e.ad.Send(t.Context(), conv, core.Post{Text: "<b>broken"}); err == nil {
		t.Fatal("bad markup was accepted")
	}
	if _, err := e.ad.Send(t.Context(), conv, core.Post{Text: "fixed"}); err != nil {
		t.Fatal(err)
	}
	if m := e.fake.Messages(group); len(m) != 1 || m[0].ReplyTo != 7 {
		t.Errorf("messages = %+v; want one quoting message 7", m)
	}
}

// TestE2EGroupReplyQuotesTheQuestion runs a real turn in a group: the
// long answer's first message quotes the question, the others do not.
func TestE2EGroupReplyQuotesTheQuestion(t *testing.T) {
	fake := telegramtest.NewServer(token)
	t.Cleanup(fake.Close)
	startStack(t, fake, "", nil)
	fake.Push(telegramtest.GroupMessage(group, 31, 0, alice, "@"+telegramtest.BotUsername+" code 250"))
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
