package slack_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/slack"
	"github.com/agentbridge/agentbridge/adapters/slack/slacktest"
	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/platformtest"
)

func newFileAdapter(t *testing.T, opts slacktest.Options) (*slacktest.Server, *slack.Adapter) {
	t.Helper()
	fake := newFake(t, opts)
	a, err := slack.New(options(fake), nil)
	if err != nil {
		t.Fatal(err)
	}
	return fake, a
}

// A file goes through the three steps of the v2 flow and lands in the
// thread, after the text sent before it and before the text after it,
// with its caption as literal text.
func TestSendFileIntoThread(t *testing.T) {
	t.Parallel()
	fake, a := newFileAdapter(t, slacktest.Options{})
	conv := core.ConversationKey{Platform: "slack", Workspace: "T1", Channel: "C1", Thread: "1700000000.000100"}
	if _, err := a.Send(t.Context(), conv, core.Post{Text: "here is the chart"}); err != nil {
		t.Fatal(err)
	}
	data := []byte("\x89PNG\r\n\x1a\nnot really")
	f := platformtest.Spool(t, "chart.png", "image/png", "image", data)
	f.Caption = "<!channel> chart & more"
	ref, err := a.SendFile(t.Context(), conv, f)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Send(t.Context(), conv, core.Post{Text: "anything else?"}); err != nil {
		t.Fatal(err)
	}
	msgs := fake.Messages()
	if len(msgs) != 3 || msgs[0].Text != "here is the chart" || msgs[1].File == nil || msgs[2].Text != "anything else?" {
		t.Fatalf("messages %+v, want text, file, text", msgs)
	}
	m := msgs[1]
	switch {
	case m.File.ID != ref.ID || m.Channel != "C1" || m.ThreadTS != conv.Thread:
		t.Errorf("file %s in %s thread %q, want %s in C1 thread %s", m.File.ID, m.Channel, m.ThreadTS, ref.ID, conv.Thread)
	case m.File.Name != "chart.png" || !bytes.Equal(m.File.Data, data):
		t.Errorf("file %q with %q, want chart.png with its bytes", m.File.Name, m.File.Data)
	case m.Text != "&lt;!channel&gt; chart &amp; more":
		t.Errorf("comment %q, want the caption escaped (no ping)", m.Text)
	}
	var steps []string
	for _, c := range fake.Calls("files.getUploadURLExternal", "upload", "files.completeUploadExternal") {
		steps = append(steps, c.Method)
	}
	if strings.Join(steps, " ") != "files.getUploadURLExternal upload files.completeUploadExternal" {
		t.Errorf("upload steps %v", steps)
	}
	if got := fake.Calls("files.getUploadURLExternal")[0].Form; got.Get("length") != "18" || got.Get("filename") != "chart.png" {
		t.Errorf("getUploadURLExternal form %v, want the name and the length", got)
	}
}

// A 429 on the first step holds the channel and is returned; the retry
// waits for Retry-After and the file is shared once.
func TestSendFileRateLimitedThenSent(t *testing.T) {
	t.Parallel()
	fake, a := newFileAdapter(t, slacktest.Options{})
	conv := core.ConversationKey{Platform: "slack", Workspace: "T1", Channel: "C1"}
	fake.Fail("files.getUploadURLExternal", slacktest.Failure{Status: 429, RetryAfter: 1, Error: "ratelimited"})
	f := platformtest.Spool(t, "notes.txt", "text/plain", "file", []byte("notes"))
	_, err := a.SendFile(t.Context(), conv, f)
	if ra, ok := core.RetryAfter(err); !ok || ra < time.Second {
		t.Fatalf("SendFile answered 429 = %v, want a rate limit of 1 s", err)
	}
	if _, err := a.SendFile(t.Context(), conv, f); err != nil {
		t.Fatal(err)
	}
	files := fake.Files()
	if len(files) != 1 || string(files[0].File.Data) != "notes" || files[0].ThreadTS != "" {
		t.Errorf("files %+v, want notes.txt once, in the channel", files)
	}
	calls := fake.Calls("files.getUploadURLExternal")
	if len(calls) != 2 || calls[1].At.Sub(calls[0].At) < time.Second {
		t.Errorf("%d getUploadURLExternal calls; want 2, the second after Retry-After", len(calls))
	}
}

// A file over Slack's limit is refused by Slack at the first step: a
// clear error, nothing shared. Empty files Slack does not take at all.
func TestSendFileRefused(t *testing.T) {
	t.Parallel()
	fake, a := newFileAdapter(t, slacktest.Options{MaxUpload: 100})
	conv := core.ConversationKey{Platform: "slack", Workspace: "T1", Channel: "C1"}
	_, err := a.SendFile(t.Context(), conv, platformtest.Spool(t, "big.bin", "", "file", make([]byte, 200)))
	var rl *core.RateLimitError
	if errors.As(err, &rl) || !errors.Is(err, core.ErrFileTooLarge) || !strings.Contains(err.Error(), "big.bin") || !strings.Contains(err.Error(), "file_upload_size_restricted") {
		t.Errorf("SendFile over the fake's limit = %v, want Slack's refusal naming the file, core.ErrFileTooLarge", err)
	}
	if _, err := a.SendFile(t.Context(), conv, platformtest.Spool(t, "empty.txt", "", "file", nil)); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("SendFile of an empty file = %v, want a refusal", err)
	}
	if n := len(fake.Files()); n != 0 {
		t.Errorf("%d files shared", n)
	}
	if lim := a.Limits().MaxFileBytes; lim != 1000*1000*1000 {
		t.Errorf("MaxFileBytes = %d, want Slack's 1 GB", lim)
	}
}
