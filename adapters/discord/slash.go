package discord

import (
	"context"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	discordgo "github.com/bwmarrin/discordgo"

	"github.com/agentbridge/agentbridge/core"
)

// SlashCommand is the name of the application command the adapter
// registers: "/agent status", "/agent session name:work", …
const SlashCommand = "agent"

// argOption names the string option carrying a subcommand's argument:
// "/agent session name:work".
const argOption = "name"

// defaultPrefix is Discord's command_prefix default in the config.
const defaultPrefix = "!"

// applicationCommands is the body of the bulk overwrite: one /agent
// command with a subcommand per bridge command (core.Commands); a
// command's argument is its string option "name", whose choices are
// profiles for a command that takes a profile. global adds the contexts
// (servers and DMs with the bot) that only global commands take.
func applicationCommands(global bool, profiles []string) []*discordgo.ApplicationCommand {
	cmd := &discordgo.ApplicationCommand{
		Name:        SlashCommand,
		Type:        discordgo.ChatApplicationCommand,
		Description: "Control the agent bridge in this conversation",
	}
	if global {
		cmd.Contexts = &[]discordgo.InteractionContextType{discordgo.InteractionContextGuild, discordgo.InteractionContextBotDM}
	}
	one := 1
	for _, c := range core.Commands {
		opt := &discordgo.ApplicationCommandOption{
			Type:        discordgo.ApplicationCommandOptionSubCommand,
			Name:        c.Name,
			Description: sentence(c.Description),
		}
		if c.Arg != "" {
			arg := &discordgo.ApplicationCommandOption{
				Type:        discordgo.ApplicationCommandOptionString,
				Name:        argOption,
				Description: sentence(c.ArgDescription),
				MinLength:   &one,
				MaxLength:   64,
				Required:    c.ArgRequired,
			}
			// Discord takes at most 25 choices; a choice list is only
			// worth it with something to choose.
			if c.ArgProfile && len(profiles) >= 2 && len(profiles) <= 25 {
				for _, p := range profiles {
					arg.Choices = append(arg.Choices, &discordgo.ApplicationCommandOptionChoice{Name: p, Value: p})
				}
			}
			opt.Options = []*discordgo.ApplicationCommandOption{arg}
		}
		cmd.Options = append(cmd.Options, opt)
	}
	return []*discordgo.ApplicationCommand{cmd}
}

// registerCommands overwrites the application's /agent command in every
// configured guild (instant), or globally when none is configured (Discord
// may take a while to show it everywhere). Failures are logged: slash
// commands are a convenience, typed commands keep working.
func (a *Adapter) registerCommands(ctx context.Context, appID string) {
	guilds := a.opts.SlashGuilds
	if len(guilds) == 0 {
		guilds = []string{""}
	}
	for _, g := range guilds {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := a.sess.ApplicationCommandBulkOverwrite(appID, g, applicationCommands(g == "", a.opts.SlashProfiles),
			discordgo.WithContext(rctx), discordgo.WithRetryOnRatelimit(false))
		cancel()
		where := "globally"
		if g != "" {
			where = "in guild " + g
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			a.log.Warn("registering the /"+SlashCommand+" slash command failed; typed commands still work",
				"where", where, "err", a.translate("register commands", err))
			continue
		}
		a.log.Info("registered the /"+SlashCommand+" slash command", "where", where)
	}
}

// slashReply is the deferred response of one slash command. The first
// notice the engine sends answering the command (through Message.Answer)
// becomes that response; anything else is posted normally.
type slashReply struct {
	i    *discordgo.Interaction
	conv core.ConversationKey

	mu   sync.Mutex
	used bool
}

// take claims the response once.
func (r *slashReply) take() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.used {
		return false
	}
	r.used = true
	return true
}

// respond fills the deferred response with p (interaction routes are
// outside the channel budget), reporting false (so the engine posts in the
// channel instead) when Discord refuses, e.g. after the interaction
// token's 15 minutes.
func (a *Adapter) respond(ctx context.Context, r *slashReply, p core.Post) (core.MessageRef, bool) {
	text := content(p)
	edit := &discordgo.WebhookEdit{Content: &text, AllowedMentions: noMentions()}
	if comps := components(p.Buttons); comps != nil {
		edit.Components = &comps // the /agent menu's buttons
	}
	m, err := a.sess.InteractionResponseEdit(r.i, edit,
		discordgo.WithContext(ctx), discordgo.WithRetryOnRatelimit(false))
	if err != nil {
		a.log.Warn("answering a slash command failed; posting in the channel", "conv", r.conv, "err", a.translate("edit interaction response", err))
		return core.MessageRef{}, false
	}
	id := "@original"
	if m != nil && m.ID != "" {
		id = m.ID
	}
	return core.MessageRef{Conv: r.conv, ID: id}, true
}

// slashCommand answers an /agent interaction within Discord's 3 s with a
// deferred response, hands the command to core as the text a user would
// type ("!session work"), and makes the engine's first notice the
// response. Access stays core's decision: a stranger's command gets
// core's refusal in the same place.
func (in *inbound) slashCommand(i *discordgo.Interaction) {
	a := in.a
	data := i.ApplicationCommandData()
	user := i.User
	if i.Member != nil && i.Member.User != nil {
		user = i.Member.User
	}
	if user == nil {
		return
	}
	cmd, arg, known := slashText(data)
	c, _ := core.LookupCommand(cmd)
	actx, cancel := context.WithTimeout(in.ctx, 3*time.Second)
	defer cancel()
	if !known {
		// Only an outdated registration sends these; say so instead of
		// leaving "The application did not respond".
		err := a.sess.InteractionRespond(i, &discordgo.InteractionResponse{
			Type: discordgo.InteractionResponseChannelMessageWithSource,
			Data: &discordgo.InteractionResponseData{Content: "This command is not known to the bridge any more.",
				Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: noMentions()},
		}, discordgo.WithContext(actx), discordgo.WithRetryOnRatelimit(false))
		if err != nil {
			a.log.Warn("answering an unknown slash command failed", "err", a.scrub(err))
		}
		return
	}
	var flags discordgo.MessageFlags
	if c.Private(arg) {
		flags = discordgo.MessageFlagsEphemeral
	}
	err := a.sess.InteractionRespond(i, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseDeferredChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Flags: flags},
	}, discordgo.WithContext(actx), discordgo.WithRetryOnRatelimit(false))
	cancel()

	conv := core.ConversationKey{Platform: a.opts.Name, Channel: i.ChannelID}
	if i.GuildID != "" {
		conv = a.conv(in.ctx, i.GuildID, i.ChannelID)
	}
	text := a.prefix() + cmd
	if arg != "" {
		text += " " + arg
	}
	msg := core.Message{
		Conv: conv,
		ID:   i.ID, // interaction ids are snowflakes, unique like message ids
		From: core.User{ID: user.ID, Name: displayName(user, i.Member)},
		Text: text,
		Time: time.Now(),
	}
	if err != nil {
		// Without an acknowledged interaction the token is useless: the
		// engine's answer goes to the channel as a normal message.
		a.log.Warn("acknowledging a slash command failed; answering in the channel", "err", a.scrub(err))
		in.h.HandleMessage(in.ctx, msg)
		return
	}
	r := &slashReply{i: i, conv: conv}
	msg.Handled = func() {
		if !r.take() {
			return
		}
		// The engine answers later (a command that waits for the running
		// turn) or not at all (stop lets the turn say "Stopped."): replace
		// "thinking…" with where the answer will be.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(in.ctx), 10*time.Second)
		defer cancel()
		ack := "Sent " + escapePlain(text) + " to the bridge; its answer follows in this channel."
		if _, err := a.sess.InteractionResponseEdit(i, &discordgo.WebhookEdit{Content: &ack, AllowedMentions: noMentions()},
			discordgo.WithContext(ctx), discordgo.WithRetryOnRatelimit(false)); err != nil {
			a.log.Warn("acknowledging a slash command failed", "conv", conv, "err", a.translate("edit interaction response", err))
		}
	}
	// The engine's first notice answering msg becomes the response;
	// Handled closes it otherwise.
	msg.Answer = func(ctx context.Context, p core.Post) (core.MessageRef, bool) {
		if !r.take() {
			return core.MessageRef{}, false
		}
		return a.respond(ctx, r, p)
	}
	in.h.HandleMessage(in.ctx, msg)
}

// slashText reads "/agent SUB [name:ARG]" from an interaction: the bridge
// command and its argument, or false for any other command.
func slashText(d discordgo.ApplicationCommandInteractionData) (cmd, arg string, ok bool) {
	if d.Name != SlashCommand || len(d.Options) != 1 || d.Options[0] == nil {
		return "", "", false
	}
	sub := d.Options[0]
	for _, c := range core.Commands {
		if c.Name != sub.Name {
			continue
		}
		if c.Arg != "" {
			for _, o := range sub.Options {
				if o != nil && o.Name == argOption {
					if s, isString := o.Value.(string); isString {
						// Whitespace collapsed: a newline must not smuggle a
						// second line into the command text.
						arg = strings.Join(strings.Fields(s), " ")
					}
				}
			}
		}
		return c.Name, arg, true
	}
	return "", "", false
}

func (a *Adapter) prefix() string {
	if a.opts.CommandPrefix == "" {
		return defaultPrefix
	}
	return a.opts.CommandPrefix
}

// sentence capitalizes a description's first letter, as Discord's own
// commands are described.
func sentence(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}
