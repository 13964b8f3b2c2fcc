// Package engine is the conversation engine: it takes normalized messages
// and button presses from adapters onto each conversation's ordered intake,
// drops duplicates, checks access, runs commands, queues turns per
// conversation, runs each turn's agent through the AgentProc runner,
// streams the reply through a stream.Presenter, turns permission requests
// into buttons, and persists sessions through a core.Store.
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/core/lane"
	"github.com/agentbridge/agentbridge/core/stream"
	"github.com/agentbridge/agentbridge/internal/tail"
)

// Causes a turn's context can be cancelled with.
var (
	// ErrStoppedByUser: a user sent the stop command.
	ErrStoppedByUser = errors.New("stopped by user")
	// ErrShuttingDown: the bridge is shutting down and the drain deadline passed.
	ErrShuttingDown = errors.New("bridge shutting down")
	// ErrInterrupted: a newer message (busy: interrupt, or ⏭) stopped the turn.
	ErrInterrupted = errors.New("interrupted by a newer message")
)

// PlatformSettings are the per-platform parts of Settings.
type PlatformSettings struct {
	Scope      core.SessionScope // default thread
	Prefix     string            // command prefix; default "/"
	AllowUsers []string          // user ids; "*" allows anyone
	AllowChats []string          // chat/channel ids whose members may all use the bot; "*" any
	Approvers  []string          // user ids who may answer anyone's permission prompt
	// MaxFileBytes limits each attachment the bridge downloads; default 20 MiB.
	MaxFileBytes int64
}

// Settings are the engine's reloadable settings.
type Settings struct {
	Platforms      map[string]PlatformSettings // by platform name
	Profiles       map[string]*agentproc.Profile
	DefaultProfile string
	// Route picks the profile name for a conversation; nil means always
	// DefaultProfile.
	Route func(core.ConversationKey) string
	// Limits returns the per-user limits in a conversation; nil = none.
	Limits func(core.ConversationKey) Limits
	// Choices returns the profiles /agent offers in a conversation besides
	// the route's; nil offers none.
	Choices func(core.ConversationKey) []string
	// Voice says how a conversation's voice notes are transcribed; nil
	// (or a Voice with no Transcriber) leaves audio untranscribed.
	Voice      func(core.ConversationKey) Voice
	QueueDepth int           // queued turns per conversation; default 5
	DedupTTL   time.Duration // default 24h
	// IdleTimeout stops a turn whose agent has sent no event for this long,
	// except while one of its permission prompts is open; 0 = never.
	IdleTimeout time.Duration
	// MaxTurns caps the agents running at once over the bridge (default
	// DefaultMaxTurns); MaxTurnsPerUser caps one user's (default half of
	// MaxTurns, rounded up; never more than MaxTurns). A turn beyond them
	// waits on its conversation's lane for a slot.
	MaxTurns, MaxTurnsPerUser int
	// OnSaturated is what a turn does when MaxTurns agents run:
	// agentproc.SaturatedQueue ("" too) waits for a slot,
	// agentproc.SaturatedReject refuses it at once. A profile's own cap
	// (Profile.MaxConcurrent) follows the profile's OnSaturated, else this.
	OnSaturated string
	// Busy returns a conversation's busy mode: what a message sent while
	// its turn runs does (BusyQueue, BusyInterrupt, BusyCollect); nil or
	// "" is BusyQueue.
	Busy func(core.ConversationKey) string

	Presenter PresenterSettings
	// Files bounds the files an agent sends back in one turn; zero
	// values are core/outfile's defaults.
	Files FileLimits
}

// FileLimits bound the files an agent sends back in one turn, on top of
// the platform's limit for one file (core.Limits.MaxFileBytes).
type FileLimits struct {
	PerTurn      int   // files
	BytesPerTurn int64 // their bytes together
}

// PresenterSettings tune how replies stream.
type PresenterSettings struct {
	PlaceholderDelay time.Duration
	ShowThinking     bool
	UsageFooter      bool
	MinEditInterval  time.Duration
}

// Options are the engine's fixed dependencies.
type Options struct {
	Log     *slog.Logger
	Environ []string // the bridge's environment for profiles; nil → os.Environ()
	TempDir string   // where per-turn attachment directories go; "" → os.TempDir()
	// FinalTimeout bounds how long a finished turn keeps retrying to deliver
	// its final text; default 2m.
	FinalTimeout time.Duration
	// Observer receives counts for metrics; nil discards them.
	Observer Observer
	// Schedules answers /schedules; nil means nothing is scheduled.
	Schedules Schedules
	// Private are files and directories an agent's file:// attachment
	// may never name, even inside its working directory: the bridge's
	// config and store (every profile's file is private too).
	Private []string
	// BridgeID labels the containers and pods isolated turns run in
	// (BridgeID(store path)); "" → BridgeID of the host name.
	BridgeID string
}

// Engine is the conversation engine. Create it with New, attach platforms
// with Handler, call Recover once at start and Shutdown at the end.
type Engine struct {
	store core.Store
	log   *slog.Logger
	opts  Options

	settings atomic.Pointer[Settings]
	base     context.Context // outlives turns; cancelled by Shutdown's end
	stop     context.CancelFunc
	lanes    *lane.Lanes[core.ConversationKey] // turns, by session key
	intake   *lane.Lanes[core.ConversationKey] // events not yet handled, by conversation
	gate     *drainGate
	slots    *slots        // agents running at once
	arrivals atomic.Uint64 // numbers events in the order they are handed over
	failed   failures

	mu        sync.Mutex
	platforms map[string]core.Platform
	running   map[core.ConversationKey]*turn // by lane key
	queued    map[string]*turn               // by turn id, until it starts
	prompts   map[string]*prompt             // by button token
	// unanswerable names platforms whose prompts nobody can answer any
	// more (DenyPrompts), with the reason.
	unanswerable map[string]string
	quiet        map[quietKey]struct{}                   // notices sent once per burst
	refused      map[string]time.Time                    // last refusal, by platform and user
	overflowed   map[core.ConversationKey]core.Message   // first message dropped by a full intake
	collecting   map[core.ConversationKey]*collectNotice // busy: collect's notice of the burst, by lane key
	// interrupting holds the queued turns (by id) whose message stopped
	// the turn before them (busy: interrupt), until they start.
	interrupting sync.Map
}

// New returns an engine persisting through st.
func New(st core.Store, s *Settings, opts Options) *Engine {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Environ == nil {
		opts.Environ = os.Environ()
	}
	if opts.TempDir == "" {
		opts.TempDir = os.TempDir()
	}
	if opts.FinalTimeout <= 0 {
		opts.FinalTimeout = 2 * time.Minute
	}
	if opts.Observer == nil {
		opts.Observer = nopObserver{}
	}
	if opts.BridgeID == "" {
		host, _ := os.Hostname()
		opts.BridgeID = shortHash("host:" + host)
	}
	base, stop := context.WithCancel(context.Background())
	e := &Engine{
		store:     st,
		log:       opts.Log,
		opts:      opts,
		base:      base,
		stop:      stop,
		platforms: map[string]core.Platform{},
		running:   map[core.ConversationKey]*turn{},
		queued:    map[string]*turn{},
		prompts:   map[string]*prompt{},

		unanswerable: map[string]string{},
		quiet:        map[quietKey]struct{}{},
		refused:      map[string]time.Time{},
		overflowed:   map[core.ConversationKey]core.Message{},
		collecting:   map[core.ConversationKey]*collectNotice{},
		gate:         newDrainGate(),
	}
	e.Reload(s)
	e.slots = newSlots(func() (int, int) { c := e.cfg(); return c.MaxTurns, c.MaxTurnsPerUser })
	// Lanes get their own depth check; the lane package's limit is a backstop.
	e.lanes = lane.New[core.ConversationKey](base, 100)
	e.intake = lane.Bounded[core.ConversationKey](base, intakeDepth, intakeTotal)
	return e
}

// Reload swaps in new settings. Turns already running keep the profile they
// started with.
func (e *Engine) Reload(s *Settings) {
	c := *s
	if c.QueueDepth <= 0 {
		c.QueueDepth = 5
	}
	if c.DedupTTL <= 0 {
		c.DedupTTL = 24 * time.Hour
	}
	if c.MaxTurns <= 0 {
		c.MaxTurns = DefaultMaxTurns
	}
	if c.MaxTurnsPerUser <= 0 {
		c.MaxTurnsPerUser = defaultPerUser(c.MaxTurns)
	}
	c.MaxTurnsPerUser = min(c.MaxTurnsPerUser, c.MaxTurns)
	e.settings.Store(&c)
}

func (e *Engine) cfg() *Settings { return e.settings.Load() }

// platformSettings returns the settings of platform name with defaults.
func (s *Settings) platform(name string) PlatformSettings {
	ps := s.Platforms[name]
	if ps.Scope == "" {
		ps.Scope = core.ScopeThread
	}
	if ps.Prefix == "" {
		ps.Prefix = "/"
	}
	if ps.MaxFileBytes <= 0 {
		ps.MaxFileBytes = 20 << 20
	}
	return ps
}

func (s *Settings) profileFor(conv core.ConversationKey) (string, *agentproc.Profile) {
	name := s.DefaultProfile
	if s.Route != nil {
		if r := s.Route(conv); r != "" {
			name = r
		}
	}
	return name, s.Profiles[name]
}

// Handler registers p with the engine and returns the core.Handler its Run
// delivers events to.
func (e *Engine) Handler(p core.Platform) core.Handler {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.platforms[p.Name()] = p
	return handler{e: e, p: p}
}

type handler struct {
	e *Engine
	p core.Platform
}

// HandleMessage and HandleAction put the event on its conversation's
// intake and return (see intake.go). What an event needs while it is
// handled travels in it (Message.Reply, Answer, Handled; Action.Reply),
// not in ctx.
func (h handler) HandleMessage(ctx context.Context, m core.Message) {
	h.e.take(ctx, h.p, event{msg: m})
}

func (h handler) HandleAction(ctx context.Context, a core.Action) {
	h.e.take(ctx, h.p, event{act: &a})
}

// Draining implements core.Drainer.
func (h handler) Draining() <-chan struct{} { return h.e.gate.begun }

// allowed and approver ask core.Access, the one access rule, of the
// platform's lists.
func (ps PlatformSettings) allowed(conv core.ConversationKey, user string) bool {
	return ps.access().Allows(conv, user)
}

func (ps PlatformSettings) approver(user string) bool { return ps.access().Approver(user) }

func (ps PlatformSettings) access() core.Access {
	return core.Access{Users: ps.AllowUsers, Chats: ps.AllowChats, Approvers: ps.Approvers}
}

// handleMessage handles one message on its conversation's intake; late is
// set for a message handed over after draining began.
func (e *Engine) handleMessage(ctx context.Context, p core.Platform, m core.Message, seq uint64, late bool) {
	if m.Edits != "" {
		e.slots.settle(seq) // an edit or deletion is no turn of its own
		e.handleEdit(ctx, p, m)
		return
	}
	s := e.cfg()
	ps := s.platform(p.Name())
	log := e.log.With("conv", m.Conv)
	cmd, arg, isCmd := parseCommand(m, ps.Prefix)
	allowed := ps.allowed(m.Conv, m.From.ID)
	key := ps.Scope.SessionKey(m.Conv, m.From.ID)
	// A busy conversation's message is refused before it is journaled: in
	// a flood that saves a disk sync per message.
	busy, waiting := false, 0
	if !isCmd && allowed && !late {
		busy, waiting = e.full(key, m.Conv, s)
	}

	obs := e.opts.Observer
	if isCmd || !allowed || late || busy {
		e.slots.settle(seq) // not a turn: before any answer's wait
		if e.seen(ctx, p, m, nil) {
			obs.Message(p.Name(), "duplicate")
			return
		}
		if allowed {
			accepted(m)
		}
		switch {
		case isCmd && cmd.Access == core.CommandAnyone && (allowed || e.mayRefuse(p.Name(), "/whoami "+m.From.ID)):
			obs.Message(p.Name(), "command")
			// Answered before the access check: it is how a denied user
			// learns the id to ask for (once in a while: it costs the
			// chat's budget like a refusal).
			e.command(ctx, p, m, key, cmd, arg)
		case !allowed:
			obs.Message(p.Name(), "denied")
			if e.refuse(ctx, p, m.Reply, m, m.From.ID, fmt.Sprintf(textRefusal, p.Name(), m.From.ID)) {
				log.InfoContext(ctx, "access denied", "user", m.From.ID)
			} else {
				// Told a moment ago: a stranger's flood gets one answer.
				log.DebugContext(ctx, "access denied; refusal not repeated", "user", m.From.ID)
			}
		case isCmd:
			obs.Message(p.Name(), "command")
			e.command(ctx, p, m, key, cmd, arg)
		case late:
			obs.Message(p.Name(), "draining")
			if e.once(quietDraining, m.Conv) {
				e.say(ctx, p, m, textDraining)
			}
		default: // busy
			e.refuseBusy(ctx, p, m, fmt.Sprintf(textBusy, waiting))
		}
		return
	}
	if text := e.overLimit(ctx, s, p.Name(), m); text != "" {
		e.slots.settle(seq)
		if !e.seen(ctx, p, m, nil) {
			accepted(m)
			obs.Message(p.Name(), "limited")
			e.say(ctx, p, m, text)
		}
		return
	}
	t := &turn{id: newID(), plat: p, msg: m, key: key, queuedAt: time.Now(), seq: seq, reply: tail.Buffer{Max: ReplyTailBytes}}
	// Dedup and the journal entry share one write: a crash after it is
	// reported on restart instead of losing the message silently.
	// The entry keeps the message, so a crash before its agent starts
	// costs nothing: a restart runs it (Recover).
	if entry := t.entry(); e.seen(ctx, p, m, &entry) {
		obs.Message(p.Name(), "duplicate")
		return
	}
	accepted(m)
	e.enqueue(ctx, t, s)
}

// accepted tells m's adapter that core accepted m (core.Message.Accepted).
func accepted(m core.Message) {
	if m.Accepted != nil {
		m.Accepted()
	}
}

// full reports whether key's lane has a turn running and its queue at the
// configured depth, and how many wait. In collect mode (conv's) the
// messages queued become one turn, so a burst may hold collectDepth.
func (e *Engine) full(key, conv core.ConversationKey, s *Settings) (bool, int) {
	_, running, queued := e.lanes.Status(key)
	depth := s.QueueDepth
	if s.busy(conv) == BusyCollect {
		depth = max(depth, collectDepth)
	}
	return running && queued >= depth, queued
}

// seen drops a platform's redelivery of a message already handled (and
// journals entry for a new one, when given). It reports true when the
// message must not be handled: a duplicate, or a storage failure (told to
// the user: without dedup a redelivery could run twice).
func (e *Engine) seen(ctx context.Context, p core.Platform, m core.Message, entry *core.JournalEntry) bool {
	ttl := e.cfg().DedupTTL
	var seen bool
	var err error
	switch {
	case entry != nil && m.ID == "":
		err = e.store.JournalPut(ctx, *entry)
	case entry != nil:
		seen, err = e.store.Accept(ctx, p.Name(), m.ID, ttl, *entry)
	case m.ID != "":
		seen, err = e.store.MarkSeen(ctx, p.Name(), m.ID, ttl)
	}
	if err != nil {
		e.log.ErrorContext(ctx, "recording message failed", "conv", m.Conv, "err", err)
		e.say(ctx, p, m, "⚠️ The bridge could not record your message (storage error). Please try again.")
		return true
	}
	if seen {
		e.log.DebugContext(ctx, "duplicate delivery dropped", "conv", m.Conv, "message", m.ID)
	}
	return seen
}

// say posts a plain notice answering m in its conversation, retrying rate
// limits and transient failures by the presenter's policy for one-off
// writes (stream.Send); a running turn's own notices, prompts and prompt
// outcomes go through its presenter, which orders them with the reply
// (sayInTurn, ask). Adapters only pace their calls to their budgets and
// return a platform's refusal (a *core.RateLimitError) instead of
// retrying it. say runs on the conversation's intake worker or its lane,
// so its waits delay only that conversation, and they end when the drain
// does.
func (e *Engine) say(ctx context.Context, p core.Platform, m core.Message, text string) {
	e.notice(ctx, p, m, core.Post{Text: text, Plain: true, ReplyTo: m.ID})
}

// notice is say with a post of its own (a notice with buttons). It
// returns the notice's message when it knows it.
func (e *Engine) notice(ctx context.Context, p core.Platform, m core.Message, post core.Post) core.MessageRef {
	return e.deliverNotice(ctx, m, post, func() (core.MessageRef, error) {
		return stream.Send(ctx, p, m.Conv, post)
	})
}

// sayInTurn is say for a notice of t's own, which t's presenter orders
// with the reply's writes.
func (e *Engine) sayInTurn(ctx context.Context, t *turn, text string) {
	post := core.Post{Text: text, Plain: true, ReplyTo: t.msg.ID}
	e.deliverNotice(ctx, t.msg, post, func() (core.MessageRef, error) {
		return t.pres.Notice(ctx, post)
	})
}

// deliverNotice hands post to m's own answer when it takes one, else
// sends it with send, and returns the notice's message.
func (e *Engine) deliverNotice(ctx context.Context, m core.Message, post core.Post, send func() (core.MessageRef, error)) core.MessageRef {
	if m.Answer != nil {
		if ref, ok := m.Answer(ctx, post); ok {
			return ref
		}
	}
	ref, err := send()
	if err != nil {
		e.log.WarnContext(ctx, "send notice failed", "conv", m.Conv, "err", err)
	}
	return ref
}
