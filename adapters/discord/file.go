package discord

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"unicode/utf16"

	discordgo "github.com/bwmarrin/discordgo"

	"github.com/agentbridge/agentbridge/adapters/internal/outfile"
	"github.com/agentbridge/agentbridge/core"
)

// maxUpload is Discord's limit on a message's files in a server without
// boosts (and in DMs): 10 MiB.
const maxUpload = 10 << 20

var _ core.FileSender = (*Adapter)(nil)

// SendFile posts f as a message with the file attached (multipart
// payload_json and files[0]), where text goes: the conversation's thread,
// as a reply to the message it answers where text replies are, with
// f.Caption as its literal text and no mentions parsed. It takes one call
// of the channel's message budget in the final text's turn; a 429 is
// returned as Send returns it. Discord shows an image inline by its name's
// extension, which the sanitised name keeps (or takes from the media type).
func (a *Adapter) SendFile(ctx context.Context, to core.ConversationKey, f core.File) (core.MessageRef, error) {
	ch := a.target(to)
	if ch == "" {
		return core.MessageRef{}, fmt.Errorf("discord: send file: no channel in %s: %w", to, core.ErrNotFound)
	}
	file, size, err := outfile.Open(f, maxUpload)
	if err != nil {
		return core.MessageRef{}, fmt.Errorf("discord: send file to %s: %w", to, err)
	}
	// discordgo builds the whole request in memory anyway; the bytes are
	// read once, so a refused reply can go again without them.
	data, err := io.ReadAll(io.LimitReader(file, size))
	file.Close()
	if err != nil {
		return core.MessageRef{}, fmt.Errorf("discord: send file to %s: %w", to, err)
	}
	name := outfile.Name(f)
	send := &discordgo.MessageSend{
		Content:         caption(f.Caption),
		AllowedMentions: noMentions(),
		Reference:       a.replyRef(to, ch, core.Post{ReplyTo: f.ReplyTo}),
	}
	return a.post(ctx, to, ch, core.PriorityFinal, send, func() []*discordgo.File {
		return []*discordgo.File{{Name: name, ContentType: f.MIME, Reader: bytes.NewReader(data)}}
	})
}

// caption is the message text for a file's caption: literal, cut to
// Discord's 2,000 characters.
func caption(s string) string {
	text := escapePlain(s)
	units := utf16.Encode([]rune(text))
	if len(units) <= maxText {
		return text
	}
	units = units[:maxText-1]
	if n := len(units); utf16.IsSurrogate(rune(units[n-1])) {
		units = units[:n-1]
	}
	text = string(utf16.Decode(units))
	for len(text) > 0 && text[len(text)-1] == '\\' {
		text = text[:len(text)-1] // half an escape
	}
	return text + "…"
}
