package slack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	slackapi "github.com/slack-go/slack"

	"github.com/agentbridge/agentbridge/adapters/internal/pace"
	"github.com/agentbridge/agentbridge/core"
)

// Block Kit limits.
const (
	maxSection   = 3000 // characters of text in one section block
	maxBlocks    = 50
	actionPrefix = "agentbridge-"
)

// Send posts p in to's channel, in to's thread when it has one.
func (a *Adapter) Send(ctx context.Context, to core.ConversationKey, p core.Post) (core.MessageRef, error) {
	opts := a.content(p)
	if to.Thread != "" {
		opts = append(opts, slackapi.MsgOptionTS(to.Thread))
	}
	// Posts wait for the channel's budget. That paces calls; a refusal
	// Slack returns anyway holds the channel and goes back to the caller,
	// which retries (the engine for notices, the presenter for replies).
	posts := a.posts.Get(to.Channel)
	if err := posts.Take(ctx, to.String(), p.Priority); err != nil {
		return core.MessageRef{}, fmt.Errorf("slack chat.postMessage: %w", err)
	}
	ch, ts, err := a.api.PostMessageContext(ctx, to.Channel, opts...)
	if err != nil {
		err = a.translate("chat.postMessage", err)
		hold(posts, err)
		return core.MessageRef{}, err
	}
	if ch == "" {
		ch = to.Channel
	}
	ref := core.MessageRef{Conv: to, ID: ts}
	if len(p.Buttons) > 0 {
		a.mu.Lock()
		a.buttoned[ch+":"+ts] = true
		a.mu.Unlock()
	}
	return ref, nil
}

// Edit replaces a message's content; buttons not in p are removed. Streaming
// edits share the workspace's chat.update budget fairly: when it is not
// this message's turn, Edit returns a *core.RateLimitError saying when it
// is, without calling Slack. An edit of a message that carries buttons (a
// permission prompt's outcome) waits for its turn instead, first in line,
// since nobody retries it.
func (a *Adapter) Edit(ctx context.Context, ref core.MessageRef, p core.Post) error {
	key := ref.Conv.Channel + ":" + ref.ID
	a.mu.Lock()
	hasButtons := a.buttoned[key]
	a.mu.Unlock()
	edits := a.edits.Get(ref.Conv.Workspace)
	if hasButtons {
		if err := edits.Take(ctx, key, core.PriorityFinal); err != nil {
			return fmt.Errorf("slack chat.update: %w", err)
		}
	} else if err := edits.Claim(ctx, key, p.Priority, 0); err != nil {
		return err
	}
	_, _, _, err := a.api.UpdateMessageContext(ctx, ref.Conv.Channel, ref.ID, a.content(p)...)
	if err != nil {
		err = a.translate("chat.update", err)
		hold(edits, err)
		return err
	}
	if hasButtons && len(p.Buttons) == 0 {
		a.mu.Lock()
		delete(a.buttoned, key)
		a.mu.Unlock()
	}
	return nil
}

// postLimit is chat.postMessage's budget in one channel: about one a
// second, with short bursts.
var postLimit = pace.Limit{N: 60, Per: time.Minute, Burst: 2}

// hold stops b for a 429's Retry-After, so every stream sharing the budget
// backs off together instead of each meeting the limit.
func hold(b *pace.Budget, err error) {
	if ra, ok := core.RetryAfter(err); ok {
		b.Hold(time.Now().Add(ra))
		b.Refused()
	}
}

// content builds the message options for p: mrkdwn text, or literal text
// (escaped, markup off) when p.Plain; buttons as a Block Kit actions block
// below the text split into sections.
func (a *Adapter) content(p core.Post) []slackapi.MsgOption {
	text := p.Text
	if p.Plain {
		text = escape(text)
	}
	opts := []slackapi.MsgOption{slackapi.MsgOptionText(text, false)}
	if p.Plain {
		opts = append(opts, slackapi.MsgOptionDisableMarkdown())
	}
	if len(p.Buttons) == 0 {
		return opts
	}
	typ := slackapi.MarkdownType
	if p.Plain {
		typ = slackapi.PlainTextType
		text = p.Text // plain_text objects are not parsed
	}
	var blocks []slackapi.Block
	for _, chunk := range chunks(text, maxSection) {
		if len(blocks) >= maxBlocks-1 {
			break
		}
		blocks = append(blocks, slackapi.NewSectionBlock(slackapi.NewTextBlockObject(typ, chunk, false, false), nil, nil))
	}
	var elems []slackapi.BlockElement
	for i, b := range p.Buttons {
		if i == 25 {
			break
		}
		btn := slackapi.NewButtonBlockElement(actionPrefix+strconv.Itoa(i), b.Value,
			slackapi.NewTextBlockObject(slackapi.PlainTextType, truncate(b.Label, 75), false, false))
		switch b.Style {
		case core.StylePrimary:
			btn = btn.WithStyle(slackapi.StylePrimary)
		case core.StyleDanger:
			btn = btn.WithStyle(slackapi.StyleDanger)
		}
		elems = append(elems, btn)
	}
	blocks = append(blocks, slackapi.NewActionBlock("ab-actions", elems...))
	return append(opts, slackapi.MsgOptionBlocks(blocks...))
}

// escape makes literal text safe in Slack: only & < > are control
// characters (escaping < also keeps text from pinging <!channel>).
func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// chunks splits s into pieces of at most n characters, preferring line
// breaks, never inside an escape entity.
func chunks(s string, n int) []string {
	var out []string
	for utf8.RuneCountInString(s) > n {
		cut := byteIndexOfRune(s, n)
		if i := strings.LastIndexByte(s[:cut], '\n'); i > cut/2 {
			cut = i + 1
		} else if i := strings.LastIndexByte(s[:cut], '&'); i > cut-8 && !strings.Contains(s[i:cut], ";") {
			cut = i
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	if strings.TrimSpace(s) != "" || len(out) == 0 {
		if s == "" {
			s = " "
		}
		out = append(out, s)
	}
	return out
}

func byteIndexOfRune(s string, n int) int {
	i := 0
	for j := range s {
		if i == n {
			return j
		}
		i++
	}
	return len(s)
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// translate maps slack-go errors to core's error kinds, without secrets.
func (a *Adapter) translate(method string, err error) error {
	var rl *slackapi.RateLimitedError
	if errors.As(err, &rl) {
		return &core.RateLimitError{RetryAfter: rl.RetryAfter, Err: a.scrub(err)}
	}
	var se slackapi.SlackErrorResponse
	if errors.As(err, &se) {
		var kind error
		switch se.Err {
		case "msg_too_long", "msg_blocks_too_long", "too_many_attachments":
			kind = core.ErrMessageTooLong
		case "invalid_blocks", "invalid_blocks_format", "markdown_text_conflict":
			kind = core.ErrFormatting
		case "message_not_found", "channel_not_found", "thread_not_found", "is_archived",
			"not_in_channel", "cant_update_message", "edit_window_closed", "user_not_in_channel":
			kind = core.ErrNotFound
		case "ratelimited":
			return &core.RateLimitError{RetryAfter: time.Second, Err: a.scrub(err)}
		case "file_upload_size_restricted":
			kind = core.ErrFileTooLarge
		}
		if kind != nil {
			return fmt.Errorf("slack %s: %s: %w", method, se.Err, kind)
		}
	}
	return fmt.Errorf("slack %s: %w", method, a.scrub(err))
}

// Notify posts an ephemeral message only user sees, in conv's thread.
func (a *Adapter) Notify(ctx context.Context, conv core.ConversationKey, user core.User, text string) error {
	opts := []slackapi.MsgOption{slackapi.MsgOptionText(escape(text), false)}
	if conv.Thread != "" {
		opts = append(opts, slackapi.MsgOptionTS(conv.Thread))
	}
	if _, err := a.api.PostEphemeralContext(ctx, conv.Channel, user.ID, opts...); err != nil {
		return a.translate("chat.postEphemeral", err)
	}
	return nil
}

// statusEvery bounds how often Typing calls assistant.threads.setStatus; the
// status lasts two minutes or until the bot posts in the thread.
const statusEvery = 20 * time.Second

// Typing shows "is thinking…" under the thread while a turn runs, with
// assistant.threads.setStatus. Where that method is unavailable (a
// workspace without the feature or scope) it marks the message that started
// the thread with an :eyes: reaction instead, once.
func (a *Adapter) Typing(ctx context.Context, conv core.ConversationKey) error {
	if conv.Thread == "" {
		return nil // the status lives on a thread
	}
	a.mu.Lock()
	if time.Since(a.typed[conv]) < statusEvery {
		a.mu.Unlock()
		return nil
	}
	if len(a.typed) > 1000 {
		for k, at := range a.typed {
			if time.Since(at) >= statusEvery {
				delete(a.typed, k)
			}
		}
	}
	a.typed[conv] = time.Now()
	noStatus := a.noStatus
	a.mu.Unlock()
	if noStatus {
		return a.react(ctx, conv)
	}
	err := a.api.SetAssistantThreadsStatusContext(ctx, slackapi.AssistantThreadsSetStatusParameters{
		ChannelID: conv.Channel, ThreadTS: conv.Thread, Status: "is thinking…",
	})
	if err == nil {
		return nil
	}
	var se slackapi.SlackErrorResponse
	if errors.As(err, &se) {
		switch se.Err {
		case "missing_scope", "not_allowed_token_type", "unknown_method", "method_not_supported_for_channel_type",
			"feature_not_enabled", "not_allowed", "invalid_arguments":
			a.mu.Lock()
			a.noStatus = true
			a.mu.Unlock()
			a.log.InfoContext(ctx, "thread status unavailable; using a reaction", "reason", se.Err)
			return a.react(ctx, conv)
		}
	}
	return a.translate("assistant.threads.setStatus", err)
}

// react adds :eyes: to the message that started conv's thread, once.
func (a *Adapter) react(ctx context.Context, conv core.ConversationKey) error {
	key := conv.Channel + ":" + conv.Thread
	if !a.recent.add("react:" + key) {
		return nil
	}
	err := a.api.AddReactionContext(ctx, "eyes", slackapi.NewRefToMessage(conv.Channel, conv.Thread))
	var se slackapi.SlackErrorResponse
	if err == nil || (errors.As(err, &se) && se.Err == "already_reacted") {
		return nil
	}
	return a.translate("reactions.add", err)
}

// FinalizeMessage implements core.MessageFinalizer: once a reply is final,
// the :eyes: reaction that stood in for the thread status comes off, so the
// next turn can show it again. (A thread status clears itself when the bot
// replies.)
func (a *Adapter) FinalizeMessage(ctx context.Context, ref core.MessageRef) error {
	conv := ref.Conv
	a.mu.Lock()
	delete(a.typed, conv) // the next turn's indicator starts afresh
	a.mu.Unlock()
	if !a.recent.remove("react:" + conv.Channel + ":" + conv.Thread) {
		return nil
	}
	err := a.api.RemoveReactionContext(ctx, "eyes", slackapi.NewRefToMessage(conv.Channel, conv.Thread))
	var se slackapi.SlackErrorResponse
	if err == nil || (errors.As(err, &se) && se.Err == "no_reaction") {
		return nil
	}
	return a.translate("reactions.remove", err)
}

// Download fetches a file shared with a message, with the bot token, into
// w. a.Source is the Slack file id; the private URL never leaves the adapter.
func (a *Adapter) Download(ctx context.Context, att core.Attachment, w io.Writer, max int64) error {
	f, _, _, err := a.api.GetFileInfoContext(ctx, att.Source, 0, 0)
	if err != nil {
		return a.translate("files.info", err)
	}
	if int64(f.Size) > max {
		return fmt.Errorf("slack file %s: %d bytes is over the %d byte limit", att.Source, f.Size, max)
	}
	u := f.URLPrivateDownload
	if u == "" {
		u = f.URLPrivate
	}
	lw := &limitWriter{w: w, left: max}
	if err := a.api.GetFileContext(ctx, u, lw); err != nil {
		if errors.Is(err, errTooBig) {
			return fmt.Errorf("slack file %s: over the %d byte limit", att.Source, max)
		}
		// The error may quote the private URL; keep it out.
		return fmt.Errorf("slack file %s: download failed: %w", att.Source, a.scrub(errors.New(strings.ReplaceAll(err.Error(), u, "<file url>"))))
	}
	return nil
}

var errTooBig = errors.New("file too big")

type limitWriter struct {
	w    io.Writer
	left int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.left {
		return 0, errTooBig
	}
	l.left -= int64(len(p))
	return l.w.Write(p)
}
