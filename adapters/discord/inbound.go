package discord

import (
	"context"
	"strings"
	"sync"
	"time"

	discordgo "github.com/bwmarrin/discordgo"

	"github.com/agentbridge/agentbridge/core"
)

// normalizeWait bounds the REST calls normalizing a message may make on the
// gateway reader (a channel lookup the state cache missed, starting a
// thread), so a slow one cannot hold every channel's events for long.
const normalizeWait = 5 * time.Second

// inbound turns gateway events into calls of the core handler. discordgo
// calls message and interaction synchronously (SyncEvents) from its reader:
// messages are handed to core there, in the order the gateway delivered
// them (core only queues them); interactions must be acknowledged over
// REST within 3 s, so each is acknowledged, then handed over, from a
// goroutine of its own.
type inbound struct {
	ctx context.Context
	a   *Adapter
	h   core.Handler
	wg  sync.WaitGroup
}

func newInbound(ctx context.Context, a *Adapter, h core.Handler) *inbound {
	return &inbound{ctx: ctx, a: a, h: h}
}

// wait returns when every interaction goroutine has finished.
func (in *inbound) wait() { in.wg.Wait() }

// message hands m to core.
func (in *inbound) message(m *discordgo.Message) {
	if m == nil || m.Author == nil || in.ctx.Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(in.ctx, normalizeWait)
	msg, ok := in.a.normalize(ctx, m)
	cancel()
	if !ok {
		return
	}
	in.a.noteUserMsg(m.ID, m.ChannelID)
	in.a.handed.put(m.ID, msg.Conv)
	in.h.HandleMessage(in.ctx, msg)
}

// change hands core an edit (MESSAGE_UPDATE) or the deletion
// (MESSAGE_DELETE) of a message it was handed, on that message's
// conversation (core.Message.Edits). An update that is not an edit (an
// embed unfurled: no edited_timestamp) is not one.
func (in *inbound) change(m *discordgo.Message, deleted bool) {
	if m == nil || in.ctx.Err() != nil {
		return
	}
	conv, ok := in.a.handed.get(m.ID)
	if !ok {
		return // never core's: its own, another bot's, chatter
	}
	msg := core.Message{Conv: conv, Edits: m.ID, Deleted: deleted}
	if !deleted {
		if m.EditedTimestamp == nil || m.Author == nil {
			return
		}
		msg.From = core.User{ID: m.Author.ID, Name: displayName(m.Author, m.Member)}
		msg.Text = stripMention(m.Content, in.a.botUser())
		msg.Attachments = attachments(m)
	}
	in.h.HandleMessage(in.ctx, msg)
}

// interaction acknowledges a button press within Discord's 3 s (a deferred
// update: the prompt is edited once core decides) and hands it to core;
// slash commands go to slashCommand.
func (in *inbound) interaction(i *discordgo.Interaction) {
	if i == nil || in.ctx.Err() != nil {
		return
	}
	if i.Type == discordgo.InteractionApplicationCommand {
		in.wg.Go(func() { in.slashCommand(i) })
		return
	}
	if i.Type != discordgo.InteractionMessageComponent {
		return
	}
	in.wg.Go(func() {
		a := in.a
		ctx, cancel := context.WithTimeout(in.ctx, 3*time.Second)
		err := a.sess.InteractionRespond(i, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate},
			discordgo.WithContext(ctx), discordgo.WithRetryOnRatelimit(false))
		cancel()
		if err != nil {
			// The press still happened; core decides, the presser just saw
			// "interaction failed".
			a.log.Warn("acknowledging a button press failed", "err", a.scrub(err))
		}
		act, ok := a.action(in.ctx, i)
		if !ok {
			return
		}
		in.h.HandleAction(in.ctx, act)
	})
}

// action normalizes a component interaction.
func (a *Adapter) action(ctx context.Context, i *discordgo.Interaction) (core.Action, bool) {
	user := i.User
	if i.Member != nil && i.Member.User != nil {
		user = i.Member.User
	}
	if user == nil || i.Message == nil {
		return core.Action{}, false
	}
	conv := a.conv(ctx, i.GuildID, i.ChannelID)
	return core.Action{
		Conv:  conv,
		From:  core.User{ID: user.ID, Name: displayName(user, i.Member)},
		Value: i.MessageComponentData().CustomID,
		Ref:   core.MessageRef{Conv: conv, ID: i.Message.ID},
		Reply: func(text string) {
			if text == "" {
				return // nothing to say: the press was acknowledged
			}
			// An ephemeral follow-up: only the presser sees it.
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			_, err := a.sess.FollowupMessageCreate(i, false, &discordgo.WebhookParams{
				Content:         escapePlain(text),
				Flags:           discordgo.MessageFlagsEphemeral,
				AllowedMentions: noMentions(),
			}, discordgo.WithContext(ctx), discordgo.WithRetryOnRatelimit(false))
			if err != nil {
				a.log.Warn("private answer to a button press failed", "err", a.scrub(err))
			}
		},
	}, true
}

// normalize turns a message into a core.Message, or reports false for one
// the bridge must not answer: its own and other bots' messages, system
// messages, and guild messages that neither mention the bot, reply to it,
// nor sit in a thread the bot owns.
func (a *Adapter) normalize(ctx context.Context, m *discordgo.Message) (core.Message, bool) {
	bot := a.botUser()
	if m.Author.Bot || m.Author.ID == bot || m.WebhookID != "" {
		return core.Message{}, false
	}
	if m.Type != discordgo.MessageTypeDefault && m.Type != discordgo.MessageTypeReply {
		return core.Message{}, false
	}
	mentioned := false
	for _, u := range m.Mentions {
		if u != nil && u.ID == bot {
			mentioned = true
		}
	}
	if m.ReferencedMessage != nil && m.ReferencedMessage.Author != nil && m.ReferencedMessage.Author.ID == bot {
		mentioned = true
	}
	var conv core.ConversationKey
	var accepted func()
	switch {
	case m.GuildID == "":
		conv = core.ConversationKey{Platform: a.opts.Name, Channel: m.ChannelID}
	default:
		conv = a.conv(ctx, m.GuildID, m.ChannelID)
		ownThread := conv.Thread != "" && a.channelOwner(ctx, m.ChannelID) == bot
		if !mentioned && !(ownThread && a.opts.MessageContent) {
			return core.Message{}, false
		}
		if until, _ := a.threadless.get(m.ChannelID); a.opts.ThreadPerMention && conv.Thread == "" && time.Now().After(until) {
			// The thread is opened only once the engine accepts the
			// message, so a stranger opens none; its id is known now:
			// Discord gives a thread started from a message the message's
			// id. Until it is open, the conversation's posts go to the
			// channel (a stranger's refusal).
			conv.Thread = m.ID
			if _, known := a.unopened.get(m.ID); !known {
				// Not a redelivery of a mention whose thread is open.
				a.unopened.put(m.ID, true)
			}
			accepted = func() {
				ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), normalizeWait)
				defer cancel()
				if err := a.startThread(ctx, m); err != nil {
					a.threadless.put(m.ChannelID, time.Now().Add(threadlessFor))
					a.log.Warn("could not start a thread; answering in the channel, and its next mentions share the channel's conversation for a while",
						"conv", conv, "err", err, "for", threadlessFor)
				}
			}
		}
	}
	msg := core.Message{
		Conv: conv,
		ID:   m.ID, // snowflakes are unique across Discord
		From: core.User{ID: m.Author.ID, Name: displayName(m.Author, m.Member)},
		Text: stripMention(m.Content, bot),
		Time: m.Timestamp,
		// "@bot new" is the new command, which needs no message-content
		// intent (Discord shows a bot the messages that mention it).
		Addressed: mentioned,
		Accepted:  accepted,
	}
	msg.Attachments = attachments(m)
	return msg, true
}

// attachments are m's files for core.
func attachments(m *discordgo.Message) []core.Attachment {
	var out []core.Attachment
	voice := m.Flags&discordgo.MessageFlagsIsVoiceMessage != 0
	for _, at := range m.Attachments {
		if at == nil {
			continue
		}
		kind := "file"
		switch {
		case strings.HasPrefix(at.ContentType, "image/"):
			kind = "image"
		case voice || strings.HasPrefix(at.ContentType, "audio/"):
			// A voice message (flag IS_VOICE_MESSAGE) is one audio/ogg
			// attachment with its duration_secs and waveform.
			kind = "audio"
		}
		out = append(out, core.Attachment{
			Kind: kind, Name: at.Filename, MIME: at.ContentType, Size: int64(at.Size), Source: at.URL,
			Duration: time.Duration(at.DurationSecs * float64(time.Second)),
		})
	}
	return out
}

// conv returns the conversation key of a guild channel: a thread is keyed
// under its parent channel, so access lists name channels and
// session_scope: thread keeps each thread's session apart.
func (a *Adapter) conv(ctx context.Context, guild, channel string) core.ConversationKey {
	k := core.ConversationKey{Platform: a.opts.Name, Workspace: guild, Channel: channel}
	if guild == "" {
		return k
	}
	if c := a.channelInfo(ctx, channel); c != nil && c.IsThread() && c.ParentID != "" {
		k.Channel, k.Thread = c.ParentID, channel
	}
	return k
}

// channelInfo looks a channel up in the gateway state, then over REST,
// caching the answer; nil when neither knows it.
func (a *Adapter) channelInfo(ctx context.Context, id string) *discordgo.Channel {
	a.mu.Lock()
	c, ok := a.info[id]
	a.mu.Unlock()
	if ok {
		return c
	}
	if st := a.sess.State; st != nil {
		if c, err := st.Channel(id); err == nil {
			return c
		}
	}
	c, err := a.sess.Channel(id, discordgo.WithContext(ctx), discordgo.WithRetryOnRatelimit(false))
	if err != nil {
		a.log.Debug("channel lookup failed", "channel", id, "err", a.scrub(err))
		return nil
	}
	a.remember(c)
	return c
}

func (a *Adapter) remember(c *discordgo.Channel) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.info) > 10000 { // a cache, not a registry
		clear(a.info)
	}
	a.info[c.ID] = c
}

func (a *Adapter) channelOwner(ctx context.Context, id string) string {
	if c := a.channelInfo(ctx, id); c != nil {
		return c.OwnerID
	}
	return ""
}

// startThread opens a thread on m; its id is m's.
// threadlessFor is how long a channel where Discord refused to open a
// thread is not asked again: long enough not to try on every mention,
// short enough that a permission granted later soon takes effect.
const threadlessFor = 10 * time.Minute

func (a *Adapter) startThread(ctx context.Context, m *discordgo.Message) error {
	name := strings.Join(strings.Fields(stripMention(m.Content, a.botUser())), " ")
	if r := []rune(name); len(r) > 90 {
		name = string(r[:90]) + "…"
	}
	if name == "" {
		name = "agent"
	}
	th, err := a.sess.MessageThreadStartComplex(m.ChannelID, m.ID, &discordgo.ThreadStart{Name: name, AutoArchiveDuration: 1440},
		discordgo.WithContext(ctx), discordgo.WithRetryOnRatelimit(false))
	if err != nil {
		return a.translate("start thread", err)
	}
	if th.ParentID == "" {
		th.ParentID = m.ChannelID
	}
	if th.OwnerID == "" {
		th.OwnerID = a.botUser()
	}
	a.remember(th)
	a.unopened.put(m.ID, false) // open: a redelivered m leaves it so
	return nil
}

func displayName(u *discordgo.User, m *discordgo.Member) string {
	switch {
	case m != nil && m.Nick != "":
		return m.Nick
	case u.GlobalName != "":
		return u.GlobalName
	}
	return u.Username
}

// stripMention removes the bot's mentions from text.
func stripMention(text, bot string) string {
	if bot != "" {
		text = strings.ReplaceAll(text, "<@"+bot+">", "")
		text = strings.ReplaceAll(text, "<@!"+bot+">", "")
	}
	return strings.TrimSpace(text)
}
