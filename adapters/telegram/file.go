package telegram

import (
	"context"
	"encoding/json"
	"fmt"
	"image"
	_ "image/jpeg" // photos' dimensions
	_ "image/png"
	"io"
	"mime"
	"os"
	"strconv"
	"strings"
	"unicode/utf16"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/agentbridge/agentbridge/adapters/internal/outfile"
	"github.com/agentbridge/agentbridge/core"
)

// Telegram's limits on what a bot uploads (Bot API, "Sending files"):
// 50 MB for a file, 10 MB for a photo, whose width and height must add
// up to at most 10000 with a ratio of at most 20; a caption is 1024
// characters. MB are counted as 10^6 bytes here, the smaller reading.
const (
	maxUpload     = 50 * 1000 * 1000
	maxPhoto      = 10 * 1000 * 1000
	maxPhotoSides = 10000
	maxPhotoRatio = 20
	maxCaption    = 1024
)

var _ core.FileSender = (*Adapter)(nil)

// SendFile posts f in the conversation (its forum topic, if any): an image
// Telegram takes as a photo with sendPhoto (a JPEG or PNG within the
// photo limits; otherwise, or if Telegram refuses the photo, as a
// document), an MP3/M4A with sendAudio, an MP4 with sendVideo, anything
// else with sendDocument, with f.Caption as its plain-text caption. In a
// group it quotes the message the reply answers, as text replies do. In a
// private chat the reply's drafts become messages first, so the file comes
// after the text before it. The upload takes one message of the chat's
// flood budget in the final text's turn; a 429 is returned to the caller,
// who retries, as Send does.
func (a *Adapter) SendFile(ctx context.Context, to core.ConversationKey, f core.File) (core.MessageRef, error) {
	chat, err := parseChat(to.Channel)
	if err != nil {
		return core.MessageRef{}, err
	}
	if chat > 0 {
		a.finishDrafts(ctx, chat, 0)
	}
	method, field := uploadMethod(f)
	ref, err := a.upload(ctx, to, chat, f, method, field)
	if method == "sendPhoto" && photoRefused(err) {
		a.log.InfoContext(ctx, "photo refused; sending it as a document", "conv", to, "err", err)
		ref, err = a.upload(ctx, to, chat, f, "sendDocument", "document")
	}
	return ref, err
}

// uploadMethod returns the Bot API method that shows f best and the
// form field its bytes go in.
func uploadMethod(f core.File) (method, field string) {
	typ, _, _ := mime.ParseMediaType(f.MIME)
	switch {
	case f.Kind == "image" && isPhoto(f.Path):
		return "sendPhoto", "photo"
	case typ == "audio/mpeg" || typ == "audio/mp4" || typ == "audio/x-m4a":
		return "sendAudio", "audio"
	case typ == "video/mp4":
		return "sendVideo", "video"
	}
	return "sendDocument", "document"
}

// isPhoto reports whether the image at path is one sendPhoto takes: a
// JPEG or PNG within Telegram's photo size and dimensions.
func isPhoto(path string) bool {
	file, err := os.Open(path)
	if err != nil {
		return false
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil || st.Size() > maxPhoto {
		return false
	}
	cfg, format, err := image.DecodeConfig(file)
	if err != nil || (format != "jpeg" && format != "png") {
		return false
	}
	w, h := cfg.Width, cfg.Height
	return w > 0 && h > 0 && w+h <= maxPhotoSides && max(w, h) <= maxPhotoRatio*min(w, h)
}

// photoRefused reports whether err is Telegram refusing an image as a
// photo (its dimensions, size or format), which it takes as a document.
func photoRefused(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	return strings.Contains(s, "PHOTO_") || strings.Contains(s, "IMAGE_PROCESS_FAILED")
}

// upload sends f with method, its bytes in form field field.
func (a *Adapter) upload(ctx context.Context, to core.ConversationKey, chat int64, f core.File, method, field string) (core.MessageRef, error) {
	file, size, err := outfile.Open(f, maxUpload)
	if err != nil {
		return core.MessageRef{}, fmt.Errorf("telegram %s: %w", method, err)
	}
	defer file.Close()
	params := tgbotapi.Params{"chat_id": to.Channel}
	params.AddNonEmpty("message_thread_id", to.Thread)
	params.AddNonEmpty("caption", caption(f.Caption))
	if quote := quoteFor(chat, core.Post{ReplyTo: f.ReplyTo}); quote != 0 {
		params["reply_parameters"] = replyParameters(quote)
	}
	if err := a.await(ctx, chat, to.String(), core.PriorityFinal, maxSendWait); err != nil {
		return core.MessageRef{}, err
	}
	// The library closes a reader that is an io.Closer; the file is
	// closed here. At most size bytes go, the size checked.
	data := tgbotapi.FileReader{Name: outfile.Name(f), Reader: io.LimitReader(file, size)}
	resp, err := a.request(ctx, method, func(b *tgbotapi.BotAPI) (*tgbotapi.APIResponse, error) {
		return b.UploadFiles(method, params, []tgbotapi.RequestFile{{Name: field, Data: data}})
	})
	if err != nil {
		a.blocked(chat, err)
		return core.MessageRef{}, err
	}
	var m tgbotapi.Message
	if err := json.Unmarshal(resp.Result, &m); err != nil {
		return core.MessageRef{}, fmt.Errorf("telegram %s: decode result: %w", method, err)
	}
	return core.MessageRef{Conv: to, ID: strconv.Itoa(m.MessageID)}, nil
}

// caption cuts s to Telegram's caption limit, in UTF-16 units.
func caption(s string) string {
	s = strings.TrimSpace(s)
	units := utf16.Encode([]rune(s))
	if len(units) <= maxCaption {
		return s
	}
	units = units[:maxCaption-1]
	if n := len(units); n > 0 && utf16.IsSurrogate(rune(units[n-1])) {
		units = units[:n-1] // half a pair
	}
	return string(utf16.Decode(units)) + "…"
}
