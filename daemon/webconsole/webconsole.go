// Package webconsole is the operator's console: a few server-rendered pages
// served from the serve process that show what runs now (live, over
// server-sent events), what failed, the schedules and the usage of the
// last 30 days, and stop a running turn or cancel queued messages. Every
// request needs the console's token (a login cookie holding a session,
// or a bearer header); forms carry a CSRF token; pages forbid framing,
// inline script and caching; and no configured secret ever leaves in a
// response.
package webconsole

import (
	"bytes"
	"context"
	"crypto/tls"
	"embed"
	"errors"
	"fmt"
	"html"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/engine"
	"github.com/agentbridge/agentbridge/internal/httpguard"
)

// Engine is what the console reads from and asks of the engine;
// *engine.Engine implements it. Every method returns copies and holds no
// lock once it returns.
type Engine interface {
	Snapshot() []engine.Live
	Failures() []engine.Failure
	Stop(ctx context.Context, key core.ConversationKey, operator string) (stopped bool, cancelled int)
	CancelQueued(ctx context.Context, key core.ConversationKey, operator string) int
}

// Usage reads the usage log; *store.Store implements it.
type Usage interface {
	UsageSince(ctx context.Context, since time.Time) ([]core.UsageEvent, error)
}

// Schedules lists the schedules; *schedule.Scheduler implements it.
type Schedules interface {
	All() []engine.Upcoming
}

// Adapter is one platform account's health.
type Adapter struct {
	Name string
	// Connected is set while the adapter runs; Since is when it last
	// started or stopped.
	Connected bool
	Since     time.Time
	Restarts  int
	// LastError is the last error the adapter stopped with, and when.
	LastError   string
	LastErrorAt time.Time
	// Rates is the use of each of its rate budgets, where it reports them.
	Rates []core.RateUse
}

// Health reports the adapters' health; the daemon's supervisor implements
// it.
type Health interface {
	Adapters() []Adapter
}

// Options configure a Console.
type Options struct {
	Token     core.Secret
	Engine    Engine
	Usage     Usage     // nil: no usage page figures
	Schedules Schedules // nil: nothing scheduled
	Health    Health    // nil: no adapter list
	// Secrets are values no response may contain (the config's tokens,
	// the profiles' environment values): each one of MinSecret bytes or
	// more is replaced by REDACTED wherever it would appear.
	Secrets []string
	// TLS is set when the console is served over HTTPS (its cookie is
	// then Secure).
	TLS bool
	// Link returns the address of a message in its platform's client, ""
	// where it has none.
	Link func(conv core.ConversationKey, msgID string) string
	// Name returns the names of a conversation's channel and thread as
	// its platform shows them, "" where unknown.
	Name func(conv core.ConversationKey) string
	Log  *slog.Logger
	// Refresh is how often the event stream looks for changes; default
	// half a second.
	Refresh time.Duration
	// Login overrides the login rate limiter (tests).
	Login *rate.Limiter
	// Now overrides the clock (tests).
	Now func() time.Time
}

// MinSecret is the shortest secret Options.Secrets redacts: a shorter
// value ("1", "true") would blank out ordinary text.
const MinSecret = 6

// Limits of the console.
const (
	// SessionTTL is how long a login lasts.
	SessionTTL = 12 * time.Hour
	// MaxSessions bounds the logins held at once; the oldest goes first.
	MaxSessions = 256
	// LoginRate and LoginBurst bound login attempts over all callers.
	LoginRate  = 1
	LoginBurst = 5
)

//go:embed assets
var assets embed.FS

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"ago":     ago,
	"when":    func(t time.Time) string { return when(t) },
	"conv":    convName,
	"who":     who,
	"usd":     func(v float64) string { return fmt.Sprintf("$%.4f", v) },
	"percent": func(v float64) string { return fmt.Sprintf("%.0f %%", 100*v) },
}).ParseFS(assets, "assets/*.html"))

// Console serves the pages. Create it with New.
type Console struct {
	opts     Options
	log      *slog.Logger
	auth     *auth
	secrets  *strings.Replacer
	mux      *http.ServeMux
	crossing *http.CrossOriginProtection
}

// New returns the console's handler. It does no I/O.
func New(opts Options) *Console {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Refresh <= 0 {
		opts.Refresh = 500 * time.Millisecond
	}
	if opts.Login == nil {
		opts.Login = rate.NewLimiter(LoginRate, LoginBurst)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Console{opts: opts, log: opts.Log, auth: newAuth(opts), crossing: http.NewCrossOriginProtection()}
	var secrets []string
	for _, s := range append([]string{opts.Token.Reveal()}, opts.Secrets...) {
		if len(s) >= MinSecret {
			// As written and as a page escapes it.
			secrets = append(secrets, s, template.HTMLEscapeString(s), html.EscapeString(s))
		}
	}
	// Longest first, so a secret that contains another goes whole.
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	var pairs []string
	for _, s := range slices.Compact(secrets) {
		pairs = append(pairs, s, "REDACTED")
	}
	c.secrets = strings.NewReplacer(pairs...)
	m := http.NewServeMux()
	m.HandleFunc("GET /login", c.loginPage)
	m.HandleFunc("POST /login", c.login)
	m.Handle("POST /logout", c.authed(c.logout))
	m.Handle("GET /{$}", c.authed(c.livePage))
	m.Handle("GET /history", c.authed(c.historyPage))
	m.Handle("GET /usage", c.authed(c.usagePage))
	m.Handle("GET /events", c.authed(c.events))
	m.Handle("POST /stop", c.authed(c.stop))
	m.Handle("POST /cancel", c.authed(c.cancel))
	m.Handle("GET /static/", http.StripPrefix("/static/", http.HandlerFunc(c.static)))
	c.mux = m
	return c
}

// ServeHTTP implements http.Handler: the headers every answer carries,
// then the page.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'; object-src 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	if c.opts.TLS {
		h.Set("Strict-Transport-Security", "max-age=31536000")
	}
	// A form posted from another site is refused before anything reads
	// it (the browser's Sec-Fetch-Site, or Origin against Host).
	if err := c.crossing.Check(r); err != nil {
		c.log.Warn("console request refused: cross-origin", "remote", r.RemoteAddr, "path", r.URL.Path)
		http.Error(w, "cross-origin request refused", http.StatusForbidden)
		return
	}
	c.mux.ServeHTTP(w, r)
}

// render writes page name with data, its secrets redacted.
func (c *Console) render(w http.ResponseWriter, status int, name string, data any) {
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, name, data); err != nil {
		c.log.Error("console page failed", "page", name, "err", err)
		http.Error(w, "the page could not be shown", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(c.redact(b.Bytes()))
}

func (c *Console) redact(b []byte) []byte {
	return []byte(c.secrets.Replace(string(b)))
}

func (c *Console) static(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "app.js":
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	case "app.css":
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	default:
		http.NotFound(w, r)
		return
	}
	b, _ := assets.ReadFile("assets/" + r.URL.Path)
	w.Write(b)
}

// Server is the console's HTTP server on ln: httpguard's limits, HTTPS
// when cert is set. It refuses a plain HTTP listener on an address other
// hosts reach unless insecure (httpguard.Exposed).
func Server(c *Console, ln net.Listener, cert *tls.Certificate, insecure bool) (*http.Server, net.Listener, error) {
	if err := httpguard.Exposed(ln.Addr().String(), cert != nil, insecure); err != nil {
		return nil, nil, fmt.Errorf("console: %w", err)
	}
	srv := httpguard.Server(c, httpguard.Limits{})
	if cert != nil {
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{*cert}, MinVersion: tls.VersionTLS12}
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	return srv, ln, nil
}

// Run serves srv on ln until ctx ends, then closes it (an event stream
// open in a browser would otherwise hold a graceful shutdown).
func Run(ctx context.Context, srv *http.Server, ln net.Listener, log *slog.Logger) {
	stop := context.AfterFunc(ctx, func() { srv.Close() })
	defer stop()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error("console listener stopped", "err", err)
	}
}
