// Package telegram is agentbridge's Telegram adapter. It drives the Bot API
// through github.com/go-telegram-bot-api/telegram-bot-api/v5, using
// MakeRequest with its own types for what that library lacks (forum topics'
// message_thread_id, sendMessageDraft, setMyCommands). Updates arrive by
// long polling in the adapter's own loop; the update offset is kept as a
// core.Cursors cursor and advanced only after updates are handed to core, so
// a crash re-delivers them and core's dedup stops a second run.
package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/agentbridge/agentbridge/adapters/internal/pace"
	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/pause"
	"github.com/agentbridge/agentbridge/core/render"
)

// Name is the adapter's platform name in conversation keys.
const Name = "telegram"

// Group triggers: when the bot answers in groups.
const (
	TriggerMention = "mention" // only messages that mention or reply to the bot, and commands
	TriggerAll     = "all"     // every message
)

// DefaultAPIURL is the public Bot API server.
const DefaultAPIURL = "https://api.telegram.org"

// maxDownload is the Bot API's cap on files bots may download.
const maxDownload = 20 << 20

// Fatal errors Run returns.
var (
	// ErrUnauthorized: Telegram rejected the token (401).
	ErrUnauthorized = errors.New("telegram rejected the bot token (401 Unauthorized): check telegram.token")
	// ErrConflict: another process polls with the same token, or a webhook is set (409).
	ErrConflict = errors.New("telegram reports a conflict (409): another instance is polling with this bot token, or a webhook is set")
)

// Command is a bot command shown in Telegram's menu (setMyCommands).
type Command struct {
	Command     string `json:"command"`
	Description string `json:"description"`
}

// Options configure an Adapter.
type Options struct {
	// Name is the adapter's Name(), the ConversationKey.Platform of its
	// conversations; default Name. Two bots served at once need two names.
	Name   string
	Token  core.Secret
	APIURL string // base URL of the Bot API server; "" → DefaultAPIURL
	// GroupTrigger is TriggerMention (default) or TriggerAll.
	GroupTrigger string
	// Store keeps the update offset; nil keeps it in memory only.
	Store core.Cursors
	// Commands are registered with setMyCommands when Run starts.
	Commands []Command
	// PollTimeout is getUpdates' long-poll timeout; default 50 s.
	PollTimeout time.Duration
	// EditInterval is the edit cadence reported in Limits; default 1 s.
	EditInterval time.Duration
	// Drafts streams replies in private chats with sendMessageDraft.
	Drafts bool
	// DraftIdle is how long a draft may stay quiet before it becomes a
	// real message even though the reply is not finished (Telegram drops
	// a preview that is not refreshed); default 10 s, at least twice the
	// edit cadence. A finished reply becomes real at once (FinalizeMessage).
	DraftIdle time.Duration
	// Mode is ModePolling (default) or ModeWebhook.
	Mode string
	// WebhookListen is the local host:port the webhook server listens on.
	WebhookListen string
	// WebhookListener, if set, is used instead of WebhookListen (tests).
	WebhookListener net.Listener
	// WebhookURL is the public HTTPS URL Telegram posts updates to.
	WebhookURL string
	// WebhookSecret is the secret_token Telegram sends with every delivery.
	WebhookSecret core.Secret
	// HTTPClient, if set, carries every request; default a new http.Client.
	HTTPClient *http.Client
}

// Adapter is the Telegram platform. Create it with New.
type Adapter struct {
	opts  Options
	log   *slog.Logger
	bot   *tgbotapi.BotAPI // read-only after New; copied per call to carry a context
	hc    *http.Client
	token string
	self  tgbotapi.User

	mu     sync.Mutex
	chats  *pace.Budgets // private chats' flood budgets, by chat id
	groups *pace.Budgets // groups' flood budgets, by chat id
	titles titles        // groups' titles, for the operator console
	// keyboards holds "chat/message" of messages sent with buttons and
	// not yet edited without them: permission prompts awaiting an answer.
	keyboards map[string]struct{}
	drafts    map[int64]*draft
	draftSeq  int64
	// draftLocks serialize, per chat, draft updates and their finishing,
	// so a chat's drafts become messages in order while a wait for one
	// chat's budget (a 429 there) holds up no other chat's.
	draftLocks map[int64]*chatLock
	quiet      *quietTimers // the drafts' quiet timers of this Run
	noDrafts   atomic.Bool
}

var (
	_ core.Platform         = (*Adapter)(nil)
	_ core.Typer            = (*Adapter)(nil)
	_ core.Downloader       = (*Adapter)(nil)
	_ core.MessageFinalizer = (*Adapter)(nil)
)

// New checks the options and returns the adapter. It does no I/O: Run asks
// Telegram who the bot is (getMe) before anything else.
func New(opts Options, log *slog.Logger) (*Adapter, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Token.IsZero() {
		return nil, errors.New("telegram: no bot token configured")
	}
	if opts.Name == "" {
		opts.Name = Name
	}
	if opts.APIURL == "" {
		opts.APIURL = DefaultAPIURL
	}
	opts.APIURL = strings.TrimRight(opts.APIURL, "/")
	if opts.GroupTrigger == "" {
		opts.GroupTrigger = TriggerMention
	}
	if opts.PollTimeout <= 0 {
		opts.PollTimeout = 50 * time.Second
	}
	if opts.EditInterval <= 0 {
		opts.EditInterval = time.Second
	}
	if opts.DraftIdle <= 0 {
		opts.DraftIdle = 10 * time.Second
	}
	// A draft must outlive the pause between two streamed updates.
	opts.DraftIdle = max(opts.DraftIdle, 2*opts.EditInterval)
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	a := &Adapter{opts: opts, log: log, hc: hc, token: opts.Token.Reveal(), chats: pace.NewBudgets(chatLimit), groups: pace.NewBudgets(groupLimit), drafts: map[int64]*draft{}, draftLocks: map[int64]*chatLock{}, quiet: newQuietTimers(), keyboards: map[string]struct{}{}}
	// Built by hand rather than with NewBotAPIWithClient, which calls getMe.
	// call gives each request its own context, so the template has no
	// client.
	a.bot = &tgbotapi.BotAPI{Token: a.token, Buffer: 100}
	a.bot.SetAPIEndpoint(opts.APIURL + "/bot%s/%s")
	return a, nil
}

// identify asks Telegram who the bot is (getMe). Run and message handling
// need the answer: the bot's id names its cursor and conversations, its
// name finds mentions.
func (a *Adapter) identify(ctx context.Context) error {
	resp, err := a.call(ctx, "getMe", nil)
	if err != nil {
		return err
	}
	var me tgbotapi.User
	if err := json.Unmarshal(resp.Result, &me); err != nil {
		return fmt.Errorf("getMe: %w", err)
	}
	a.self = me
	return nil
}

// identifyUntilDone retries identify with backoff until it succeeds, the
// token is rejected (returned), or ctx ends (nil).
func (a *Adapter) identifyUntilDone(ctx context.Context) error {
	backoff := minBackoff
	for a.self.ID == 0 {
		err := a.identify(ctx)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, ErrUnauthorized):
			return err
		case ctx.Err() != nil:
			return nil
		}
		wait := pause.Jitter(backoff)
		a.log.WarnContext(ctx, "getMe failed; retrying", "err", err, "wait", wait)
		if pause.Sleep(ctx, wait) != nil {
			return nil
		}
		backoff = min(2*backoff, maxBackoff)
	}
	return nil
}

// Name returns Options.Name: "telegram" unless set.
func (a *Adapter) Name() string { return a.opts.Name }

// Limits reports Telegram's limits: 4,096 characters after entity parsing
// (the rendered HTML is never shorter than that, so counting it is safe),
// callback_data of 64 bytes, HTML markup, uploads of 50 MB.
func (a *Adapter) Limits() core.Limits {
	return core.Limits{
		MaxText:        4000,
		EditInterval:   a.opts.EditInterval,
		MaxButtonValue: 64,
		Dialect:        render.TelegramHTML,
		MaxFileBytes:   maxUpload,
	}
}

// ctxClient gives the library's context-free requests a context.
type ctxClient struct {
	ctx context.Context
	hc  *http.Client
}

func (c ctxClient) Do(r *http.Request) (*http.Response, error) { return c.hc.Do(r.WithContext(c.ctx)) }

// call makes one Bot API request bound to ctx. The library has no contexts,
// so each call uses a copy of the BotAPI whose client carries ctx.
func (a *Adapter) call(ctx context.Context, method string, p tgbotapi.Params) (*tgbotapi.APIResponse, error) {
	return a.request(ctx, method, func(b *tgbotapi.BotAPI) (*tgbotapi.APIResponse, error) {
		return b.MakeRequest(method, p)
	})
}

// request makes a request of method with do, on a copy of the BotAPI
// whose client carries ctx, and translates its error.
func (a *Adapter) request(ctx context.Context, method string, do func(*tgbotapi.BotAPI) (*tgbotapi.APIResponse, error)) (*tgbotapi.APIResponse, error) {
	b := *a.bot
	b.Client = ctxClient{ctx: ctx, hc: a.hc}
	resp, err := do(&b)
	var tg *tgbotapi.Error
	if errors.As(err, &tg) && tg.Code == 0 && resp != nil {
		tg.Code = resp.ErrorCode // UploadFiles leaves it out
	}
	if err != nil {
		return nil, a.translate(method, err)
	}
	return resp, nil
}

// apiError is a Bot API or transport error with the token scrubbed out.
type apiError struct {
	msg   string
	cause error // a core sentinel or a context error, never the raw error
}

func (e *apiError) Error() string { return e.msg }
func (e *apiError) Unwrap() error { return e.cause }

// translate turns a library error into core's vocabulary, scrubbing the
// token (transport errors carry the request URL, which contains it).
func (a *Adapter) translate(method string, err error) error {
	msg := method + ": " + a.scrub(err.Error())
	var tg *tgbotapi.Error
	if !errors.As(err, &tg) {
		var cause error
		switch {
		case errors.Is(err, context.Canceled):
			cause = context.Canceled
		case errors.Is(err, context.DeadlineExceeded):
			cause = context.DeadlineExceeded
		}
		return &apiError{msg: "telegram " + msg, cause: cause}
	}
	desc := strings.ToLower(tg.Message)
	wrap := func(sentinel error) error { return &apiError{msg: "telegram " + msg, cause: sentinel} }
	switch {
	case tg.Code == 429:
		ra := time.Duration(tg.RetryAfter) * time.Second
		if ra <= 0 {
			ra = time.Second
		}
		return &core.RateLimitError{RetryAfter: ra, Err: wrap(nil)}
	case tg.Code == 401:
		return &apiError{msg: ErrUnauthorized.Error() + " [" + msg + "]", cause: ErrUnauthorized}
	case tg.Code == 409:
		return &apiError{msg: ErrConflict.Error() + " [" + msg + "]", cause: ErrConflict}
	case tg.Code == 413:
		return &apiError{msg: "telegram " + msg + ": the file is over Telegram's 50 MB upload limit", cause: core.ErrFileTooLarge}
	case strings.Contains(desc, "message is not modified"):
		return wrap(core.ErrNotModified)
	case strings.Contains(desc, "can't parse entities") || strings.Contains(desc, "unsupported start tag"):
		return wrap(core.ErrFormatting)
	case strings.Contains(desc, "too long"):
		return wrap(core.ErrMessageTooLong)
	case strings.Contains(desc, "not found") || strings.Contains(desc, "can't be edited") ||
		tg.Code == 403: // bot blocked by the user or removed from the chat
		return wrap(core.ErrNotFound)
	}
	return wrap(nil)
}

// scrub removes the token from s.
func (a *Adapter) scrub(s string) string {
	if a.token == "" {
		return s
	}
	return strings.ReplaceAll(s, a.token, "<token>")
}

// Telegram's flood limits (adapters/internal/pace keeps 10 % headroom): about one
// message a second in a private chat, with short bursts, and twenty a
// minute in a group. Interim calls (drafts, streamed edits) leave one
// call of a burst for final text; in a group, where a call comes back
// only every 3.75 s, two, so replies that end together still post their
// final text at once.
var (
	chatLimit  = pace.Limit{N: 60, Per: time.Minute, Burst: 3}
	groupLimit = pace.Limit{N: 20, Per: time.Minute, Burst: 3, Reserve: 2}
)

// budget returns chat's flood budget.
func (a *Adapter) budget(chat int64) *pace.Budget {
	key := strconv.FormatInt(chat, 10)
	if chat < 0 {
		return a.groups.Get(key)
	}
	return a.chats.Get(key)
}

// blocked holds chat's budget for a 429's retry_after.
func (a *Adapter) blocked(chat int64, err error) {
	if ra, ok := core.RetryAfter(err); ok {
		b := a.budget(chat)
		b.Hold(time.Now().Add(ra))
		b.Refused()
	}
}

func parseChat(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("telegram: bad chat id %q", s)
	}
	return id, nil
}
