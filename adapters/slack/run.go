package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/agentbridge/agentbridge/core"
)

// Run authenticates, then receives events over the configured transport
// until ctx ends. Every envelope is acknowledged, then handed to h on the
// reader, in the order Slack delivered them (h only queues them). Once h
// reports draining (core.Drainer), message events are left unacknowledged
// so that Slack delivers them again, to the next instance; button presses
// (they answer turns still running) and slash commands (Slack does not
// redeliver them) are still taken.
func (a *Adapter) Run(ctx context.Context, h core.Handler) error {
	if err := a.authenticate(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	if a.opts.Mode == ModeEvents {
		return a.runEvents(ctx, h)
	}
	return a.runSocket(ctx, h)
}

// draining reports whether h has begun to drain.
func draining(h core.Handler) bool {
	select {
	case <-core.DrainSignal(h):
		return true
	default:
		return false
	}
}

// runSocket runs a Socket Mode connection; slack-go reconnects it with
// backoff and jitter on drops, ping timeouts and disconnect envelopes.
func (a *Adapter) runSocket(ctx context.Context, h core.Handler) error {
	sm := socketmode.New(a.api, socketmode.OptionPingInterval(a.opts.PingInterval))
	smCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- sm.RunContext(smCtx) }()
	for {
		select {
		case evt := <-sm.Events:
			a.socketEvent(ctx, sm, h, evt)
		case err := <-errc:
			if ctx.Err() != nil {
				return nil
			}
			if code, ok := fatalAuth(err); ok {
				return core.Fatal(fmt.Errorf("slack: the app token was rejected (%s): check slack.app_token", code))
			}
			return fmt.Errorf("slack: socket mode stopped: %w", a.scrub(err))
		}
	}
}

// socketEvent acks one Socket Mode event and hands it to h. While h drains,
// Events API envelopes (messages) are left unacknowledged: Slack redelivers
// them (with retry_attempt) to whichever connection takes them next.
func (a *Adapter) socketEvent(ctx context.Context, sm *socketmode.Client, h core.Handler, evt socketmode.Event) {
	ack := func() {
		if evt.Request == nil || evt.Request.EnvelopeID == "" {
			return
		}
		if err := sm.AckCtx(ctx, evt.Request.EnvelopeID, nil); err != nil && ctx.Err() == nil {
			a.log.WarnContext(ctx, "ack failed", "envelope", evt.Request.EnvelopeID, "err", a.scrub(err))
		}
	}
	held := func() bool {
		if !draining(h) {
			return false
		}
		if evt.Request != nil {
			a.log.DebugContext(ctx, "draining; envelope left for redelivery", "envelope", evt.Request.EnvelopeID)
		}
		return true
	}
	switch evt.Type {
	case socketmode.EventTypeEventsAPI:
		if held() {
			return
		}
		ack()
		ea, ok := evt.Data.(slackevents.EventsAPIEvent)
		if !ok {
			return
		}
		eventID := ""
		if cb, ok := ea.Data.(*slackevents.EventsAPICallbackEvent); ok {
			eventID = cb.EventID
		}
		a.eventsAPI(ctx, h, ea, eventID)
	case socketmode.EventTypeInteractive:
		ack()
		if cb, ok := evt.Data.(slackapi.InteractionCallback); ok {
			a.interaction(ctx, h, cb)
		}
	case socketmode.EventTypeSlashCommand:
		// Not held: Slack does not redeliver slash commands, and the
		// engine still answers commands while draining.
		ack()
		if cmd, ok := evt.Data.(slackapi.SlashCommand); ok {
			a.slashCommand(ctx, h, cmd)
		}
	case socketmode.EventTypeErrorBadMessage:
		// slack-go does not ack envelopes it cannot parse; Slack would
		// redeliver them forever.
		if bad, ok := evt.Data.(*socketmode.ErrorBadMessage); ok {
			var env struct {
				EnvelopeID string `json:"envelope_id"`
			}
			if json.Unmarshal(bad.Message, &env) == nil && env.EnvelopeID != "" {
				sm.AckCtx(ctx, env.EnvelopeID, nil)
			}
			a.log.WarnContext(ctx, "unreadable envelope", "err", bad.Cause)
		}
	case socketmode.EventTypeConnectionError:
		if ce, ok := evt.Data.(*slackapi.ConnectionErrorEvent); ok {
			a.log.WarnContext(ctx, "socket mode connect failed; retrying", "err", a.scrub(ce.ErrorObj), "backoff", ce.Backoff)
		}
	case socketmode.EventTypeConnected:
		a.log.InfoContext(ctx, "socket mode connected")
	}
}

// eventsAPI normalizes one Events API callback (from either transport).
func (a *Adapter) eventsAPI(ctx context.Context, h core.Handler, ea slackevents.EventsAPIEvent, eventID string) {
	if eventID != "" && !a.recent.add("event:"+ea.TeamID+":"+eventID) {
		return // a redelivery of an envelope already handled
	}
	team := ea.TeamID
	var in inbound
	switch ev := ea.InnerEvent.Data.(type) {
	case *slackevents.AppMentionEvent:
		in = inbound{team: team, user: ev.User, botID: ev.BotID, text: ev.Text, ts: ev.TimeStamp,
			thread: ev.ThreadTimeStamp, channel: ev.Channel, files: ev.Files, mention: true}
	case *slackevents.MessageEvent:
		switch ev.SubType {
		case "", "file_share", "thread_broadcast":
		case "message_changed", "message_deleted":
			// The message as it now reads, or as it read before it went:
			// core applies it to a queued turn (core.Message.Edits).
			msg := ev.Message
			if ev.SubType == "message_deleted" {
				msg = ev.PreviousMessage
			}
			if msg == nil {
				return
			}
			in = inbound{team: team, user: msg.User, botID: msg.BotID, text: msg.Text, ts: msg.Timestamp,
				thread: msg.ThreadTimestamp, channel: ev.Channel, channelType: ev.ChannelType, files: msg.Files,
				edit: true, deleted: ev.SubType == "message_deleted"}
			if in.deleted && ev.DeletedTimeStamp != "" {
				in.ts = ev.DeletedTimeStamp
			}
			if m, ok := a.normalize(ctx, in); ok {
				h.HandleMessage(ctx, m)
			}
			return
		default:
			return // joins, the bot's own bot_message…
		}
		in = inbound{team: team, user: ev.User, botID: ev.BotID, text: ev.Text, ts: ev.TimeStamp,
			thread: ev.ThreadTimeStamp, channel: ev.Channel, channelType: ev.ChannelType}
		if ev.Message != nil {
			in.files = ev.Message.Files
			if in.botID == "" {
				in.botID = ev.Message.BotID
			}
		}
		if ev.SubType == "bot_message" {
			in.fromBot = true
		}
	default:
		return
	}
	m, ok := a.normalize(ctx, in)
	if !ok {
		return
	}
	h.HandleMessage(ctx, m)
}

// inbound is a message event before normalization.
type inbound struct {
	team, user, botID, text, ts, thread, channel, channelType string
	files                                                     []slackapi.File
	mention, fromBot                                          bool
	// edit and deleted mark a change to the message ts (message_changed,
	// message_deleted): normalized to core.Message.Edits, with none of a
	// new message's effects.
	edit, deleted bool
}

// mentionRE matches a user mention, <@U123> or <@U123|name>. Compiled on
// first use: every agentbridge process links this package.
var mentionRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`<@([A-Z0-9]+)(\|[^>]*)?>`)
})

// normalize turns an inbound event into a core message, or reports false
// for messages the bridge does not answer.
func (a *Adapter) normalize(ctx context.Context, in inbound) (core.Message, bool) {
	team, botUser, botID := a.identity()
	if in.team == "" {
		in.team = team
	}
	if in.user == botUser || (in.botID != "" && in.botID == botID) {
		return core.Message{}, false // our own message
	}
	if (in.botID != "" || in.fromBot) && !a.opts.AllowBots {
		return core.Message{}, false
	}
	if in.user == "" || in.channel == "" || in.ts == "" {
		return core.Message{}, false
	}
	mentioned := in.mention
	for _, sm := range mentionRE().FindAllStringSubmatch(in.text, -1) {
		if sm[1] == botUser {
			mentioned = true
		}
	}
	isDM := in.channelType == "im" || strings.HasPrefix(in.channel, "D")
	conv := core.ConversationKey{Platform: a.opts.Name, Workspace: in.team, Channel: in.channel}
	switch {
	case isDM:
		conv.Thread = in.thread // one conversation per DM, or per thread when the user threads
	case in.thread != "":
		conv.Thread = in.thread
		if !mentioned && !a.inThread(ctx, conv) && !a.asked.has(a.threadCursor(conv)+"\x00"+in.user) {
			return core.Message{}, false // a thread the bot is not part of
		}
	default:
		if !mentioned {
			return core.Message{}, false // top-level channel chatter
		}
		conv.Thread = in.ts // the mention starts a thread
	}
	text := strings.TrimSpace(mentionRE().ReplaceAllStringFunc(in.text, func(s string) string {
		if sm := mentionRE().FindStringSubmatch(s); sm != nil && sm[1] == botUser {
			return ""
		}
		return s
	}))
	text = unescape(text)
	m := core.Message{
		Conv: conv,
		ID:   in.channel + ":" + in.ts,
		From: core.User{ID: in.user},
		Text: text,
		Time: tsTime(in.ts),
		// Slack keeps messages starting with "/" for its own slash
		// commands, so "@bot new" is how a command is typed without the
		// prefix.
		Addressed: mentioned,
	}
	for _, f := range in.files {
		kind := "file"
		switch {
		case strings.HasPrefix(f.Mimetype, "image/"):
			kind = "image"
		case strings.HasPrefix(f.Mimetype, "audio/") || f.MediaDisplayType == "audio":
			// An audio clip recorded in Slack (subtype slack_audio) says
			// audio in media_display_type even where its type is video/….
			kind = "audio"
		}
		m.Attachments = append(m.Attachments, core.Attachment{Kind: kind, Name: f.Name, MIME: f.Mimetype,
			Size: int64(f.Size), Source: f.ID, Duration: time.Duration(f.DurationMs) * time.Millisecond})
	}
	if in.edit {
		m.Edits, m.Deleted, m.ID = m.ID, in.deleted, ""
		return m, true
	}
	// Answers meant for the author alone (a refusal) are ephemeral.
	m.Reply = a.privateReply(ctx, conv, m.From)
	if !isDM {
		// The bot takes part in the thread once core accepts a message in
		// it: a stranger's mention records nothing. Until then the
		// mention's author's next messages in the thread go to core too,
		// so a quick follow-up is not lost while core decides.
		asked := a.threadCursor(conv) + "\x00" + in.user
		if mentioned {
			a.asked.add(asked)
		}
		m.Accepted = func() {
			a.joinThread(ctx, conv)
			a.asked.remove(asked)
		}
	}
	a.noteRequester(conv, in.user)
	return m, true
}

// unescape undoes Slack's escaping of & < > in message text.
func unescape(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
}

// tsTime parses a Slack ts ("1700000000.000100").
func tsTime(ts string) time.Time {
	sec, frac, _ := strings.Cut(ts, ".")
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Time{}
	}
	us, _ := strconv.ParseInt(frac, 10, 64)
	return time.Unix(s, us*1000)
}

// threadCursor names the store entry that marks a thread as the bot's;
// each account has its own.
func (a *Adapter) threadCursor(conv core.ConversationKey) string {
	return a.opts.Name + "/thread/" + conv.Workspace + "/" + conv.Channel + "/" + conv.Thread
}

// joinThread records that the bot takes part in conv's thread: in the
// store (once), and in the cache.
func (a *Adapter) joinThread(ctx context.Context, conv core.ConversationKey) {
	key := a.threadCursor(conv)
	if a.threads.touch(key, time.Now()) || a.opts.Store == nil {
		return
	}
	if err := a.opts.Store.SetCursor(ctx, key, "1"); err != nil {
		a.log.WarnContext(ctx, "could not remember thread", "conv", conv, "err", err)
	}
}

// inThread reports whether the bot takes part in conv's thread.
func (a *Adapter) inThread(ctx context.Context, conv core.ConversationKey) bool {
	key := a.threadCursor(conv)
	if a.threads.has(key, time.Now()) {
		return true
	}
	if a.opts.Store == nil {
		return false
	}
	v, err := a.opts.Store.Cursor(ctx, key)
	if err != nil || v == "" {
		return false
	}
	a.threads.touch(key, time.Now())
	return true
}

// interaction turns a button press into a core action.
func (a *Adapter) interaction(ctx context.Context, h core.Handler, cb slackapi.InteractionCallback) {
	if cb.Type != slackapi.InteractionTypeBlockActions || len(cb.ActionCallback.BlockActions) == 0 {
		return
	}
	team, _, _ := a.identity()
	if cb.Team.ID != "" {
		team = cb.Team.ID
	}
	channel := cb.Channel.ID
	if channel == "" {
		channel = cb.Container.ChannelID
	}
	thread := cb.Container.ThreadTs
	if thread == "" {
		thread = cb.Message.ThreadTimestamp
	}
	msgTS := cb.Container.MessageTs
	if msgTS == "" || channel == "" {
		return
	}
	conv := core.ConversationKey{Platform: a.opts.Name, Workspace: team, Channel: channel, Thread: thread}
	for _, ba := range cb.ActionCallback.BlockActions {
		if !strings.HasPrefix(ba.ActionID, actionPrefix) {
			continue
		}
		if !a.recent.add("press:" + channel + ":" + msgTS + ":" + cb.User.ID + ":" + ba.ActionTs) {
			continue
		}
		user := core.User{ID: cb.User.ID, Name: cb.User.Name}
		h.HandleAction(ctx, core.Action{
			Conv: conv, From: user, Value: ba.Value,
			Ref:   core.MessageRef{Conv: conv, ID: msgTS},
			Reply: a.privateReply(ctx, conv, user),
		})
	}
}

// privateReply answers user with an ephemeral message in conv: core's
// private answers (a refusal, an answer to a press). The "" a press gets
// when core has nothing to say needs no answer: the press was acked.
func (a *Adapter) privateReply(ctx context.Context, conv core.ConversationKey, user core.User) core.PrivateReply {
	return func(text string) {
		if text == "" {
			return
		}
		if err := a.Notify(context.WithoutCancel(ctx), conv, user, text); err != nil {
			a.log.WarnContext(ctx, "private reply failed", "conv", conv, "err", err)
		}
	}
}

// slashCommand delivers a registered slash command ("/agent new") as a
// message, so the engine handles it like typed text.
func (a *Adapter) slashCommand(ctx context.Context, h core.Handler, cmd slackapi.SlashCommand) {
	team := cmd.TeamID
	if team == "" {
		team, _, _ = a.identity()
	}
	text := strings.TrimSpace(cmd.Text)
	if text == "" {
		text = "help" // a bare "/agent"
	}
	conv := core.ConversationKey{Platform: a.opts.Name, Workspace: team, Channel: cmd.ChannelID}
	from := core.User{ID: cmd.UserID, Name: cmd.UserName}
	h.HandleMessage(ctx, core.Message{
		Conv: conv,
		ID:   "cmd:" + cmd.TriggerID,
		From: from,
		Text: text,
		Time: time.Now(),
		// "/agent new": the text is a bare command word.
		Addressed: true,
		Reply:     a.privateReply(ctx, conv, from),
	})
}

// UsageHint is the slash command's usage hint in the app manifest: the
// bridge's commands (core.Commands) with their arguments.
func UsageHint() string {
	words := make([]string, 0, len(core.Commands))
	for _, c := range core.Commands {
		words = append(words, strings.TrimSpace(c.Name+" "+c.Arg))
	}
	return strings.Join(words, " | ")
}
