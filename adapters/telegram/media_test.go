package telegram_test

import (
	"bytes"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge/adapters/telegram/telegramtest"
	"github.com/agentbridge/agentbridge/core"
)

// withMedia returns a private message from alice whose text is replaced
// by caption (none when "") and which carries the given media fields.
func withMedia(msgID int, caption string, fields map[string]any) map[string]any {
	upd := telegramtest.PrivateMessage(msgID, alice, "")
	msg := upd["message"].(map[string]any)
	delete(msg, "text")
	if caption != "" {
		msg["caption"] = caption
	}
	for k, v := range fields {
		msg[k] = v
	}
	return upd
}

func TestMediaBecomeAttachments(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		caption string
		fields  map[string]any
		want    []core.Attachment
	}{
		{"voice", "", map[string]any{"voice": map[string]any{
			"file_id": "V1", "file_unique_id": "uv1", "duration": 3, "mime_type": "audio/ogg", "file_size": 4000}},
			[]core.Attachment{{Kind: "audio", Name: "voice-uv1.ogg", MIME: "audio/ogg", Size: 4000, Source: "V1", Duration: 3 * time.Second}}},
		{"voice without type", "", map[string]any{"voice": map[string]any{
			"file_id": "V2", "file_unique_id": "uv2", "duration": 3}},
			[]core.Attachment{{Kind: "audio", Name: "voice-uv2.ogg", MIME: "audio/ogg", Source: "V2", Duration: 3 * time.Second}}},
		{"audio", "listen", map[string]any{"audio": map[string]any{
			"file_id": "A1", "file_unique_id": "ua1", "duration": 200, "file_name": "song.mp3", "mime_type": "audio/mpeg", "file_size": 3000000}},
			[]core.Attachment{{Kind: "audio", Name: "song.mp3", MIME: "audio/mpeg", Size: 3000000, Source: "A1", Duration: 200 * time.Second}}},
		{"audio without name", "", map[string]any{"audio": map[string]any{
			"file_id": "A2", "file_unique_id": "ua2", "duration": 200, "mime_type": "audio/mp4", "file_size": 10}},
			[]core.Attachment{{Kind: "audio", Name: "audio-ua2.m4a", MIME: "audio/mp4", Size: 10, Source: "A2", Duration: 200 * time.Second}}},
		{"video", "watch", map[string]any{"video": map[string]any{
			"file_id": "M1", "file_unique_id": "um1", "width": 1280, "height": 720, "duration": 9, "file_name": "clip.mov", "mime_type": "video/quicktime", "file_size": 900000}},
			[]core.Attachment{{Kind: "video", Name: "clip.mov", MIME: "video/quicktime", Size: 900000, Source: "M1"}}},
		{"video without name or type", "", map[string]any{"video": map[string]any{
			"file_id": "M2", "file_unique_id": "um2", "width": 1, "height": 1, "duration": 1}},
			[]core.Attachment{{Kind: "video", Name: "video-um2.mp4", MIME: "video/mp4", Source: "M2"}}},
		{"video note", "", map[string]any{"video_note": map[string]any{
			"file_id": "N1", "file_unique_id": "un1", "length": 384, "duration": 5, "file_size": 70000}},
			[]core.Attachment{{Kind: "video", Name: "video-note-un1.mp4", MIME: "video/mp4", Size: 70000, Source: "N1"}}},
		// Telegram sets document too on an animation, for old clients.
		{"animation", "", map[string]any{
			"animation": map[string]any{"file_id": "G1", "file_unique_id": "ug1", "width": 320, "height": 240, "duration": 2,
				"file_name": "cat.gif.mp4", "mime_type": "video/mp4", "file_size": 50000},
			"document": map[string]any{"file_id": "G1", "file_unique_id": "ug1", "file_name": "cat.gif.mp4", "mime_type": "video/mp4", "file_size": 50000}},
			[]core.Attachment{{Kind: "video", Name: "cat.gif.mp4", MIME: "video/mp4", Size: 50000, Source: "G1"}}},
		{"document", "read", map[string]any{"document": map[string]any{
			"file_id": "D1", "file_unique_id": "ud1", "file_name": "notes.pdf", "mime_type": "application/pdf", "file_size": 1234}},
			[]core.Attachment{{Kind: "file", Name: "notes.pdf", MIME: "application/pdf", Size: 1234, Source: "D1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			rec := newRecorder()
			e.run(rec)
			e.fake.Push(withMedia(9, tc.caption, tc.fields))
			m := recv(t, rec.msgs)
			if m.Text != tc.caption {
				t.Errorf("text = %q; want the caption %q", m.Text, tc.caption)
			}
			if d := cmp.Diff(tc.want, m.Attachments); d != "" {
				t.Errorf("attachments (-want +got):\n%s", d)
			}
		})
	}
}

// TestMediaDownloadThroughGetFile: a voice message's file comes through
// getFile (one request, exactly its file_id) and the size limit holds.
func TestMediaDownloadThroughGetFile(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	rec := newRecorder()
	e.run(rec)
	e.fake.AddFile("V1", "voice/file_7.oga", []byte("OggS voice bytes"))
	e.fake.Push(withMedia(9, "", map[string]any{"voice": map[string]any{
		"file_id": "V1", "file_unique_id": "uv1", "duration": 3, "mime_type": "audio/ogg", "file_size": 16}}))
	m := recv(t, rec.msgs)
	if len(m.Attachments) != 1 {
		t.Fatalf("attachments = %+v", m.Attachments)
	}
	var buf bytes.Buffer
	if err := e.ad.Download(t.Context(), m.Attachments[0], &buf, 1<<20); err != nil || buf.String() != "OggS voice bytes" {
		t.Fatalf("Download = %q, %v", buf.String(), err)
	}
	var forms []url.Values
	for _, c := range e.fake.Calls("getFile", "file") {
		forms = append(forms, c.Form)
	}
	want := []url.Values{{"file_id": {"V1"}}, {"path": {"voice/file_7.oga"}}}
	if d := cmp.Diff(want, forms); d != "" {
		t.Errorf("getFile and download requests (-want +got):\n%s", d)
	}
	err := e.ad.Download(t.Context(), m.Attachments[0], &bytes.Buffer{}, 8)
	if err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("Download over the limit = %v; want a limit error", err)
	}
}

// TestE2EVoiceAndOversizedVideo runs real turns: a voice message reaches
// the agent as a local file; a video over the 20 MB cap is never
// downloaded and the reply says why.
func TestE2EVoiceAndOversizedVideo(t *testing.T) {
	t.Parallel()
	fake := telegramtest.NewServer(token)
	t.Cleanup(fake.Close)
	startStack(t, fake, "", nil)
	fake.AddFile("VOICE", "voice/file_1.oga", []byte("ogg bytes"))
	fake.Push(withMedia(1, "", map[string]any{"voice": map[string]any{
		"file_id": "VOICE", "file_unique_id": "uv", "duration": 2, "mime_type": "audio/ogg", "file_size": 9}}))
	final := waitMsg(t, fake, 1001, contains("END"))
	if !strings.Contains(final.Text, "[voice-uv.ogg audio/ogg: ogg bytes &lt;nil&gt;]") {
		t.Errorf("agent saw %q; want the voice message as a local file", final.Text)
	}
	if strings.Contains(final.Text, "VOICE") {
		t.Errorf("the file_id reached the agent: %q", final.Text)
	}

	fake.AddFile("BIG", "videos/file_2.mp4", []byte("mp4"))
	fake.Push(withMedia(2, "big one", map[string]any{"video": map[string]any{
		"file_id": "BIG", "file_unique_id": "ub", "width": 1, "height": 1, "duration": 600, "mime_type": "video/mp4", "file_size": 30 << 20}}))
	reply := waitMsg(t, fake, 1001, contains("big one END"))
	if !strings.Contains(reply.Text, "over the") {
		t.Errorf("reply %q does not say the video was over the limit", reply.Text)
	}
	for _, c := range fake.Calls("getFile") {
		if c.Form.Get("file_id") == "BIG" {
			t.Errorf("an oversized video was requested with getFile")
		}
	}
}
