// Package httpguard holds the limits every HTTP endpoint the bridge opens
// to the internet shares (the Slack Events API, the Telegram webhook, the
// trigger): the server's timeouts and header cap, and a bound on the
// requests it holds before it can tell whether they are genuine.
package httpguard

import (
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Defaults of Limits.
const (
	// ReadHeaderTimeout bounds the wait for a request's headers.
	ReadHeaderTimeout = 5 * time.Second
	// ReadTimeout bounds the whole request, headers and body: a sender
	// that stalls is cut off.
	ReadTimeout = 10 * time.Second
	// IdleTimeout bounds a kept-alive connection's wait for its next
	// request.
	IdleTimeout = 60 * time.Second
	// MaxHeaderBytes caps a request's headers.
	MaxHeaderBytes = 16 << 10
	// Unverified is how many requests an endpoint holds at once before
	// their signature is checked.
	Unverified = 32
)

// Limits bound one endpoint. Zero fields take the defaults above.
type Limits struct {
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int
	// Unverified is the bound of a Gate made from these limits.
	Unverified int
}

func (l Limits) withDefaults() Limits {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.ReadHeaderTimeout, ReadHeaderTimeout)
	def(&l.ReadTimeout, ReadTimeout)
	def(&l.IdleTimeout, IdleTimeout)
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = MaxHeaderBytes
	}
	if l.Unverified <= 0 {
		l.Unverified = Unverified
	}
	return l
}

// Server returns an http.Server for h with l's timeouts and header cap.
// There is no write timeout: an answer may be held open on purpose (the
// trigger's "wait").
func Server(h http.Handler, l Limits) *http.Server {
	l = l.withDefaults()
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
	}
}

// Gate bounds the requests an endpoint holds while it reads a body it
// cannot yet trust (Slack signs the body, so the signature can only be
// checked once it is read). When the gate is full, a newcomer takes the
// place of the oldest holder, whose read fails at once and which is
// answered 503: a genuine request arrives whole and is read in an
// instant, so a crowd of stalled senders cannot keep it out, and what the
// endpoint holds stays at the bound times the body cap whatever the crowd.
type Gate struct {
	max  int
	mu   sync.Mutex
	held []*Pass // oldest first
}

// NewGate returns a gate that holds l.Unverified requests at once.
func NewGate(l Limits) *Gate {
	return &Gate{max: l.withDefaults().Unverified}
}

// Pass is one request's place in a Gate.
type Pass struct {
	g   *Gate
	rc  *http.ResponseController
	cut bool // guarded by g.mu
}

// Enter takes a place for the request answered by w, cutting off the
// oldest holder when the gate is full. Call Leave once the request is
// verified or refused.
func (g *Gate) Enter(w http.ResponseWriter) *Pass {
	p := &Pass{g: g, rc: http.NewResponseController(w)}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.held) >= g.max {
		old := g.held[0]
		g.held = g.held[1:]
		old.cut = true
		// A deadline in the past fails the holder's blocked body read
		// now; the server closes its connection after the answer.
		old.rc.SetReadDeadline(time.Unix(1, 0))
	}
	g.held = append(g.held, p)
	return p
}

// Leave gives the place back and reports whether the request was cut off
// to make room for another (answer it 503 if its body is incomplete).
func (p *Pass) Leave() (cut bool) {
	g := p.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if i := slices.Index(g.held, p); i >= 0 {
		g.held = slices.Delete(g.held, i, i+1)
	}
	return p.cut
}

// Loopback reports whether host (of a host:port) is a loopback address,
// which only this machine reaches.
func Loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Exposed refuses to serve a page that takes a password in plain HTTP on
// an address other hosts reach: addr must be loopback, or served with TLS,
// or the operator must have said insecure (a TLS proxy in front).
func Exposed(addr string, tls, insecure bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if Loopback(host) || tls || insecure {
		return nil
	}
	return fmt.Errorf("%s is not a loopback address: serving there in plain HTTP would send the token readable over the network; set tls_cert and tls_key, or insecure: true behind a TLS proxy", addr)
}
