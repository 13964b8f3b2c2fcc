package slack

import (
	"context"
	"fmt"
	"io"

	slackapi "github.com/slack-go/slack"

	"github.com/agentbridge/agentbridge/adapters/internal/outfile"
	"github.com/agentbridge/agentbridge/core"
)

// maxUpload is Slack's limit on one uploaded file, 1 GB; the turn's own
// limits on what agents send are usually far lower.
const maxUpload = 1000 * 1000 * 1000

var _ core.FileSender = (*Adapter)(nil)

// SendFile uploads f with Slack's v2 flow (files.getUploadURLExternal,
// the bytes posted to the URL it gives, files.completeUploadExternal)
// and shares it in to's channel, in to's thread when it has one, with
// f.Caption as its comment (literal text). The upload takes one post of
// the channel's budget in the final text's turn; a 429 at any step holds
// the channel and is returned, and the caller's retry starts a new upload.
// The ref names the file (its id), not a message: a file is not edited.
func (a *Adapter) SendFile(ctx context.Context, to core.ConversationKey, f core.File) (core.MessageRef, error) {
	name := outfile.Name(f)
	file, size, err := outfile.Open(f, maxUpload)
	if err != nil {
		return core.MessageRef{}, fmt.Errorf("slack upload: %w", err)
	}
	defer file.Close()
	if size == 0 {
		return core.MessageRef{}, fmt.Errorf("slack upload: %s is empty: Slack takes no empty files", name)
	}
	posts := a.posts.Get(to.Channel)
	if err := posts.Take(ctx, to.String(), core.PriorityFinal); err != nil {
		return core.MessageRef{}, fmt.Errorf("slack upload: %w", err)
	}
	params := slackapi.UploadFileParameters{
		Reader:          io.LimitReader(file, size),
		FileSize:        int(size),
		Filename:        name,
		Title:           name,
		Channel:         to.Channel,
		ThreadTimestamp: to.Thread,
	}
	if f.Caption != "" {
		params.InitialComment = escape(f.Caption)
	}
	sum, err := a.api.UploadFileContext(ctx, params)
	if err != nil {
		err = a.translate("upload of "+name, err)
		hold(posts, err)
		return core.MessageRef{}, err
	}
	return core.MessageRef{Conv: to, ID: sum.ID}, nil
}
