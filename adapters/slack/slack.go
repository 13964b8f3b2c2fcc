// Package slack is agentbridge's Slack adapter. It receives messages and
// button presses over Socket Mode (or the Events API over HTTP), normalizes
// them into core messages and actions, and posts, streams and edits replies
// through the Web API with github.com/slack-go/slack.
//
// A mention in a channel starts a thread, and the thread is the
// conversation; replies in that thread continue it without a mention. A DM is
// one conversation (or one per thread when the user threads). chat.update
// calls share one Tier 3 budget per workspace (adapters/internal/pace: 90 % of it,
// shared fairly, final text first); when it is spent, Edit returns a
// *core.RateLimitError without calling Slack so the presenter coalesces the
// stream. Posts share a budget per channel. With Options.NativeStreaming,
// replies in threads stream natively instead (chat.startStream /
// appendStream / stopStream, sharing a Tier 4 budget per workspace).
package slack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/agentbridge/agentbridge/adapters/internal/pace"
	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/pause"
	"github.com/agentbridge/agentbridge/core/render"
	"github.com/agentbridge/agentbridge/internal/httpguard"
)

// Name is the adapter's platform name, ConversationKey.Platform.
const Name = "slack"

// Transport modes.
const (
	ModeSocket = "socket" // Socket Mode WebSocket (needs the app token)
	ModeEvents = "events" // Events API over HTTP (needs the signing secret)
)

// Options configure an Adapter.
type Options struct {
	// Name is the adapter's Name(), the ConversationKey.Platform of its
	// conversations; default Name. Two apps served at once need two names.
	Name          string
	BotToken      core.Secret // xoxb-, for the Web API
	AppToken      core.Secret // xapp-, for Socket Mode
	SigningSecret core.Secret // for the Events API over HTTP
	// Mode is ModeSocket (default) or ModeEvents.
	Mode string
	// EventsListen is the host:port the Events API listener binds in
	// ModeEvents. Requests are accepted on any path.
	EventsListen string
	// EventsLimits bound the Events API listener: timeouts, header cap,
	// and how many requests it reads at once before their signature is
	// checked. Zero fields take httpguard's defaults.
	EventsLimits httpguard.Limits
	// EventsListener, when set, is used instead of listening on
	// EventsListen (tests pass a listener on 127.0.0.1:0). Run closes it.
	EventsListener net.Listener
	// APIURL overrides the Web API base URL (tests, proxies); empty means
	// Slack's. A trailing "/" is added when missing.
	APIURL string
	// CommandPrefix lets "@bot new" arrive as "!new"; default "!".
	CommandPrefix string
	// AllowBots answers messages from other bots (never the bridge's own).
	AllowBots bool
	// Store, when set, remembers which threads the bot takes part in, so
	// replies without a mention continue them after a restart.
	Store core.Cursors

	// NativeStreaming streams replies in threads with Slack's
	// chat.startStream / appendStream / stopStream (the agent's Markdown as
	// written) instead of posting and editing rendered mrkdwn.
	NativeStreaming bool
	// AppendsPerMinute is the budget of streaming calls shared by every
	// native stream in a workspace; default 100 (Tier 4).
	AppendsPerMinute float64
	// AppendBurst is how many streaming calls may go at once; default 5.
	AppendBurst int

	// EditsPerMinute is the chat.update budget shared by every stream in a
	// workspace; default 50 (Tier 3).
	EditsPerMinute float64
	// EditBurst is how many edits may go at once; default 3 (the burst
	// counts against the minute's budget, see adapters/internal/pace).
	EditBurst int
	// EditInterval is the cadence one message is edited at; default 1s.
	EditInterval time.Duration
	// PingInterval is how long Socket Mode waits for Slack's ping before it
	// reconnects; default 30s (tests shorten it).
	PingInterval time.Duration
	// HTTPClient is used for the Web API; nil means a client with a 30s
	// timeout.
	HTTPClient *http.Client
}

// Adapter is the Slack platform. Create it with New.
type Adapter struct {
	opts Options
	log  *slog.Logger
	api  *slackapi.Client

	mu       sync.Mutex
	team     string // from auth.test
	botUser  string // bot's user id, from auth.test
	botID    string
	edits    *pace.Budgets   // chat.update, by workspace
	posts    *pace.Budgets   // chat.postMessage and chat.startStream, by channel
	buttoned map[string]bool // channel:ts of messages sent with buttons
	threads  *threadCache    // threads the bot takes part in, by threadCursor
	typed    map[core.ConversationKey]time.Time
	noStatus bool          // assistant.threads.setStatus is not available
	noStream bool          // chat.startStream is not available
	streams  *pace.Budgets // streaming calls, by workspace
	// requesters is who wrote last in each thread, for native streams.
	requesters map[core.ConversationKey]requester
	recent     *seenSet
	// asked holds the thread and author of mentions core has not
	// accepted (the latest 4,096): the author's next messages in the
	// thread reach core while it decides.
	asked *seenSet
}

var (
	_ core.Platform         = (*Adapter)(nil)
	_ core.Typer            = (*Adapter)(nil)
	_ core.Downloader       = (*Adapter)(nil)
	_ core.MessageFinalizer = (*Adapter)(nil)
)

// New returns an adapter for opts. It checks the options but does not
// connect; Run does.
func New(opts Options, log *slog.Logger) (*Adapter, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Name == "" {
		opts.Name = Name
	}
	if opts.Mode == "" {
		opts.Mode = ModeSocket
	}
	if opts.BotToken.IsZero() {
		return nil, errors.New("slack: bot_token is required")
	}
	switch opts.Mode {
	case ModeSocket:
		if opts.AppToken.IsZero() {
			return nil, errors.New("slack: app_token is required in socket mode")
		}
	case ModeEvents:
		if opts.SigningSecret.IsZero() || (opts.EventsListen == "" && opts.EventsListener == nil) {
			return nil, errors.New("slack: signing_secret and events_listen are required in events mode")
		}
	default:
		return nil, fmt.Errorf("slack: unknown mode %q (want %q or %q)", opts.Mode, ModeSocket, ModeEvents)
	}
	if opts.CommandPrefix == "" {
		opts.CommandPrefix = "!"
	}
	if opts.EditsPerMinute <= 0 {
		opts.EditsPerMinute = 50
	}
	if opts.EditBurst <= 0 {
		opts.EditBurst = 3
	}
	if opts.AppendsPerMinute <= 0 {
		opts.AppendsPerMinute = 100
	}
	if opts.AppendBurst <= 0 {
		opts.AppendBurst = 5
	}
	if opts.EditInterval <= 0 {
		opts.EditInterval = time.Second
	}
	if opts.PingInterval <= 0 {
		opts.PingInterval = 30 * time.Second
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	apiOpts := []slackapi.Option{slackapi.OptionHTTPClient(opts.HTTPClient)}
	if !opts.AppToken.IsZero() {
		apiOpts = append(apiOpts, slackapi.OptionAppLevelToken(opts.AppToken.Reveal()))
	}
	if opts.APIURL != "" {
		u := opts.APIURL
		if !strings.HasSuffix(u, "/") {
			u += "/"
		}
		apiOpts = append(apiOpts, slackapi.OptionAPIURL(u))
	}
	return &Adapter{
		opts:       opts,
		log:        log,
		api:        slackapi.New(opts.BotToken.Reveal(), apiOpts...),
		edits:      pace.NewBudgets(pace.Limit{N: int(opts.EditsPerMinute), Per: time.Minute, Burst: opts.EditBurst}),
		posts:      pace.NewBudgets(postLimit),
		buttoned:   map[string]bool{},
		threads:    newThreadCache(maxThreads, threadIdle),
		typed:      map[core.ConversationKey]time.Time{},
		streams:    pace.NewBudgets(pace.Limit{N: int(opts.AppendsPerMinute), Per: time.Minute, Burst: opts.AppendBurst}),
		requesters: map[core.ConversationKey]requester{},
		recent:     newSeenSet(4096),
		asked:      newSeenSet(4096),
	}, nil
}

// Name returns Options.Name: "slack" unless set.
func (a *Adapter) Name() string { return a.opts.Name }

// Limits reports Slack's limits. MaxText stays under the 4,000 characters
// Slack recommends for a message's text, with room for the section split;
// a file may be 1 GB.
func (a *Adapter) Limits() core.Limits {
	return core.Limits{
		MaxText:        3800,
		EditInterval:   a.opts.EditInterval,
		MaxButtonValue: 2000,
		Dialect:        render.SlackMrkdwn,
		MaxFileBytes:   maxUpload,
	}
}

// identity returns what auth.test said about the bot.
func (a *Adapter) identity() (team, botUser, botID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.team, a.botUser, a.botID
}

// authenticate calls auth.test until it succeeds, ctx ends, or Slack
// rejects the token (fatal).
func (a *Adapter) authenticate(ctx context.Context) error {
	backoff := 500 * time.Millisecond
	for {
		res, err := a.api.AuthTestContext(ctx)
		if err == nil {
			a.mu.Lock()
			a.team, a.botUser, a.botID = res.TeamID, res.UserID, res.BotID
			a.mu.Unlock()
			a.log.InfoContext(ctx, "authenticated", "team", res.TeamID, "bot_user", res.UserID)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if code, ok := fatalAuth(err); ok {
			return core.Fatal(fmt.Errorf("slack: the bot token was rejected (%s): check slack.bot_token", code))
		}
		a.log.WarnContext(ctx, "auth.test failed; retrying", "err", a.scrub(err), "backoff", backoff)
		if err := pause.Sleep(ctx, pause.Jitter(backoff)); err != nil {
			return err
		}
		backoff = min(2*backoff, time.Minute)
	}
}

// fatalAuth reports whether err says the credentials are bad for good.
func fatalAuth(err error) (string, bool) {
	var se slackapi.SlackErrorResponse
	if errors.As(err, &se) {
		switch se.Err {
		case "invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired", "not_allowed_token_type":
			return se.Err, true
		}
	}
	switch err.Error() { // socketmode returns these as plain errors
	case "invalid_auth", "not_authed", "account_inactive", "token_revoked":
		return err.Error(), true
	}
	return "", false
}

// scrub returns err with any credential removed from its text, keeping its
// chain for errors.Is/As.
func (a *Adapter) scrub(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := msg
	for _, s := range []core.Secret{a.opts.BotToken, a.opts.AppToken, a.opts.SigningSecret} {
		if !s.IsZero() {
			clean = strings.ReplaceAll(clean, s.Reveal(), "REDACTED")
		}
	}
	if clean == msg {
		return err
	}
	return &scrubbed{msg: clean, err: err}
}

type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// seenSet remembers recent keys, bounded, to drop redeliveries cheaply
// before they reach core (which deduplicates durably too).
type seenSet struct {
	mu    sync.Mutex
	max   int
	keys  map[string]bool
	order []string
}

func newSeenSet(max int) *seenSet { return &seenSet{max: max, keys: map[string]bool{}} }

// has reports whether key is remembered.
func (s *seenSet) has(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[key]
}

// remove forgets key and reports whether it was there.
func (s *seenSet) remove(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.keys[key] {
		return false
	}
	delete(s.keys, key)
	return true
}

// add reports whether key was new.
func (s *seenSet) add(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys[key] {
		return false
	}
	s.keys[key] = true
	s.order = append(s.order, key)
	if len(s.order) > s.max {
		delete(s.keys, s.order[0])
		s.order = s.order[1:]
	}
	return true
}
