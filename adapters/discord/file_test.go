package discord

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/discord/discordtest"
	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/platformtest"
)

// A file is a message with the file attached, in the thread, replying to
// the user's message where text replies do, between the texts around it,
// its caption literal and pinging nobody; a refused reply still posts it.
func TestSendFileInThreadAsReply(t *testing.T) {
	t.Parallel()
	h := start(t, Options{}, func(f *discordtest.Server) {
		f.AddChannel(discordtest.Channel{ID: "C1", Type: 0, GuildID: "G1"})
		f.AddChannel(discordtest.Channel{ID: "T1", Type: 11, GuildID: "G1", ParentID: "C1", OwnerID: "someone"})
	})
	h.connected(t)
	h.fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M2", "T1", "G1", bob, "draw it", true))
	h.rec.nextMessage(t)
	thread := core.ConversationKey{Platform: Name, Workspace: "G1", Channel: "C1", Thread: "T1"}
	if _, err := h.a.Send(t.Context(), thread, core.Post{Text: "here it is", ReplyTo: "M2"}); err != nil {
		t.Fatal(err)
	}
	data := []byte("\x89PNG\r\n\x1a\nnot really")
	f := platformtest.Spool(t, "chart", "image/png", "image", data)
	f.Caption = "@everyone *the* chart"
	f.ReplyTo = "M2"
	ref, err := h.a.SendFile(t.Context(), thread, f)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.a.Send(t.Context(), thread, core.Post{Text: "anything else?"}); err != nil {
		t.Fatal(err)
	}
	msgs := h.fake.Messages("T1")
	if len(msgs) != 3 || msgs[0].Content != "here it is" || msgs[1].ID != ref.ID || msgs[2].Content != "anything else?" {
		t.Fatalf("thread holds %+v, want text, file, text", msgs)
	}
	m := msgs[1]
	switch {
	case len(m.Files) != 1 || m.Files[0].Name != "chart.png" || m.Files[0].ContentType != "image/png" || !bytes.Equal(m.Files[0].Data, data):
		t.Errorf("files %+v, want chart.png (the media type's extension, so Discord shows it) with its bytes", m.Files)
	case m.ReplyTo != "M2":
		t.Errorf("file replies to %q, want M2", m.ReplyTo)
	case m.Content != `@everyone \*the\* chart` || !strings.Contains(string(m.AllowedMentions), `"parse":[]`):
		t.Errorf("caption %q with allowed_mentions %s, want literal text pinging nobody", m.Content, m.AllowedMentions)
	}
	if len(h.fake.Messages("C1")) != 0 {
		t.Error("something went to the parent channel")
	}

	h.fake.RefuseReplies(true)
	if _, err := h.a.SendFile(t.Context(), thread, f); err != nil {
		t.Fatalf("SendFile with its reply refused: %v", err)
	}
	if msgs := h.fake.Messages("T1"); len(msgs) != 4 || msgs[3].ReplyTo != "" || len(msgs[3].Files) != 1 || !bytes.Equal(msgs[3].Files[0].Data, data) {
		t.Errorf("after a refused reply the thread holds %+v, want the file sent plain, bytes intact", msgs)
	}
}

// A 429 on the channel's message route is returned as a rate limit; the
// call made again goes through once its turn comes.
func TestSendFileRateLimitedThenSent(t *testing.T) {
	t.Parallel()
	fake := discordtest.NewServer(testToken)
	t.Cleanup(fake.Close)
	fake.AddChannel(discordtest.Channel{ID: "C1", Type: 0, GuildID: "G1"})
	a, err := New(Options{Token: testToken, APIURL: fake.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	conv := core.ConversationKey{Platform: Name, Workspace: "G1", Channel: "C1"}
	fake.RateLimitNext("POST", "C1", 1, time.Second)
	f := platformtest.Spool(t, "notes.txt", "text/plain", "file", []byte("notes"))
	_, err = a.SendFile(t.Context(), conv, f)
	if ra, ok := core.RetryAfter(err); !ok || ra < time.Second {
		t.Fatalf("SendFile answered 429 = %v, want a rate limit of 1 s", err)
	}
	for {
		_, err = a.SendFile(t.Context(), conv, f)
		var rl *core.RateLimitError
		if !errors.As(err, &rl) || !rl.Turn {
			break
		}
		time.Sleep(rl.RetryAfter) // the budget's turn, as the presenter waits it
	}
	if err != nil {
		t.Fatal(err)
	}
	msgs := fake.Messages("C1")
	if len(msgs) != 1 || len(msgs[0].Files) != 1 || string(msgs[0].Files[0].Data) != "notes" {
		t.Errorf("channel holds %+v, want notes.txt once", msgs)
	}
}

// Files over Discord's limit are refused by Discord with 413 / 40005: a
// clear error naming the limit, nothing posted.
func TestSendFileOverDiscordLimit(t *testing.T) {
	t.Parallel()
	fake := discordtest.NewServer(testToken)
	t.Cleanup(fake.Close)
	fake.AddChannel(discordtest.Channel{ID: "C1", Type: 0, GuildID: "G1"})
	fake.SetMaxUpload(1000)
	a, err := New(Options{Token: testToken, APIURL: fake.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	conv := core.ConversationKey{Platform: Name, Workspace: "G1", Channel: "C1"}
	_, err = a.SendFile(t.Context(), conv, platformtest.Spool(t, "big.bin", "", "file", make([]byte, 2000)))
	if err == nil || !strings.Contains(err.Error(), "40005") || !strings.Contains(err.Error(), "10 MiB") {
		t.Errorf("SendFile over the fake's limit = %v, want Discord's 40005 naming the 10 MiB limit", err)
	}
	if _, limited := core.RetryAfter(err); limited || !errors.Is(err, core.ErrFileTooLarge) {
		t.Errorf("a 413 is %v, want core.ErrFileTooLarge (no retry mends it), not a rate limit", err)
	}
	if n := len(fake.Messages("C1")); n != 0 {
		t.Errorf("%d messages posted", n)
	}
	if lim := a.Limits().MaxFileBytes; lim != 10<<20 {
		t.Errorf("MaxFileBytes = %d, want Discord's 10 MiB", lim)
	}
}
