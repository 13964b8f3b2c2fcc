package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/pause"
)

// Backoff bounds for failed polls (rate limits say their own wait).
const (
	minBackoff = time.Second
	maxBackoff = time.Minute
)

// Run registers the bot's commands, then long-polls getUpdates (or, in
// webhook mode, serves Telegram's deliveries; see runWebhook) and hands
// each update to h, in order, until ctx ends (h only queues them). The
// stored offset moves past a batch only after every update in it was handed
// to core. Once h drains (core.Drainer) Run fetches no more updates and
// leaves the offset where it is, so Telegram keeps the rest for the next
// instance; a batch that arrives as draining begins is left to it too. It
// returns nil when ctx ends, and an error only when
// Telegram rejects the token (401) or another poller or a webhook holds it
// (409); both are marked core.ErrFatal.
func (a *Adapter) Run(ctx context.Context, h core.Handler) error {
	defer a.flushDrafts()
	if err := a.identifyUntilDone(ctx); err != nil {
		return core.Fatal(err)
	}
	if ctx.Err() != nil {
		return nil
	}
	if err := a.setCommands(ctx); err != nil {
		if errors.Is(err, ErrUnauthorized) {
			return core.Fatal(err)
		}
		if ctx.Err() != nil {
			return nil
		}
		a.log.WarnContext(ctx, "could not register bot commands", "err", err)
	}
	if a.opts.Mode == ModeWebhook {
		return a.runWebhook(ctx, h)
	}
	offset, err := a.loadOffset(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("telegram: load update offset: %w", err)
	}
	a.log.InfoContext(ctx, "polling", "bot", a.self.UserName, "offset", offset)
	// fetch ends when draining begins: the poll in flight is abandoned.
	drain := core.DrainSignal(h)
	fetch, stopFetch := context.WithCancel(ctx)
	defer stopFetch()
	if drain != nil {
		go func() {
			select {
			case <-drain:
				stopFetch()
			case <-fetch.Done():
			}
		}()
	}
	backoff := minBackoff
	for {
		updates, err := a.getUpdates(fetch, offset)
		if ctx.Err() != nil {
			return nil
		}
		select {
		case <-drain:
			// Whatever this poll brought stays unconfirmed, for the next
			// instance.
			a.log.InfoContext(ctx, "draining; updates from now on are left for the next instance", "offset", offset)
			<-ctx.Done()
			return nil
		default:
		}
		if err != nil {
			if errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrConflict) {
				return core.Fatal(err)
			}
			wait, limited := core.RetryAfter(err)
			if !limited {
				wait = pause.Jitter(backoff)
				backoff = min(2*backoff, maxBackoff)
			}
			a.log.WarnContext(ctx, "getUpdates failed; retrying", "err", err, "wait", wait)
			if pause.Sleep(ctx, wait) != nil {
				return nil
			}
			continue
		}
		backoff = minBackoff
		if len(updates) == 0 {
			continue
		}
		a.deliver(context.WithoutCancel(ctx), h, updates)
		// Every update of the batch is now with core: confirm them, even
		// when ctx ended meanwhile. Telegram is told (by the next poll's
		// offset) only once the offset is durable; until then the batch
		// comes again and core drops what it has seen.
		next := updates[len(updates)-1].id + 1
		if err := a.saveOffset(context.WithoutCancel(ctx), next); err != nil {
			wait := pause.Jitter(backoff)
			backoff = min(2*backoff, maxBackoff)
			a.log.ErrorContext(ctx, "could not save update offset; updates will be delivered again", "err", err, "wait", wait)
			if pause.Sleep(ctx, wait) != nil {
				return nil
			}
			continue
		}
		offset = next
		if ctx.Err() != nil {
			return nil
		}
	}
}

func (a *Adapter) cursorName() string {
	return a.opts.Name + ":" + strconv.FormatInt(a.self.ID, 10) + ":offset"
}

func (a *Adapter) loadOffset(ctx context.Context) (int, error) {
	if a.opts.Store == nil {
		return 0, nil
	}
	v, err := a.opts.Store.Cursor(ctx, a.cursorName())
	if err != nil || v == "" {
		return 0, err
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("stored offset %q: %w", v, err)
	}
	return n, nil
}

func (a *Adapter) saveOffset(ctx context.Context, offset int) error {
	if a.opts.Store == nil {
		return nil
	}
	return a.opts.Store.SetCursor(ctx, a.cursorName(), strconv.Itoa(offset))
}

// update is one getUpdates entry: the library's decoding plus the fields
// it lacks.
type update struct {
	id int
	tgbotapi.Update
	thread threadInfo // of the message, or of the callback query's message
}

// threadInfo holds forum-topic fields (Bot API 6.3) tgbotapi v5.5.1 drops.
type threadInfo struct {
	MessageThreadID int  `json:"message_thread_id"`
	IsTopicMessage  bool `json:"is_topic_message"`
}

type updateExtra struct {
	UpdateID      int         `json:"update_id"`
	Message       *threadInfo `json:"message"`
	EditedMessage *threadInfo `json:"edited_message"`
	CallbackQuery *struct {
		Message *threadInfo `json:"message"`
	} `json:"callback_query"`
}

// allowedUpdates are the updates the bot asks Telegram for: messages,
// their edits (core applies one to a message still queued) and button
// presses. Telegram tells bots nothing of deleted messages.
const allowedUpdates = `["message","edited_message","callback_query"]`

func (a *Adapter) getUpdates(ctx context.Context, offset int) ([]update, error) {
	params := tgbotapi.Params{
		"timeout":         strconv.Itoa(int(a.opts.PollTimeout / time.Second)),
		"limit":           "100",
		"allowed_updates": allowedUpdates,
	}
	if offset != 0 {
		params["offset"] = strconv.Itoa(offset)
	}
	resp, err := a.call(ctx, "getUpdates", params)
	if err != nil {
		return nil, err
	}
	return decodeUpdates(resp.Result)
}

// decodeUpdates decodes a getUpdates result twice: into the library's types
// and into the topic fields it lacks.
func decodeUpdates(raw json.RawMessage) ([]update, error) {
	var lib []tgbotapi.Update
	if err := json.Unmarshal(raw, &lib); err != nil {
		return nil, fmt.Errorf("telegram getUpdates: decode result: %w", err)
	}
	var extra []updateExtra
	if err := json.Unmarshal(raw, &extra); err != nil || len(extra) != len(lib) {
		return nil, fmt.Errorf("telegram getUpdates: decode topic fields: %v", err)
	}
	out := make([]update, len(lib))
	for i, u := range lib {
		out[i] = update{id: u.UpdateID, Update: u}
		switch e := extra[i]; {
		case e.Message != nil:
			out[i].thread = *e.Message
		case e.EditedMessage != nil:
			out[i].thread = *e.EditedMessage
		case e.CallbackQuery != nil && e.CallbackQuery.Message != nil:
			out[i].thread = *e.CallbackQuery.Message
		}
	}
	return out, nil
}

// deliver hands a batch to core, in order. The handoff is not cut short
// when ctx ends: core only queues each update, and the offset is saved
// past all of them.
func (a *Adapter) deliver(ctx context.Context, h core.Handler, updates []update) {
	for _, u := range updates {
		a.handle(ctx, h, u)
	}
}

// handle hands one update to core.
func (a *Adapter) handle(ctx context.Context, h core.Handler, u update) {
	switch {
	case u.Message != nil:
		if m, ok := a.normalize(u.Message, u.thread); ok {
			h.HandleMessage(ctx, m)
		}
	case u.EditedMessage != nil:
		// The message as it now reads, for the one it changes
		// (core.Message.Edits).
		if m, ok := a.normalize(u.EditedMessage, u.thread); ok {
			m.Edits, m.ID = m.ID, ""
			h.HandleMessage(ctx, m)
		}
	case u.CallbackQuery != nil:
		a.press(ctx, h, u.CallbackQuery, u.thread)
	}
}

func (a *Adapter) conv(chat int64, t threadInfo) core.ConversationKey {
	k := core.ConversationKey{
		Platform:  a.opts.Name,
		Workspace: strconv.FormatInt(a.self.ID, 10),
		Channel:   strconv.FormatInt(chat, 10),
	}
	// In non-forum supergroups message_thread_id names a reply thread, not
	// a topic; only topic messages get their own conversation.
	if t.IsTopicMessage && t.MessageThreadID != 0 {
		k.Thread = strconv.Itoa(t.MessageThreadID)
	}
	return k
}

func user(u *tgbotapi.User) core.User {
	name := strings.TrimSpace(u.FirstName + " " + u.LastName)
	if name == "" {
		name = u.UserName
	}
	return core.User{ID: strconv.FormatInt(u.ID, 10), Name: name}
}

// normalize turns a Telegram message into a core.Message, or reports false
// when the bot should not answer it (other bots, channel posts, group
// messages not addressed to the bot under the mention trigger).
func (a *Adapter) normalize(m *tgbotapi.Message, t threadInfo) (core.Message, bool) {
	if m.From == nil || m.From.IsBot || m.Chat == nil || m.Chat.IsChannel() {
		return core.Message{}, false
	}
	text, entities := m.Text, m.Entities
	if text == "" && m.Caption != "" {
		text, entities = m.Caption, m.CaptionEntities
	}
	text, addressed, other := a.stripMentions(text, entities)
	if !m.Chat.IsPrivate() {
		if other {
			return core.Message{}, false // a command for another bot
		}
		toBot := m.ReplyToMessage != nil && m.ReplyToMessage.From != nil && m.ReplyToMessage.From.ID == a.self.ID
		if a.opts.GroupTrigger != TriggerAll && !addressed && !toBot {
			return core.Message{}, false
		}
	}
	if m.Chat.Title != "" {
		a.titles.set(m.Chat.ID, m.Chat.Title)
	}
	msg := core.Message{
		Conv: a.conv(m.Chat.ID, t),
		ID:   strconv.FormatInt(m.Chat.ID, 10) + ":" + strconv.Itoa(m.MessageID),
		From: user(m.From),
		Text: text,
		Time: time.Unix(int64(m.Date), 0),
		// "@bot new" in a group is the new command, as "/new" is.
		Addressed: addressed,
	}
	if n := len(m.Photo); n > 0 {
		p := m.Photo[n-1] // the largest size
		msg.Attachments = append(msg.Attachments, core.Attachment{
			Kind: "image", Name: "photo-" + p.FileUniqueID + ".jpg", MIME: "image/jpeg",
			Size: int64(p.FileSize), Source: p.FileID,
		})
	}
	msg.Attachments = append(msg.Attachments, media(m)...)
	if msg.Text == "" && len(msg.Attachments) == 0 {
		return core.Message{}, false // stickers, service messages, …
	}
	return msg, true
}

// media returns a message's files other than photos: documents, voice
// messages, audio, videos, video notes and animations, each downloaded
// later through getFile (Source is the file_id).
func media(m *tgbotapi.Message) []core.Attachment {
	var out []core.Attachment
	add := func(kind, name, fallback, mime, defMIME string, size int, fileID string) {
		if name == "" {
			name = fallback
		}
		if mime == "" {
			mime = defMIME
		}
		out = append(out, core.Attachment{Kind: kind, Name: name, MIME: mime, Size: int64(size), Source: fileID})
	}
	// A voice note's and an audio file's length, in seconds, is checked
	// against the transcription limits before anything is downloaded.
	seconds := func(d int) { out[len(out)-1].Duration = time.Duration(d) * time.Second }
	if v := m.Voice; v != nil {
		// Voice messages are OGG/Opus unless Telegram says otherwise.
		add("audio", "", "voice-"+v.FileUniqueID+extFor(v.MimeType, ".ogg"), v.MimeType, "audio/ogg", v.FileSize, v.FileID)
		seconds(v.Duration)
	}
	if au := m.Audio; au != nil {
		add("audio", au.FileName, "audio-"+au.FileUniqueID+extFor(au.MimeType, ""), au.MimeType, "", au.FileSize, au.FileID)
		seconds(au.Duration)
	}
	if v := m.Video; v != nil {
		add("video", v.FileName, "video-"+v.FileUniqueID+extFor(v.MimeType, ".mp4"), v.MimeType, "video/mp4", v.FileSize, v.FileID)
	}
	if v := m.VideoNote; v != nil {
		// Video notes (round videos) are always MP4 and carry no name or type.
		add("video", "", "video-note-"+v.FileUniqueID+".mp4", "", "video/mp4", v.FileSize, v.FileID)
	}
	if an := m.Animation; an != nil {
		// GIFs arrive converted to silent MP4 videos.
		add("video", an.FileName, "animation-"+an.FileUniqueID+extFor(an.MimeType, ".mp4"), an.MimeType, "video/mp4", an.FileSize, an.FileID)
	} else if d := m.Document; d != nil {
		// An animation also fills document, for old clients: one file, not two.
		kind := "file"
		if strings.HasPrefix(d.MimeType, "image/") {
			kind = "image"
		}
		add(kind, d.FileName, "document-"+d.FileUniqueID, d.MimeType, "", d.FileSize, d.FileID)
	}
	return out
}

// extFor is the file extension for the media types Telegram uses, or def.
func extFor(mime, def string) string {
	switch mime {
	case "audio/ogg":
		return ".ogg"
	case "audio/mpeg":
		return ".mp3"
	case "audio/mp4", "audio/x-m4a":
		return ".m4a"
	case "audio/flac", "audio/x-flac":
		return ".flac"
	case "audio/wav", "audio/x-wav":
		return ".wav"
	case "video/mp4":
		return ".mp4"
	case "video/quicktime":
		return ".mov"
	case "video/webm":
		return ".webm"
	}
	return def
}

// stripMentions removes mentions of the bot (and "@bot" after a command)
// from text. addressed reports a mention of the bot or a command for it;
// other reports a leading command addressed to another bot.
func (a *Adapter) stripMentions(text string, entities []tgbotapi.MessageEntity) (out string, addressed, other bool) {
	units := utf16.Encode([]rune(text))
	me := "@" + strings.ToLower(a.self.UserName)
	type cut struct{ from, to int }
	var cuts []cut
	for _, e := range entities {
		if e.Offset < 0 || e.Length <= 0 || e.Offset+e.Length > len(units) {
			continue
		}
		s := string(utf16.Decode(units[e.Offset : e.Offset+e.Length]))
		switch e.Type {
		case "mention":
			if strings.ToLower(s) == me {
				addressed = true
				cuts = append(cuts, cut{e.Offset, e.Offset + e.Length})
			}
		case "text_mention":
			if e.User != nil && e.User.ID == a.self.ID {
				addressed = true
			}
		case "bot_command":
			if e.Offset != 0 {
				continue
			}
			_, at, hasAt := strings.Cut(s, "@")
			switch {
			case !hasAt:
				addressed = true
			case "@"+strings.ToLower(at) == me:
				addressed = true
				n := len(utf16.Encode([]rune(at))) + 1
				cuts = append(cuts, cut{e.Offset + e.Length - n, e.Offset + e.Length})
			default:
				other = true
			}
		}
	}
	if len(cuts) == 0 {
		return strings.TrimSpace(text), addressed, other
	}
	var b []uint16
	prev := 0
	for _, c := range cuts {
		if c.from < prev {
			continue
		}
		b = append(b, units[prev:c.from]...)
		prev = c.to
	}
	b = append(b, units[prev:]...)
	out = strings.TrimSpace(string(utf16.Decode(b)))
	return out, addressed, other
}

// press hands a button press to core, whose Reply (called exactly once)
// answers the callback query: with core's private answer, or silently, so
// the client's spinner always stops.
func (a *Adapter) press(ctx context.Context, h core.Handler, q *tgbotapi.CallbackQuery, t threadInfo) {
	var once sync.Once
	answer := func(text string) {
		once.Do(func() {
			if r := []rune(text); len(r) > 200 {
				text = string(r[:199]) + "…"
			}
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			p := tgbotapi.Params{"callback_query_id": q.ID}
			p.AddNonEmpty("text", text)
			if _, err := a.call(actx, "answerCallbackQuery", p); err != nil {
				a.log.WarnContext(ctx, "answerCallbackQuery failed", "err", err)
			}
		})
	}
	if q.Message == nil || q.Message.Chat == nil || q.From == nil {
		answer("")
		return // a press on an inline-mode message: not ours
	}
	conv := a.conv(q.Message.Chat.ID, t)
	h.HandleAction(ctx, core.Action{
		Conv:  conv,
		From:  user(q.From),
		Value: q.Data,
		Ref:   core.MessageRef{Conv: conv, ID: strconv.Itoa(q.Message.MessageID)},
		Reply: answer,
	})
}

// setCommands registers the bridge's commands in Telegram's menu.
func (a *Adapter) setCommands(ctx context.Context) error {
	if len(a.opts.Commands) == 0 {
		return nil
	}
	cmds, err := json.Marshal(a.opts.Commands)
	if err != nil {
		return fmt.Errorf("telegram setMyCommands: %w", err)
	}
	_, err = a.call(ctx, "setMyCommands", tgbotapi.Params{"commands": string(cmds)})
	return err
}
