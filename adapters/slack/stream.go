package slack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	slackapi "github.com/slack-go/slack"

	"github.com/agentbridge/agentbridge/adapters/internal/pace"
	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/render"
)

// maxStreamChunk bounds the Markdown one streaming call carries, in UTF-16
// units before defusing. Slack takes 12,000 characters of markdown_text per
// call; defusing adds at most one invisible character per two (a "<!"), so
// 8,000 stays under the limit whatever the text.
const maxStreamChunk = 8000

// maxRequesters bounds the remembered requesters; the map is cleared when
// it grows past this (a forgotten thread falls back to post and edit).
const maxRequesters = 10000

var _ core.Streamer = (*Adapter)(nil)

// requester is who asked last in a conversation: Slack wants the recipient
// of a stream in channels.
type requester struct{ user, team string }

// noteRequester remembers who wrote m, for StartStream.
func (a *Adapter) noteRequester(conv core.ConversationKey, user string) {
	if !a.opts.NativeStreaming || conv.Thread == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.requesters) >= maxRequesters {
		clear(a.requesters)
	}
	a.requesters[conv] = requester{user: user, team: conv.Workspace}
}

// StartStream implements core.Streamer: with Options.NativeStreaming, a
// reply in a thread is streamed with chat.startStream, addressed to the
// last person who wrote in the thread. Elsewhere (option off, not a thread,
// no known requester in a channel, or a workspace without the feature) it
// returns nil and the presenter posts and edits.
func (a *Adapter) StartStream(ctx context.Context, conv core.ConversationKey) (core.Stream, error) {
	if !a.opts.NativeStreaming || conv.Thread == "" {
		return nil, nil
	}
	a.mu.Lock()
	req, known := a.requesters[conv]
	off := a.noStream
	a.mu.Unlock()
	isDM := strings.HasPrefix(conv.Channel, "D")
	if off || (!known && !isDM) {
		return nil, nil
	}
	opts := []slackapi.MsgOption{slackapi.MsgOptionTS(conv.Thread)}
	if known {
		opts = append(opts, slackapi.MsgOptionRecipientUserID(req.user), slackapi.MsgOptionRecipientTeamID(req.team))
	}
	// The stream is a new message in the channel: it waits its turn with
	// chat.postMessage.
	posts := a.posts.Get(conv.Channel)
	if err := posts.Take(ctx, conv.String(), core.PriorityInterim); err != nil {
		return nil, fmt.Errorf("slack chat.startStream: %w", err)
	}
	_, ts, err := a.api.StartStreamContext(ctx, conv.Channel, opts...)
	if err != nil {
		hold(posts, a.translate("chat.startStream", err))
		var se slackapi.SlackErrorResponse
		if errors.As(err, &se) {
			switch se.Err {
			case "unknown_method", "missing_scope", "not_allowed_token_type", "feature_not_enabled",
				"method_not_supported_for_channel_type", "not_allowed":
				// This workspace cannot stream; stop asking.
				a.mu.Lock()
				a.noStream = true
				a.mu.Unlock()
				a.log.InfoContext(ctx, "native streaming unavailable; posting and editing", "reason", se.Err)
				return nil, nil
			}
		}
		return nil, a.translate("chat.startStream", err)
	}
	if ts == "" {
		return nil, errors.New("slack chat.startStream: no ts in the answer")
	}
	return &stream{a: a, ref: core.MessageRef{Conv: conv, ID: ts}}, nil
}

// stream is one chat.startStream message. Its methods are called from one
// goroutine (core.Stream).
type stream struct {
	a   *Adapter
	ref core.MessageRef
	// carry is the end of text already accepted that might begin a mention
	// (a "<"): it is held back until the next call shows what
	// follows, so the mention can be defused.
	carry string
	// sent is how many bytes of carry+markdown an earlier, failed call
	// already delivered: the presenter sends the same text again (and
	// more), and those bytes must not appear twice.
	sent int
	// stopped is set once chat.stopStream succeeded.
	stopped bool
}

// Ref names the streamed message.
func (s *stream) Ref() core.MessageRef { return s.ref }

// Append sends markdown with chat.appendStream, split under Slack's
// per-call limit, mention syntax defused (render.DefuseMentions). When the workspace's append budget
// (Tier 4) is spent it returns a *core.RateLimitError without calling Slack.
func (s *stream) Append(ctx context.Context, markdown string) error {
	if s.stopped {
		return errors.New("slack chat.appendStream: the stream is stopped")
	}
	full := s.carry + markdown
	s.sent = min(s.sent, len(full))
	cut := holdFrom(full)
	if err := s.deliver(ctx, full, cut, false); err != nil {
		return err
	}
	s.carry, s.sent = full[cut:], 0
	return nil
}

// Stop sends markdown (and anything held back) and ends the stream with
// chat.stopStream.
func (s *stream) Stop(ctx context.Context, markdown string) error {
	if s.stopped {
		return nil
	}
	full := s.carry + markdown
	s.sent = min(s.sent, len(full))
	if err := s.deliver(ctx, full, len(full), true); err != nil {
		return err
	}
	s.carry, s.sent, s.stopped = "", 0, true
	return nil
}

// deliver sends full[s.sent:end] in chunks with chat.appendStream, or, when
// stop is set, the last chunk with chat.stopStream. Progress is kept in
// s.sent, so a call that fails midway resumes where it broke off.
func (s *stream) deliver(ctx context.Context, full string, end int, stop bool) error {
	prio := core.PriorityInterim // appended text: the stream goes on
	if stop {
		prio = core.PriorityFinal // the reply's end: nothing replaces it
	}
	for {
		rest := full[s.sent:end]
		if rest == "" && !stop {
			return nil
		}
		n := chunkLen(rest, maxStreamChunk)
		last := n == len(rest)
		text := render.DefuseMentions(rest[:n])
		budget := s.a.streams.Get(s.ref.Conv.Workspace)
		if err := budget.Claim(ctx, s.ref.Conv.String(), prio, 0); err != nil {
			return err
		}
		var err error
		if stop && last {
			var opts []slackapi.MsgOption
			if text != "" {
				opts = append(opts, slackapi.MsgOptionMarkdownText(text))
			}
			_, _, err = s.a.api.StopStreamContext(ctx, s.ref.Conv.Channel, s.ref.ID, opts...)
			err = s.a.streamErr(budget, "chat.stopStream", err)
		} else {
			_, _, err = s.a.api.AppendStreamContext(ctx, s.ref.Conv.Channel, s.ref.ID, slackapi.MsgOptionMarkdownText(text))
			err = s.a.streamErr(budget, "chat.appendStream", err)
		}
		if err != nil {
			return err
		}
		s.sent += n
		if last {
			return nil
		}
	}
}

// streamErr translates a streaming call's error; a 429 holds every stream
// in the workspace for its Retry-After.
func (a *Adapter) streamErr(budget *pace.Budget, method string, err error) error {
	if err == nil {
		return nil
	}
	var se slackapi.SlackErrorResponse
	if errors.As(err, &se) && (se.Err == "message_not_in_streaming_state" || se.Err == "message_not_owned_by_app") {
		return fmt.Errorf("slack %s: %s: %w", method, se.Err, core.ErrNotFound)
	}
	err = a.translate(method, err)
	hold(budget, err)
	return err
}

// chunkLen returns how many bytes of s go in one call of at most max UTF-16
// units: all of s if it fits, else a cut at a line break in the second
// half, never inside a rune nor just after a possible mention start.
func chunkLen(s string, max int) int {
	if render.Length(s) <= max {
		return len(s)
	}
	n, units := 0, 0
	for i, r := range s {
		u := 1
		if r >= 0x10000 {
			u = 2
		}
		if units+u > max {
			break
		}
		units += u
		n = i + utf8.RuneLen(r)
	}
	if i := strings.LastIndexByte(s[:n], '\n'); i >= n/2 {
		return i + 1
	}
	if h := holdFrom(s[:n]); h > 0 {
		return h
	}
	return n
}

// holdFrom returns len(s), or len(s)-1 when s ends in a "<" that the next
// text may turn into <!here>, <@U…> or <#C…>: that "<" is held back so the
// mention can be defused.
func holdFrom(s string) int {
	if strings.HasSuffix(s, "<") {
		return len(s) - 1
	}
	return len(s)
}
