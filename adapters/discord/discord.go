// Package discord is agentbridge's Discord adapter. It connects to the
// Discord gateway with github.com/bwmarrin/discordgo, turns messages in
// channels, threads and DMs into core.Messages and button presses into
// core.Actions, and sends, edits and types through the REST API under its
// own per-channel rate budget. REST and gateway traffic go through the
// session's HTTP client (and the gateway URL it discovers), so an api_url
// override never touches discordgo's package-level endpoint variables.
package discord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	discordgo "github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/pause"
	"github.com/agentbridge/agentbridge/core/render"
)

// Name is the adapter's platform name in conversation keys.
const Name = "discord"

// Limits the adapter reports; see Adapter.Limits.
const (
	// maxText leaves a margin under Discord's 2,000-character content limit
	// for the escapes plain text needs.
	maxText        = 1900
	editInterval   = time.Second // the channel bucket is about 5 per 5 s
	maxButtonValue = 100         // custom_id is 1–100 characters
	editWindow     = time.Hour   // older messages have a separate edit cap (30046)
	typingEvery    = 8 * time.Second
)

// Options configure an Adapter.
type Options struct {
	// Name is the adapter's Name(), the ConversationKey.Platform of its
	// conversations; default Name. Two bots served at once need two names.
	Name string
	// Token is the bot token, without the "Bot " prefix.
	Token core.Secret
	// APIURL, when set, receives all of the adapter's HTTP traffic (REST,
	// gateway discovery, attachment downloads) instead of discord.com and
	// its CDN; its path, if any, is prefixed to every request path.
	APIURL string
	// MessageContent requests the privileged MESSAGE_CONTENT intent. Without
	// it the bot answers mentions, replies to its messages, and DMs.
	MessageContent bool
	// ThreadPerMention opens a thread for each mention in a channel and
	// answers there.
	ThreadPerMention bool
	// CommandPrefix starts the engine's bridge commands ("!" when empty); a
	// slash command is handed to core as the text typed with it, e.g.
	// "/agent session name:work" as "!session work".
	CommandPrefix string
	// SlashCommands registers the /agent slash command when Run connects:
	// in each guild of SlashGuilds (shown at once), or globally when the
	// list is empty. A failure is logged, never fatal. /agent interactions
	// are answered either way, since an earlier run may have registered it.
	SlashCommands bool
	// SlashGuilds are the guild ids to register /agent in.
	SlashGuilds []string
	// SlashProfiles are offered as the choices of "/agent agent name:"
	// (when there are 2 to 25 of them; others can still be typed).
	SlashProfiles []string
}

// Adapter is the Discord core.Platform. Create it with New.
type Adapter struct {
	opts   Options
	log    *slog.Logger
	sess   *discordgo.Session
	client *http.Client
	rt     *transport

	mu     sync.Mutex
	typed  map[string]time.Time // last typing call, by channel
	sentAt map[string]time.Time // message id → when sent, for EditWindow
	// userMsgs maps users' recent message ids to their channel, so
	// replies point only at messages Discord accepts (see reply.go).
	userMsgs *recent[string]
	info     map[string]*discordgo.Channel // channel lookups
	// unopened holds the threads given to mentions (ThreadPerMention):
	// true while one is not open (until the engine accepts the mention,
	// and for good when Discord refused to open one), false once it is,
	// so a redelivered mention does not mark its open thread unopened.
	unopened *recent[bool]
	// threadless holds, per channel, until when ThreadPerMention is not
	// tried there because Discord refused to open a thread (no permission,
	// say): the channel's mentions share its conversation meanwhile, as
	// before the option, instead of each starting a session of its own.
	threadless *recent[time.Time]
	// handed maps the ids of messages handed to core to the conversation
	// they went to, so an edit or a deletion goes to the same one.
	handed *recent[core.ConversationKey]
	botID  string

	// conn is the gateway's current TCP connection, closed to abort a
	// blocking Open when Run's context ends; once aborted, dial refuses new
	// connections, so an Open that starts after the abort cannot block.
	connMu  sync.Mutex
	conn    net.Conn
	aborted bool
}

var (
	_ core.Platform   = (*Adapter)(nil)
	_ core.Typer      = (*Adapter)(nil)
	_ core.Downloader = (*Adapter)(nil)
)

// New returns an adapter for opts. It does no I/O; Run connects. log may be
// nil.
func New(opts Options, log *slog.Logger) (*Adapter, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Token.IsZero() {
		return nil, errors.New("discord: no bot token configured")
	}
	if opts.Name == "" {
		opts.Name = Name
	}
	if strings.HasPrefix(opts.Token.Reveal(), "Bot ") {
		opts.Token = core.Secret(strings.TrimPrefix(opts.Token.Reveal(), "Bot "))
	}
	var target *url.URL
	if opts.APIURL != "" {
		u, err := url.Parse(opts.APIURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("discord: api_url %q is not an http(s) URL", opts.APIURL)
		}
		target = u
	}
	sess, err := discordgo.New("Bot " + opts.Token.Reveal())
	if err != nil {
		return nil, fmt.Errorf("discord: create session: %w", err)
	}
	rt := newTransport(target, http.DefaultTransport)
	client := &http.Client{Transport: rt, Timeout: 30 * time.Second}
	a := &Adapter{
		opts:       opts,
		log:        log,
		sess:       sess,
		client:     client,
		rt:         rt,
		typed:      map[string]time.Time{},
		sentAt:     map[string]time.Time{},
		userMsgs:   newRecent[string](maxUserMsgs),
		info:       map[string]*discordgo.Channel{},
		unopened:   newRecent[bool](maxUserMsgs),
		threadless: newRecent[time.Time](maxUserMsgs),
		handed:     newRecent[core.ConversationKey](maxUserMsgs),
	}
	sess.Client = client
	sess.Dialer = &websocket.Dialer{
		Proxy:            http.ProxyFromEnvironment,
		HandshakeTimeout: 15 * time.Second,
		NetDialContext:   a.dial,
	}
	sess.ShouldRetryOnRateLimit = false // our budgets and the presenter wait instead
	sess.ShouldReconnectOnError = false // Run reconnects, and stops on fatal closes
	sess.SyncEvents = true              // handlers hand events to core in gateway order (see inbound)
	sess.StateEnabled = true
	sess.LogLevel = -1 // discordgo logs through the global log package; we log ourselves
	sess.Identify.Intents = discordgo.IntentsGuilds | discordgo.IntentsGuildMessages | discordgo.IntentsDirectMessages
	if opts.MessageContent {
		sess.Identify.Intents |= discordgo.IntentMessageContent
	}
	return a, nil
}

// Name implements core.Platform.
func (a *Adapter) Name() string { return a.opts.Name }

// Limits implements core.Platform.
func (a *Adapter) Limits() core.Limits {
	return core.Limits{
		MaxText:        maxText,
		EditInterval:   editInterval,
		MaxButtonValue: maxButtonValue,
		Dialect:        render.DiscordMarkdown,
		EditWindow:     editWindow,
		MaxFileBytes:   maxUpload,
	}
}

// fatalClose explains the gateway close codes that reconnecting cannot fix.
func fatalClose(code int) (string, bool) {
	switch code {
	case 4004:
		return "the gateway rejected the bot token (close 4004 authentication failed): check discord.token", true
	case 4010, 4011:
		return fmt.Sprintf("the gateway refused the shard settings (close %d)", code), true
	case 4012:
		return "the gateway refused the API version (close 4012)", true
	case 4013:
		return "the gateway refused the requested intents as invalid (close 4013)", true
	case 4014:
		return "the gateway refused a privileged intent the application may not use (close 4014 disallowed intents): " +
			"enable \"Message Content Intent\" for the bot in the Discord developer portal, or set discord.message_content: false", true
	}
	return "", false
}

// Run implements core.Platform: it checks the token, connects to the
// gateway, delivers events, and reconnects (resuming the session) with
// backoff and jitter until ctx ends. It returns an error only for a bad
// token or a fatal gateway close.
func (a *Adapter) Run(ctx context.Context, h core.Handler) error {
	me, err := a.sess.User("@me", discordgo.WithContext(ctx), discordgo.WithRetryOnRatelimit(false))
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		var re *discordgo.RESTError
		if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode == http.StatusUnauthorized {
			return core.Fatal(errors.New("discord: Discord rejected the bot token (HTTP 401 on /users/@me): check discord.token"))
		}
		return fmt.Errorf("discord: check bot token: %w", a.scrub(err))
	}
	a.mu.Lock()
	a.botID = me.ID
	a.mu.Unlock()
	if !a.opts.MessageContent {
		a.log.Info("message_content is off: the bot answers mentions, replies to its messages and DMs only")
	}

	in := newInbound(ctx, a, h)
	defer in.wait()
	disconnected := make(chan struct{}, 1)
	// READY names the application; the first one starts the slash command
	// registration (once per Run: a re-identify needs none).
	ready := make(chan string, 1)
	remove := []func(){
		a.sess.AddHandler(func(_ *discordgo.Session, _ *discordgo.Disconnect) {
			select {
			case disconnected <- struct{}{}:
			default:
			}
		}),
		a.sess.AddHandler(func(_ *discordgo.Session, r *discordgo.Ready) {
			app := me.ID // the application id of bots created since 2016
			if r.User != nil {
				a.mu.Lock()
				a.botID = r.User.ID
				a.mu.Unlock()
			}
			if r.Application != nil && r.Application.ID != "" {
				app = r.Application.ID
			}
			select {
			case ready <- app:
			default:
			}
		}),
		a.sess.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageCreate) { in.message(m.Message) }),
		a.sess.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageUpdate) { in.change(m.Message, false) }),
		a.sess.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageDelete) { in.change(m.Message, true) }),
		a.sess.AddHandler(func(_ *discordgo.Session, i *discordgo.InteractionCreate) { in.interaction(i.Interaction) }),
	}
	defer func() {
		for _, f := range remove {
			f()
		}
	}()
	a.connMu.Lock()
	a.aborted = false // a supervisor may Run the adapter again
	a.connMu.Unlock()
	stopAbort := context.AfterFunc(ctx, a.abortDial)
	defer stopAbort()
	if a.opts.SlashCommands {
		// Ends with Run, also when a fatal close comes before READY.
		regCtx, stopReg := context.WithCancel(ctx)
		var reg sync.WaitGroup
		defer reg.Wait()
		defer stopReg()
		reg.Go(func() {
			select {
			case app := <-ready:
				a.registerCommands(regCtx, app)
			case <-regCtx.Done():
			}
		})
	}

	backoff := time.Second
	for {
		select { // a Close of ours announced a disconnect that is over
		case <-disconnected:
		default:
		}
		err := a.sess.Open()
		if ctx.Err() != nil {
			a.sess.Close()
			return nil
		}
		if err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				if why, fatal := fatalClose(ce.Code); fatal {
					a.sess.Close()
					return core.Fatal(errors.New("discord: " + why))
				}
			}
			if errors.Is(err, discordgo.ErrWSAlreadyOpen) {
				a.sess.Close()
			}
			wait := pause.Jitter(backoff)
			a.log.Warn("gateway connect failed; retrying", "err", a.scrub(err), "backoff", wait)
			if pause.Sleep(ctx, wait) != nil {
				return nil
			}
			backoff = min(2*backoff, 2*time.Minute)
			continue
		}
		connectedAt := time.Now()
		a.log.Info("connected to gateway")
		select {
		case <-ctx.Done():
			a.sess.Close()
			return nil
		case <-disconnected:
		}
		if time.Since(connectedAt) > time.Minute {
			backoff = time.Second
		}
		// Reconnect at once after a healthy connection (op 7, a dropped
		// socket); back off when connections keep failing.
		a.log.Info("gateway disconnected; reconnecting")
		if time.Since(connectedAt) < 5*time.Second {
			if pause.Sleep(ctx, pause.Jitter(backoff)) != nil {
				return nil
			}
			backoff = min(2*backoff, 2*time.Minute)
		}
	}
}

// dial opens the gateway's TCP connection and remembers it so a cancelled
// Run can abort an Open that discordgo gives no context.
func (a *Adapter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	a.connMu.Lock()
	defer a.connMu.Unlock()
	if a.aborted {
		c.Close()
		return nil, errors.New("discord: dial gateway: run stopped")
	}
	a.conn = c
	return c, nil
}

// abortDial closes the gateway connection and refuses further dials.
func (a *Adapter) abortDial() {
	a.connMu.Lock()
	defer a.connMu.Unlock()
	a.aborted = true
	if a.conn != nil {
		a.conn.Close()
	}
}

func (a *Adapter) botUser() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.botID
}
