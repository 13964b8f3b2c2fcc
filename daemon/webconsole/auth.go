package webconsole

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode"
)

// CookieName is the login cookie: it holds a session id, never the token.
const CookieName = "agentbridge_console"

// auth keeps the logins: each a random session id (the cookie) with its
// own CSRF token and the operator's name.
type auth struct {
	token [sha256.Size]byte
	empty bool
	tls   bool
	now   func() time.Time

	mu       sync.Mutex
	sessions map[string]*session // by the sha256 of its id
}

type session struct {
	csrf    string
	who     string
	expires time.Time
	created time.Time
}

// operator is who made a request, for the log: the name given at login
// and the address, or "bearer" for a bearer token.
type operator struct {
	who  string
	csrf string // "" for a bearer request, which needs none
}

func newAuth(opts Options) *auth {
	return &auth{
		token: sha256.Sum256([]byte(opts.Token.Reveal())), empty: opts.Token.IsZero(), tls: opts.TLS, now: opts.Now,
		sessions: map[string]*session{},
	}
}

func randomHex() string {
	var b [32]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return string(h[:])
}

// tokenOK compares a token in constant time: both sides are hashed first,
// so neither the comparison nor its length tells anything.
func (a *auth) tokenOK(got string) bool {
	h := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(h[:], a.token[:]) == 1 && !a.empty
}

// start records a login and returns its session id.
func (a *auth) start(who string) string {
	id := randomHex()
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, s := range a.sessions {
		if now.After(s.expires) {
			delete(a.sessions, k)
		}
	}
	if len(a.sessions) >= MaxSessions {
		var oldest string
		for k, s := range a.sessions {
			if oldest == "" || s.created.Before(a.sessions[oldest].created) {
				oldest = k
			}
		}
		delete(a.sessions, oldest)
	}
	a.sessions[sum(id)] = &session{csrf: randomHex(), who: who, created: now, expires: now.Add(SessionTTL)}
	return id
}

// check returns the request's operator, or false when it carries neither
// a live session cookie nor the bearer token.
func (a *auth) check(r *http.Request) (operator, bool) {
	if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		if a.tokenOK(strings.TrimSpace(bearer)) {
			return operator{who: "bearer from " + r.RemoteAddr}, true
		}
		return operator{}, false
	}
	ck, err := r.Cookie(CookieName)
	if err != nil {
		return operator{}, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.sessions[sum(ck.Value)]
	if s == nil || a.now().After(s.expires) {
		return operator{}, false
	}
	return operator{who: s.who + " from " + r.RemoteAddr, csrf: s.csrf}, true
}

func (a *auth) end(r *http.Request) {
	if ck, err := r.Cookie(CookieName); err == nil {
		a.mu.Lock()
		delete(a.sessions, sum(ck.Value))
		a.mu.Unlock()
	}
}

func (a *auth) cookie(value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: CookieName, Value: value, Path: "/", MaxAge: maxAge, HttpOnly: true, Secure: a.tls, SameSite: http.SameSiteStrictMode}
}

// authed serves h only to a logged-in operator; a state-changing request
// with a cookie must also carry the session's CSRF token.
func (c *Console) authed(h func(http.ResponseWriter, *http.Request, operator)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op, ok := c.auth.check(r)
		if !ok {
			if r.Header.Get("Authorization") != "" || r.Method != http.MethodGet || r.URL.Path == "/events" {
				c.log.Warn("console request refused: not logged in", "remote", r.RemoteAddr, "path", r.URL.Path)
				w.Header().Set("WWW-Authenticate", `Bearer realm="agentbridge console"`)
				http.Error(w, "unauthorized: log in at /login or send Authorization: Bearer TOKEN", http.StatusUnauthorized)
				return
			}
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		if r.Method == http.MethodPost && op.csrf != "" {
			got := r.PostFormValue("csrf")
			if subtle.ConstantTimeCompare([]byte(got), []byte(op.csrf)) != 1 {
				c.log.Warn("console request refused: bad CSRF token", "remote", r.RemoteAddr, "path", r.URL.Path)
				http.Error(w, "forbidden: the form's CSRF token is missing or wrong; reload the page", http.StatusForbidden)
				return
			}
		}
		h(w, r, op)
	})
}

type loginData struct {
	Error string
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	c.render(w, http.StatusOK, "login.html", loginData{})
}

func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if !c.opts.Login.Allow() {
		c.log.Warn("console login refused: too many attempts", "remote", r.RemoteAddr)
		w.Header().Set("Retry-After", "5")
		c.render(w, http.StatusTooManyRequests, "login.html", loginData{Error: "Too many attempts: wait a few seconds."})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if !c.auth.tokenOK(r.PostFormValue("token")) {
		c.log.Warn("console login refused: wrong token", "remote", r.RemoteAddr)
		c.render(w, http.StatusUnauthorized, "login.html", loginData{Error: "Wrong token."})
		return
	}
	who := cleanName(r.PostFormValue("name"))
	id := c.auth.start(who)
	c.log.Info("console login", "operator", who, "remote", r.RemoteAddr)
	http.SetCookie(w, c.auth.cookie(id, int(SessionTTL/time.Second)))
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request, op operator) {
	c.auth.end(r)
	http.SetCookie(w, c.auth.cookie("", -1))
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// cleanName is the name an operator gave at login, printable and short;
// "console" when none.
func cleanName(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return -1
	}, strings.TrimSpace(s))
	if r := []rune(s); len(r) > 40 {
		s = string(r[:40])
	}
	if s == "" {
		return "console"
	}
	return "console:" + s
}
