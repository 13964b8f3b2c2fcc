package webconsole

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/core/engine"
	"github.com/agentbridge/agentbridge/core/platformtest"
	"github.com/agentbridge/agentbridge/core/render"
	"github.com/agentbridge/agentbridge/internal/testagent"
	"github.com/agentbridge/agentbridge/store"
)

const (
	token         = "console-token-0123456789abcdef"
	profileSecret = "profile-secret-value-4242"
	configSecret  = "xoxb-config-secret-9999"
)

var (
	conv  = core.ConversationKey{Platform: "fake", Workspace: "w", Channel: "c1", Thread: "t1"}
	alice = core.User{ID: "alice", Name: "Alice"}
)

// rig is a real engine with the test binary as its agent, a fake
// platform, a bbolt store and the console in front of them.
type rig struct {
	t    *testing.T
	eng  *engine.Engine
	plat *platformtest.Platform
	st   *store.Store
	srv  *httptest.Server
	next int
}

func newRig(t *testing.T, tweak func(*Options)) *rig {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "bridge.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	prof := &agentproc.Profile{
		Name: "test", Command: os.Args[0], Args: []string{"-test.run=^$"},
		Env:     map[string]string{testagent.Env: "1", "GORACE": "atexit_sleep_ms=0", "API_KEY": profileSecret},
		Timeout: 30 * time.Second, KillGrace: 300 * time.Millisecond, Streaming: true, Permission: true,
		PermissionTimeout: 20 * time.Second,
	}
	s := &engine.Settings{
		Platforms:      map[string]engine.PlatformSettings{"fake": {AllowUsers: []string{"alice"}}},
		Profiles:       map[string]*agentproc.Profile{"test": prof},
		DefaultProfile: "test",
		QueueDepth:     3,
	}
	lim := platformtest.DefaultLimits
	lim.EditInterval = 20 * time.Millisecond
	lim.Dialect = render.Plain
	plat := platformtest.New("fake", lim)
	eng := engine.New(st, s, engine.Options{TempDir: t.TempDir()})
	h := eng.Handler(plat)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); plat.Run(ctx, h) }()
	<-plat.Running()
	opts := Options{
		Token: token, Engine: eng, Usage: st, Secrets: []string{profileSecret, configSecret, "1"},
		Refresh: 20 * time.Millisecond, Log: slog.New(slog.DiscardHandler),
		Login: rate.NewLimiter(rate.Inf, 1),
	}
	if tweak != nil {
		tweak(&opts)
	}
	srv := httptest.NewServer(New(opts))
	r := &rig{t: t, eng: eng, plat: plat, st: st, srv: srv}
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		eng.Shutdown(sctx, 5*time.Second)
		cancel()
		<-done
		st.Close()
	})
	return r
}

func (r *rig) send(text string) {
	r.next++
	r.plat.Deliver(r.t.Context(), core.Message{Conv: conv, ID: r.t.Name() + "-" + string(rune('a'+r.next)), From: alice, Text: text})
}

// eventually waits until cond holds (it checks what the engine has done,
// which nothing signals), failing after a generous bound.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// client is a browser-like client: a cookie jar, redirects not followed.
func (r *rig) client() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func (r *rig) do(c *http.Client, method, path string, form url.Values, hdr map[string]string) (*http.Response, string) {
	r.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, r.srv.URL+path, body)
	if err != nil {
		r.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// login logs c in and returns the CSRF token of its session.
func (r *rig) login(c *http.Client) string {
	r.t.Helper()
	resp, _ := r.do(c, "POST", "/login", url.Values{"token": {token}, "name": {"ops"}}, nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		r.t.Fatalf("login: %s, want a 303 to /", resp.Status)
	}
	_, page := r.do(c, "GET", "/", nil, nil)
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page)
	if m == nil {
		r.t.Fatalf("no CSRF token on the live page:\n%s", page)
	}
	return m[1]
}

func TestHeaders(t *testing.T) {
	r := newRig(t, nil)
	c := r.client()
	for _, path := range []string{"/login", "/static/app.js"} {
		resp, _ := r.do(c, "GET", path, nil, nil)
		h := resp.Header
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("%s: Content-Security-Policy %q", path, csp)
		}
		if h.Get("X-Frame-Options") != "DENY" || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: headers %v", path, h)
		}
	}
	_, page := r.do(c, "GET", "/login", nil, nil)
	if !strings.Contains(page, `name="viewport"`) || strings.Contains(page, "<script>") || strings.Contains(page, "style=") {
		t.Errorf("login page: no viewport, or inline script or style:\n%s", page)
	}
}

func TestAuth(t *testing.T) {
	r := newRig(t, nil)
	c := r.client()
	// No token: pages send to the login form, the stream and actions are refused.
	if resp, _ := r.do(c, "GET", "/", nil, nil); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login" {
		t.Errorf("GET / without login: %s → %s", resp.Status, resp.Header.Get("Location"))
	}
	for _, p := range []struct{ method, path string }{{"GET", "/events"}, {"POST", "/stop"}, {"POST", "/cancel"}} {
		if resp, _ := r.do(c, p.method, p.path, url.Values{}, nil); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s %s without login: %s, want 401", p.method, p.path, resp.Status)
		}
	}
	// A wrong token, at the form or as a bearer.
	if resp, _ := r.do(c, "POST", "/login", url.Values{"token": {token + "x"}}, nil); resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Errorf("wrong token: %s, cookies %v", resp.Status, resp.Cookies())
	}
	if resp, _ := r.do(c, "GET", "/history", nil, map[string]string{"Authorization": "Bearer nope"}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong bearer: %s", resp.Status)
	}
	// The bearer token works without a login.
	if resp, page := r.do(c, "GET", "/history", nil, map[string]string{"Authorization": "Bearer " + token}); resp.StatusCode != http.StatusOK || !strings.Contains(page, "Recent failed turns") {
		t.Errorf("bearer: %s", resp.Status)
	}
	// The login cookie: a session, not the token; HttpOnly, SameSite=Strict.
	resp, _ := r.do(c, "POST", "/login", url.Values{"token": {token}}, nil)
	var ck *http.Cookie
	for _, k := range resp.Cookies() {
		if k.Name == CookieName {
			ck = k
		}
	}
	if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Secure || strings.Contains(ck.Value, token) || ck.Value == "" {
		t.Fatalf("login cookie %+v", ck)
	}
	if resp, page := r.do(c, "GET", "/", nil, nil); resp.StatusCode != http.StatusOK || !strings.Contains(page, "Nothing is running") {
		t.Errorf("GET / logged in: %s", resp.Status)
	}
	// Logged out, the cookie is dead even if replayed.
	csrf := r.login(c)
	r.do(c, "POST", "/logout", url.Values{"csrf": {csrf}}, nil)
	replay := r.client()
	u, _ := url.Parse(r.srv.URL)
	replay.Jar.SetCookies(u, []*http.Cookie{{Name: CookieName, Value: "0123"}})
	if resp, _ := r.do(replay, "GET", "/events", nil, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("made-up cookie: %s", resp.Status)
	}
}

func TestCookieSecureUnderTLS(t *testing.T) {
	a := newAuth(Options{Token: token, TLS: true, Now: time.Now})
	if ck := a.cookie("x", 1); !ck.Secure || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode {
		t.Errorf("cookie under TLS %+v", ck)
	}
}

func TestLoginRateLimited(t *testing.T) {
	r := newRig(t, func(o *Options) { o.Login = rate.NewLimiter(rate.Every(time.Hour), 2) })
	c := r.client()
	var last *http.Response
	for range 3 {
		last, _ = r.do(c, "POST", "/login", url.Values{"token": {"guess"}}, nil)
	}
	if last.StatusCode != http.StatusTooManyRequests {
		t.Errorf("third guess: %s, want 429", last.Status)
	}
	// Even the right token waits: the limiter comes first.
	if resp, _ := r.do(c, "POST", "/login", url.Values{"token": {token}}, nil); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("right token past the limit: %s, want 429", resp.Status)
	}
}

func TestCSRFAndCrossSite(t *testing.T) {
	r := newRig(t, nil)
	c := r.client()
	csrf := r.login(c)
	key := url.Values{"platform": {conv.Platform}, "workspace": {conv.Workspace}, "channel": {conv.Channel}, "thread": {conv.Thread}}
	if resp, _ := r.do(c, "POST", "/stop", key, nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("stop without a CSRF token: %s, want 403", resp.Status)
	}
	bad := url.Values{"csrf": {strings.Repeat("0", len(csrf))}}
	for k, v := range key {
		bad[k] = v
	}
	if resp, _ := r.do(c, "POST", "/stop", bad, nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("stop with a wrong CSRF token: %s, want 403", resp.Status)
	}
	// A form posted from another site is refused even with the right token.
	good := url.Values{"csrf": {csrf}}
	for k, v := range key {
		good[k] = v
	}
	if resp, _ := r.do(c, "POST", "/stop", good, map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site stop: %s, want 403", resp.Status)
	}
	if resp, _ := r.do(c, "POST", "/login", url.Values{"token": {token}}, map[string]string{"Origin": "https://evil.example"}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site login: %s, want 403", resp.Status)
	}
	if resp, _ := r.do(c, "POST", "/stop", good, nil); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("stop with the CSRF token: %s, want 303", resp.Status)
	}
}

// TestExposure: plain HTTP on an address other hosts reach is refused
// unless insecure; loopback and TLS are fine.
func TestExposure(t *testing.T) {
	con := New(Options{Token: token, Engine: newRig(t, nil).eng})
	listen := func(addr string) net.Listener {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Skipf("cannot listen on %s: %v", addr, err)
		}
		t.Cleanup(func() { ln.Close() })
		return ln
	}
	if _, _, err := Server(con, listen("0.0.0.0:0"), nil, false); err == nil || !strings.Contains(err.Error(), "not a loopback address") {
		t.Errorf("0.0.0.0 without TLS: %v, want a refusal", err)
	}
	if _, _, err := Server(con, listen("0.0.0.0:0"), nil, true); err != nil {
		t.Errorf("0.0.0.0 with insecure: %v", err)
	}
	if _, _, err := Server(con, listen("127.0.0.1:0"), nil, false); err != nil {
		t.Errorf("loopback: %v", err)
	}
}

// TestStopAndCancel: the console's stop reaches the agent and the chat
// as the chat's own /stop does; cancel drops only the queued messages.
func TestStopAndCancel(t *testing.T) {
	r := newRig(t, func(o *Options) {
		o.Name = func(c core.ConversationKey) string { return "#general › " + c.Thread }
	})
	c := r.client()
	csrf := r.login(c)
	gate := filepath.Join(t.TempDir(), "open")
	r.send("gate:" + gate)
	r.send("queued one")
	eventually(t, "a running turn with one queued", func() bool {
		l := r.eng.Snapshot()
		return len(l) == 1 && l[0].Running && l[0].Queued == 1 && strings.Contains(l[0].Reply, "gated")
	})
	_, page := r.do(c, "GET", "/", nil, nil)
	for _, want := range []string{"gated", "alice", "Alice", "test", "Cancel 1 queued", ">Stop<", "#general › t1 (w / c1 / thread t1)"} {
		if !strings.Contains(page, want) {
			t.Errorf("live page lacks %q:\n%s", want, page)
		}
	}
	form := url.Values{"csrf": {csrf}, "platform": {conv.Platform}, "workspace": {conv.Workspace}, "channel": {conv.Channel}, "thread": {conv.Thread}}
	if resp, _ := r.do(c, "POST", "/cancel", form, nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("cancel: %s", resp.Status)
	}
	r.plat.Wait(t.Context(), func() bool { return hasText(r.plat.Texts(conv), "⏹ Cancelled 1 queued message(s).") })
	if !hasText(r.plat.Texts(conv), "⏹ Cancelled: /stop was sent before this message ran.") {
		t.Errorf("the queued message's sender was not told: %q", r.plat.Texts(conv))
	}
	if l := r.eng.Snapshot(); len(l) != 1 || !l[0].Running || l[0].Queued != 0 {
		t.Fatalf("after cancel: %+v, want the turn still running, nothing queued", l)
	}
	if resp, _ := r.do(c, "POST", "/stop", form, nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("stop: %s", resp.Status)
	}
	r.plat.Wait(t.Context(), func() bool { return hasText(r.plat.Texts(conv), "Stopped.") })
	eventually(t, "the stopped turn gone from the snapshot", func() bool { return len(r.eng.Snapshot()) == 0 })
	if _, page := r.do(c, "GET", "/", nil, nil); !strings.Contains(page, "Nothing is running") {
		t.Errorf("live page after stop:\n%s", page)
	}
}

func hasText(texts []string, want string) bool {
	for _, s := range texts {
		if strings.Contains(s, want) {
			return true
		}
	}
	return false
}

// TestSecretsNeverShown renders every page, the event stream and the
// actions' answers with known secrets configured — one of them a word
// the agent streams — and finds none of them.
func TestSecretsNeverShown(t *testing.T) {
	r := newRig(t, func(o *Options) { o.Secrets = append(o.Secrets, "working", "<&secret\"sign>") })
	ctx := t.Context()
	r.st.RecordUsage(ctx, core.UsageEvent{At: time.Now(), Platform: "fake", User: "alice", Profile: "test", Usage: core.Usage{Turns: 1, InputTokens: 5}})
	c := r.client()
	csrf := r.login(c)
	r.send("hang")
	r.next++
	r.plat.Deliver(ctx, core.Message{Conv: conv, ID: "queued", From: core.User{ID: "alice", Name: "<&secret\"sign>"}, Text: "after"})
	eventually(t, "a running turn", func() bool { l := r.eng.Snapshot(); return len(l) == 1 && l[0].Reply != "" && l[0].Queued == 1 })

	var bodies []string
	for _, p := range []string{"/", "/history", "/usage", "/login", "/static/app.js"} {
		resp, body := r.do(c, "GET", p, nil, nil)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %s", p, resp.Status)
		}
		bodies = append(bodies, body)
	}
	if !strings.Contains(bodies[0], "REDACTED") {
		t.Errorf("the streamed secret is not shown as REDACTED on the live page:\n%s", bodies[0])
	}
	bodies = append(bodies, r.firstFrame(c))
	_, body := r.do(c, "POST", "/stop", url.Values{"csrf": {csrf}, "platform": {conv.Platform}, "workspace": {conv.Workspace}, "channel": {conv.Channel}, "thread": {conv.Thread}}, nil)
	bodies = append(bodies, body)
	eventually(t, "the stopped turn gone", func() bool { return len(r.eng.Snapshot()) == 0 })
	for i, b := range bodies {
		for _, s := range []string{token, profileSecret, configSecret, "working", "secret"} {
			if strings.Contains(b, s) {
				t.Errorf("response %d shows secret %q:\n%s", i, s, b)
			}
		}
	}
}

// firstFrame reads the event stream's first live frame.
func (r *rig) firstFrame(c *http.Client) string {
	r.t.Helper()
	ctx, cancel := context.WithCancel(r.t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", r.srv.URL+"/events", nil)
	resp, err := c.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		r.t.Fatalf("events: %s %q", resp.Status, ct)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			return d
		}
	}
	r.t.Fatalf("event stream ended: %v", sc.Err())
	return ""
}

// TestUsageAndHistory: the usage page adds up the log per day, user and
// profile; a failed turn is listed with its error.
func TestUsageAndHistory(t *testing.T) {
	r := newRig(t, func(o *Options) {
		o.Link = func(c core.ConversationKey, id string) string { return "https://chat.example/" + c.Channel + "/" + id }
		o.Name = func(core.ConversationKey) string { return "#general" }
	})
	ctx := t.Context()
	now := time.Now()
	for _, ev := range []core.UsageEvent{
		{At: now, Platform: "fake", User: "alice", Profile: "claude", Usage: core.Usage{Turns: 1, InputTokens: 100, OutputTokens: 7, CostUSD: 0.25}},
		{At: now, Platform: "fake", User: "alice", Profile: "codex", Usage: core.Usage{Turns: 1, InputTokens: 20, OutputTokens: 3}},
		{At: now.AddDate(0, 0, -3), Platform: "fake", User: "bob", Profile: "claude", Usage: core.Usage{Turns: 1, InputTokens: 1}},
		{At: now.AddDate(0, 0, -40), Platform: "fake", User: "old", Profile: "gone", Usage: core.Usage{Turns: 1}},
	} {
		if err := r.st.RecordUsage(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	c := r.client()
	r.login(c)
	_, page := r.do(c, "GET", "/usage", nil, nil)
	for _, want := range []string{
		"<svg", `<td>fake alice</td><td>2</td><td>120</td><td>10</td><td>$0.2500</td>`,
		`<td>claude</td><td>2</td><td>101</td>`, `<td>codex</td><td>1</td>`,
		`<td>` + now.Format(time.DateOnly) + `</td><td>2</td>`,
		`<td>` + now.AddDate(0, 0, -29).Format(time.DateOnly) + `</td><td>0</td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("usage page lacks %s", want)
		}
	}
	if strings.Contains(page, "gone") || strings.Contains(page, now.AddDate(0, 0, -30).Format(time.DateOnly)) {
		t.Errorf("usage page shows what is older than 30 days")
	}
	r.send("fail")
	eventually(t, "the failed turn recorded", func() bool { return len(r.eng.Failures()) == 1 })
	_, page = r.do(c, "GET", "/history", nil, nil)
	f := r.eng.Failures()[0]
	for _, want := range []string{">error<", "Alice (alice)", `href="https://chat.example/c1/` + f.MsgID + `" rel="noreferrer">#general</a>`} {
		if !strings.Contains(page, want) {
			t.Errorf("history page lacks %s:\n%s", want, page)
		}
	}
	if f.Error == "" || !strings.Contains(page, f.Error) {
		t.Errorf("history page lacks the error %q", f.Error)
	}
}
