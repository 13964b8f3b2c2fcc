package slack_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/slack"
	"github.com/agentbridge/agentbridge/adapters/slack/slacktest"
	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/internal/httpguard"
)

// watchedListener records, for each connection the server accepts, how
// many bytes the server has read from it and whether it has closed it.
type watchedListener struct {
	net.Listener
	mu      sync.Mutex
	conns   map[string]*watchedConn // by the client's address
	changed chan struct{}
}

type watchedConn struct {
	net.Conn
	l      *watchedListener
	read   atomic.Int64
	closed atomic.Bool
}

func newWatchedListener(t *testing.T) *watchedListener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return &watchedListener{Listener: ln, conns: map[string]*watchedConn{}, changed: make(chan struct{})}
}

func (l *watchedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	wc := &watchedConn{Conn: c, l: l}
	l.mu.Lock()
	l.conns[c.RemoteAddr().String()] = wc
	l.mu.Unlock()
	l.notify()
	return wc, nil
}

func (l *watchedListener) notify() {
	l.mu.Lock()
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

// wait blocks until pending, checked after every change, reports nothing
// left to wait for.
func (l *watchedListener) wait(t *testing.T, what string, pending func() string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for {
		l.mu.Lock()
		ch := l.changed
		l.mu.Unlock()
		left := pending()
		if left == "" {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s: %s", what, left)
		}
	}
}

// server returns the server's side of the client connection c, nil
// before it is accepted.
func (l *watchedListener) server(c net.Conn) *watchedConn {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conns[c.LocalAddr().String()]
}

func (c *watchedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	c.l.notify()
	return n, err
}

func (c *watchedConn) Close() error {
	c.closed.Store(true)
	c.l.notify()
	return c.Conn.Close()
}

// attacker is one raw connection to the endpoint that sends a request's
// head and part of its body, then stalls, reading whatever comes back.
type attacker struct {
	conn    net.Conn
	written atomic.Int64
	wrote   chan struct{} // closed once the sends are done
	done    chan struct{} // closed once the server has closed the connection
	status  atomic.Value  // the answer's status code, "" if none
}

// attack opens a connection to addr and sends head, then body, and stalls.
func attack(t *testing.T, ln *watchedListener, addr, head string, body []byte) *attacker {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	a := &attacker{conn: c, wrote: make(chan struct{}), done: make(chan struct{})}
	a.status.Store("")
	go func() {
		defer ln.notify()
		defer close(a.wrote)
		n, err := io.WriteString(c, head)
		a.written.Add(int64(n))
		if err == nil {
			n, _ = c.Write(body)
			a.written.Add(int64(n))
		}
	}()
	go func() {
		defer close(a.done)
		line, _ := bufio.NewReader(c).ReadString('\n')
		if _, code, ok := strings.Cut(line, " "); ok {
			a.status.Store(code[:3])
		}
		io.Copy(io.Discard, c)
	}()
	return a
}

// requestHead is an HTTP/1.1 POST head with the given extra header lines.
func requestHead(contentLength int, header http.Header) string {
	var b strings.Builder
	fmt.Fprintf(&b, "POST /slack/events HTTP/1.1\r\nHost: bridge\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", contentLength)
	header.Write(&b)
	b.WriteString("\r\n")
	return b.String()
}

// forgedHeader has well-formed signature headers with a current timestamp
// and a signature nobody computed.
func forgedHeader() http.Header {
	h := http.Header{}
	h.Set("X-Slack-Request-Timestamp", strconv.FormatInt(time.Now().Unix(), 10))
	h.Set("X-Slack-Signature", "v0="+strings.Repeat("0", 64))
	return h
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestEventsEndpointBoundsUnverifiedRequests replays issue 27's attack on
// the Events API endpoint: many connections each send most of a large body
// and stop. Unsigned ones are refused on their headers, oversized ones on
// their Content-Length, both without a byte of body read; ones with forged
// signature headers are read httpguard.Unverified at a time, the oldest
// cut off (503) for each newcomer. What the bridge holds stays bounded
// (before the fix: every body, ~170 MiB here), and a signed request still
// gets through while the gate is full of stalled senders.
//
// Not parallel: it measures the process's heap, so it runs while the
// parallel tests wait.
func TestEventsEndpointBoundsUnverifiedRequests(t *testing.T) {
	fake := newFake(t, slacktest.Options{})
	ln := newWatchedListener(t)
	r := start(t, fake, func(o *slack.Options) {
		o.Mode, o.SigningSecret, o.EventsListener = slack.ModeEvents, signingSecret, ln
		// Long enough that only the gate cuts a stalled sender here.
		o.EventsLimits = httpguard.Limits{ReadTimeout: 10 * time.Minute}
	}, nil)
	addr := ln.Addr().String()
	payload := bytes.Repeat([]byte("x"), 1<<20)
	before := heapInUse()

	const forgedN, unsignedN, oversizedN = 100, 50, 50
	var forged, unsigned, oversized []*attacker
	for range unsignedN {
		unsigned = append(unsigned, attack(t, ln, addr, requestHead(1<<20, nil), payload[:1<<20-1024]))
	}
	for range oversizedN {
		oversized = append(oversized, attack(t, ln, addr, requestHead(1<<20, forgedHeader()), payload[:1<<20-1024]))
	}
	for range forgedN {
		forged = append(forged, attack(t, ln, addr, requestHead(500<<10, forgedHeader()), payload[:450<<10]))
	}
	all := append(append(append([]*attacker{}, unsigned...), oversized...), forged...)
	// Settled: every connection has sent what it will, and the server has
	// either read all of it or closed the connection.
	ln.wait(t, "the server to read or close every attacking connection", func() string {
		for i, a := range all {
			select {
			case <-a.wrote:
			default:
				return fmt.Sprintf("attacker %d is still sending", i)
			}
			s := ln.server(a.conn)
			if s == nil {
				return fmt.Sprintf("attacker %d is not accepted", i)
			}
			if !s.closed.Load() && s.read.Load() < a.written.Load() {
				return fmt.Sprintf("attacker %d: %d of %d bytes read", i, s.read.Load(), a.written.Load())
			}
		}
		return ""
	})
	grown := int64(heapInUse()) - int64(before)
	// The gate holds 32 bodies of 450 KiB; before the fix the server
	// held every body: 100×450 KiB + 100×1 MiB.
	if limit := int64(48 << 20); grown > limit {
		t.Errorf("heap grew %d MiB under the attack; want under %d MiB", grown>>20, limit>>20)
	}
	t.Logf("heap grew %.1f MiB under the attack", float64(grown)/(1<<20))

	// The gate keeps its bound of forged requests and lets go of the rest.
	ln.wait(t, "the forged requests beyond the gate's bound to be cut off", func() string {
		open := 0
		for _, a := range forged {
			if !ln.server(a.conn).closed.Load() {
				open++
			}
		}
		if open > httpguard.Unverified {
			return fmt.Sprintf("%d still open", open)
		}
		return ""
	})
	for _, a := range all {
		if s := ln.server(a.conn); s.closed.Load() {
			<-a.done
		}
	}
	count := func(as []*attacker, status string) int {
		n := 0
		for _, a := range as {
			if a.status.Load() == status {
				n++
			}
		}
		return n
	}
	if n := count(unsigned, "401"); n != unsignedN {
		t.Errorf("%d of %d unsigned requests answered 401", n, unsignedN)
	}
	if n := count(oversized, "413"); n != oversizedN {
		t.Errorf("%d of %d oversized requests answered 413", n, oversizedN)
	}
	if n, want := count(forged, "503"), forgedN-httpguard.Unverified; n != want {
		t.Errorf("%d forged requests cut off with 503; want %d (all but the %d left in the gate)", n, want, httpguard.Unverified)
	}

	// A genuine request while the gate is full of stalled senders.
	body := fake.EventCallback("EvAttack1", mention("U1", "C1", "600.000001", "", "<@UBOT> still here"))
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+addr+"/slack/events", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = slacktest.SignedHeader(signingSecret, time.Now(), body)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("signed request during the attack: status %d; want 200", res.StatusCode)
	}
	r.rec.wait(t, "the signed mention", func(ms []core.Message, _ []core.Action) bool {
		return len(ms) == 1 && ms[0].Text == "still here"
	})
}

// TestEventsEndpointCutsOffSlowSenders: a sender that stalls in its
// headers, one that stalls in its body and a kept-alive connection left
// idle are each closed by the server (issue 27; before the fix only the
// first was).
func TestEventsEndpointCutsOffSlowSenders(t *testing.T) {
	t.Parallel()
	fake := newFake(t, slacktest.Options{})
	ln := newWatchedListener(t)
	start(t, fake, func(o *slack.Options) {
		o.Mode, o.SigningSecret, o.EventsListener = slack.ModeEvents, signingSecret, ln
		o.EventsLimits = httpguard.Limits{ReadHeaderTimeout: time.Second, ReadTimeout: 2 * time.Second, IdleTimeout: time.Second}
	}, nil)
	addr := ln.Addr().String()
	challenge := []byte(`{"type":"url_verification","token":"x","challenge":"ch-9"}`)
	senders := map[string]*attacker{
		"stalled headers": attack(t, ln, addr, "POST /slack/events HTTP/1.1\r\nHost: bridge\r\nX-Slack-", nil),
		"stalled body":    attack(t, ln, addr, requestHead(1000, forgedHeader()), []byte(`{"type":`)),
		"idle keep-alive": attack(t, ln, addr, requestHead(len(challenge), slacktest.SignedHeader(signingSecret, time.Now(), challenge)), challenge),
	}
	// A failure, not a wait: the limits are seconds.
	giveUp, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for what, a := range senders {
		select {
		case <-a.done:
		case <-giveUp.Done():
			t.Errorf("%s: the connection is still open", what)
		}
	}
	if got := senders["idle keep-alive"].status.Load(); got != "200" {
		t.Errorf("the signed request on the kept-alive connection: status %q; want 200", got)
	}
}
