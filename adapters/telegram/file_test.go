package telegram_test

import (
	"bytes"
	"errors"
	"image"
	"image/png"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/telegram"
	"github.com/agentbridge/agentbridge/adapters/telegram/telegramtest"
	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/platformtest"
)

// pngFile writes a w×h PNG and returns it as a core.File.
func pngFile(t *testing.T, name string, w, h int) core.File {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return platformtest.Spool(t, name, "image/png", "image", b.Bytes())
}

// fileMessage returns the fake's message for ref, which must be a file.
func fileMessage(t *testing.T, fake *telegramtest.Server, chat int64, ref core.MessageRef) telegramtest.Message {
	t.Helper()
	for _, m := range fake.Files(chat) {
		if strconv.Itoa(m.ID) == ref.ID {
			return m
		}
	}
	t.Fatalf("no file %s in chat %d: %+v", ref.ID, chat, fake.Messages(chat))
	return telegramtest.Message{}
}

func TestSendFilePhotoAndDocument(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	// Four uploads in a row: the adapter paces them, but a first call
	// arriving late on a loaded machine would crowd the fake's one-second
	// window (flood limits are tested elsewhere).
	e.fake.SetLimits(telegramtest.Limits{})
	conv := core.ConversationKey{Platform: "telegram", Channel: "1001"}

	photo := pngFile(t, "chart.png", 64, 32)
	photo.Caption = "the chart"
	ref, err := e.ad.SendFile(t.Context(), conv, photo)
	if err != nil {
		t.Fatal(err)
	}
	m := fileMessage(t, e.fake, 1001, ref)
	if m.File.Method != "sendPhoto" || m.File.Width != 64 || m.File.Height != 32 || m.File.Caption != "the chart" {
		t.Errorf("photo went as %s %dx%d with caption %q, want sendPhoto 64x32 'the chart'", m.File.Method, m.File.Width, m.File.Height, m.File.Caption)
	}

	data := []byte("# notes\n")
	doc := platformtest.Spool(t, "../notes.md", "text/markdown", "file", data)
	ref, err = e.ad.SendFile(t.Context(), conv, doc)
	if err != nil {
		t.Fatal(err)
	}
	m = fileMessage(t, e.fake, 1001, ref)
	if m.File.Method != "sendDocument" || m.File.Name != "notes.md" || !bytes.Equal(m.File.Data, data) || m.File.Caption != "" {
		t.Errorf("document went as %s %q with %q, caption %q; want sendDocument notes.md with its bytes, no caption", m.File.Method, m.File.Name, m.File.Data, m.File.Caption)
	}

	// An image beyond a photo's dimensions (10001 px wide) is a document:
	// sendPhoto would be refused with PHOTO_INVALID_DIMENSIONS.
	wide := pngFile(t, "wide.png", 10001, 1)
	ref, err = e.ad.SendFile(t.Context(), conv, wide)
	if err != nil {
		t.Fatal(err)
	}
	if m := fileMessage(t, e.fake, 1001, ref); m.File.Method != "sendDocument" || m.File.Name != "wide.png" {
		t.Errorf("a 10001x1 image went as %s %q, want sendDocument", m.File.Method, m.File.Name)
	}
	if n := len(e.fake.Calls("sendPhoto")); n != 1 {
		t.Errorf("%d sendPhoto calls, want 1 (the wide image never tried as a photo)", n)
	}

	// MP3 is audio, MP4 video: Telegram plays them inline.
	for _, tc := range []struct{ name, mime, method string }{
		{"song.mp3", "audio/mpeg", "sendAudio"}, {"clip.mp4", "video/mp4", "sendVideo"}, {"clip.webm", "video/webm", "sendDocument"},
	} {
		ref, err := e.ad.SendFile(t.Context(), conv, platformtest.Spool(t, tc.name, tc.mime, "file", []byte("media")))
		if err != nil {
			t.Fatal(err)
		}
		if m := fileMessage(t, e.fake, 1001, ref); m.File.Method != tc.method || m.File.Name != tc.name {
			t.Errorf("%s (%s) went as %s %q, want %s", tc.name, tc.mime, m.File.Method, m.File.Name, tc.method)
		}
	}

	// A long caption is cut to Telegram's 1024 characters.
	long := platformtest.Spool(t, "a.txt", "text/plain", "file", []byte("a"))
	long.Caption = strings.Repeat("é", 2000)
	ref, err = e.ad.SendFile(t.Context(), conv, long)
	if err != nil {
		t.Fatal(err)
	}
	if c := []rune(fileMessage(t, e.fake, 1001, ref).File.Caption); len(c) != 1024 || c[1023] != '…' {
		t.Errorf("caption of %d characters, want 1024 ending in …", len(c))
	}
}

// A photo Telegram refuses anyway (its own checks are the last word) goes
// again as a document.
func TestSendFilePhotoRefusedGoesAsDocument(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	conv := core.ConversationKey{Platform: "telegram", Channel: "1001"}
	e.fake.Fail("sendPhoto", telegramtest.Fault{Code: 400, Description: "Bad Request: PHOTO_INVALID_DIMENSIONS"})
	ref, err := e.ad.SendFile(t.Context(), conv, pngFile(t, "chart.png", 10, 10))
	if err != nil {
		t.Fatal(err)
	}
	if m := fileMessage(t, e.fake, 1001, ref); m.File.Method != "sendDocument" || m.File.Name != "chart.png" {
		t.Errorf("refused photo went as %s %q, want sendDocument chart.png", m.File.Method, m.File.Name)
	}
	if n := len(e.fake.Files(1001)); n != 1 {
		t.Errorf("%d files in the chat, want 1", n)
	}
}

// In a forum topic of a group a file goes into the topic, quoting the
// message it answers, after the text sent before it.
func TestSendFileInTopicQuotes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	const group = -100777
	conv := core.ConversationKey{Platform: "telegram", Channel: strconv.Itoa(group), Thread: "42"}
	text, err := e.ad.Send(t.Context(), conv, core.Post{Text: "here it is", Plain: true, ReplyTo: strconv.Itoa(group) + ":55"})
	if err != nil {
		t.Fatal(err)
	}
	f := platformtest.Spool(t, "report.pdf", "application/pdf", "file", []byte("%PDF-1.4"))
	f.ReplyTo = strconv.Itoa(group) + ":55"
	ref, err := e.ad.SendFile(t.Context(), conv, f)
	if err != nil {
		t.Fatal(err)
	}
	m := fileMessage(t, e.fake, group, ref)
	if m.ThreadID != 42 || m.ReplyTo != 55 {
		t.Errorf("file in topic %d quoting %d, want topic 42 quoting 55", m.ThreadID, m.ReplyTo)
	}
	msgs := e.fake.Messages(group)
	if len(msgs) != 2 || strconv.Itoa(msgs[0].ID) != text.ID || msgs[1].File == nil {
		t.Errorf("chat holds %+v, want the text, then the file", msgs)
	}
}

// In a private chat with drafts, text still streaming as a draft becomes
// a message before the file goes, so the file comes after it.
func TestSendFileAfterDraft(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(o *telegram.Options) { o.Drafts = true; o.DraftIdle = time.Hour })
	conv := core.ConversationKey{Platform: "telegram", Channel: "1001"}
	if _, err := e.ad.Send(t.Context(), conv, core.Post{Text: "drawing the chart", Priority: core.PriorityInterim}); err != nil {
		t.Fatal(err)
	}
	if len(e.fake.Calls("sendMessageDraft")) != 1 || len(e.fake.Messages(1001)) != 0 {
		t.Fatalf("the interim text did not go as a draft: %+v", e.fake.Calls())
	}
	if _, err := e.ad.SendFile(t.Context(), conv, pngFile(t, "chart.png", 8, 8)); err != nil {
		t.Fatal(err)
	}
	msgs := e.fake.Messages(1001)
	if len(msgs) != 2 || msgs[0].Text != "drawing the chart" || msgs[1].File == nil {
		t.Errorf("chat holds %+v, want the draft's text as a message, then the photo", msgs)
	}
}

// A 429 on an upload holds the chat's budget and is returned; the call
// made again after retry_after goes through, once.
func TestSendFileRateLimitedThenSent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	conv := core.ConversationKey{Platform: "telegram", Channel: "1001"}
	e.fake.Fail("sendDocument", telegramtest.RateLimit(1))
	f := platformtest.Spool(t, "notes.txt", "text/plain", "file", []byte("notes"))
	_, err := e.ad.SendFile(t.Context(), conv, f)
	ra, limited := core.RetryAfter(err)
	if !limited || ra < time.Second {
		t.Fatalf("SendFile answered 429 = %v, want a rate limit of 1 s", err)
	}
	// The budget holds the chat meanwhile: the next call waits for it
	// (as a presenter retrying would) instead of meeting Telegram's 429.
	ref, err := e.ad.SendFile(t.Context(), conv, f)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.fake.Files(1001); len(got) != 1 || strconv.Itoa(got[0].ID) != ref.ID || string(got[0].File.Data) != "notes" {
		t.Errorf("files %+v, want notes.txt once", got)
	}
	calls := e.fake.Calls("sendDocument")
	if len(calls) != 2 || calls[1].At.Sub(calls[0].At) < time.Second {
		t.Errorf("%d sendDocument calls; want 2, the second after retry_after", len(calls))
	}
}

// A file Telegram refuses as too large (413) is a clear error, not a
// retry, and nothing is posted.
func TestSendFileOverTelegramLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	conv := core.ConversationKey{Platform: "telegram", Channel: "1001"}
	e.fake.SetMaxUpload(1000)
	_, err := e.ad.SendFile(t.Context(), conv, platformtest.Spool(t, "big.bin", "application/octet-stream", "file", make([]byte, 2000)))
	if err == nil || !strings.Contains(err.Error(), "Request Entity Too Large") || !strings.Contains(err.Error(), "50 MB") {
		t.Errorf("SendFile over the fake's limit = %v, want Telegram's 413 naming the 50 MB limit", err)
	}
	var rl *core.RateLimitError
	if errors.As(err, &rl) || !errors.Is(err, core.ErrFileTooLarge) {
		t.Errorf("a 413 is %v, want core.ErrFileTooLarge (no retry mends it), not a rate limit", err)
	}
	if n := len(e.fake.Files(1001)); n != 0 {
		t.Errorf("%d files posted", n)
	}
	if calls := e.fake.Calls("sendDocument"); len(calls) != 1 || calls[0].Fault == nil || calls[0].Fault.Code != 413 {
		t.Errorf("sendDocument calls %+v, want one answered 413", calls)
	}
	if lim := e.ad.Limits().MaxFileBytes; lim != 50*1000*1000 {
		t.Errorf("MaxFileBytes = %d, want Telegram's 50 MB", lim)
	}
}
