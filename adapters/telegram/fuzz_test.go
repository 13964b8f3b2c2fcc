package telegram

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

func FuzzStripMentions(f *testing.F) {
	f.Add("@mybot hello", "mention", 0, 6)
	f.Add("/new@mybot now", "bot_command", 0, 10)
	f.Add("/new@other", "bot_command", 0, 10)
	f.Add("hi 👋 @mybot there", "mention", 6, 6)
	f.Add("short", "mention", 3, 40)
	f.Add("x", "mention", -2, 1)
	a := &Adapter{self: tgbotapi.User{ID: 42, UserName: "MyBot"}}
	f.Fuzz(func(t *testing.T, text, kind string, off, n int) {
		out, addressed, other := a.stripMentions(text, []tgbotapi.MessageEntity{{Type: kind, Offset: off, Length: n}})
		if !utf8.ValidString(text) {
			return
		}
		units := utf16.Encode([]rune(text))
		valid := off >= 0 && n > 0 && off+n <= len(units)
		if !valid && (addressed || other) {
			t.Errorf("an out-of-range entity counted: %q %d+%d", text, off, n)
		}
		if !valid && out != strings.TrimSpace(text) {
			t.Errorf("an out-of-range entity changed the text: %q → %q", text, out)
		}
		if addressed && other {
			t.Errorf("one command both for the bot and for another bot")
		}
	})
}

func FuzzDecodeUpdates(f *testing.F) {
	f.Add(`[{"update_id":1,"message":{"message_id":2,"date":1,"chat":{"id":-5,"type":"supergroup"},"message_thread_id":7,"is_topic_message":true,"text":"hi"}}]`)
	f.Add(`[{"update_id":3,"callback_query":{"id":"c","data":"x","message":{"message_id":4,"chat":{"id":9},"message_thread_id":8,"is_topic_message":true}}}]`)
	f.Add(`[]`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, raw string) {
		ups, err := decodeUpdates(json.RawMessage(raw))
		if err != nil {
			return
		}
		for _, u := range ups {
			if u.id != u.UpdateID {
				t.Errorf("update id %d, library says %d", u.id, u.UpdateID)
			}
			if u.Message == nil && u.CallbackQuery == nil && u.thread != (threadInfo{}) {
				t.Errorf("topic fields without a message: %+v", u.thread)
			}
		}
	})
}

// BenchmarkDecodeUpdates decodes a full getUpdates batch (100 updates), the
// poller's per-batch parsing cost.
func BenchmarkDecodeUpdates(b *testing.B) {
	var batch []string
	for i := range 100 {
		batch = append(batch, `{"update_id":`+strconv.Itoa(1000+i)+`,"message":{"message_id":`+strconv.Itoa(i)+
			`,"date":1,"chat":{"id":-1001,"type":"supergroup","is_forum":true},"from":{"id":9,"is_bot":false,"first_name":"U"},`+
			`"message_thread_id":55,"is_topic_message":true,"text":"@mybot hello there","entities":[{"type":"mention","offset":0,"length":6}]}}`)
	}
	raw := json.RawMessage("[" + strings.Join(batch, ",") + "]")
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := decodeUpdates(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzNormalizeMedia feeds decoded messages to normalize: it never panics,
// every attachment has a known kind and a name, and an animation is one
// attachment even though Telegram also fills document.
func FuzzNormalizeMedia(f *testing.F) {
	const base = `"message_id":2,"date":1,"chat":{"id":7,"type":"private"},"from":{"id":7,"is_bot":false,"first_name":"U"}`
	f.Add(`[{"update_id":1,"message":{` + base + `,"voice":{"file_id":"v","file_unique_id":"u","duration":1}}}]`)
	f.Add(`[{"update_id":1,"message":{` + base + `,"animation":{"file_id":"g","file_unique_id":"u"},"document":{"file_id":"g","file_unique_id":"u"}}}]`)
	f.Add(`[{"update_id":1,"message":{` + base + `,"video_note":{"file_id":"n","file_unique_id":"u","length":1},"caption":"c"}}]`)
	f.Add(`[{"update_id":1,"message":{` + base + `,"audio":{"file_id":"a","file_unique_id":"","mime_type":"audio/x-m4a"},"video":{"file_id":"m"}}}]`)
	a := &Adapter{self: tgbotapi.User{ID: 42, UserName: "MyBot"}}
	kinds := map[string]bool{"image": true, "file": true, "audio": true, "video": true}
	f.Fuzz(func(t *testing.T, raw string) {
		ups, err := decodeUpdates(json.RawMessage(raw))
		if err != nil {
			return
		}
		for _, u := range ups {
			if u.Message == nil {
				continue
			}
			m, ok := a.normalize(u.Message, u.thread)
			if !ok {
				continue
			}
			for _, att := range m.Attachments {
				if !kinds[att.Kind] || att.Name == "" {
					t.Errorf("attachment %+v: unknown kind or no name", att)
				}
			}
			if u.Message.Animation != nil && u.Message.Document != nil {
				for _, att := range m.Attachments {
					if att.Kind == "file" || strings.HasPrefix(att.Name, "document-") {
						t.Errorf("an animation came with its document too: %+v", m.Attachments)
					}
				}
			}
		}
	})
}
