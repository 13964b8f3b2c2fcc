package httpguard_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentbridge/agentbridge/internal/httpguard"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// serve runs h with l's limits on 127.0.0.1 until the test ends.
func serve(t *testing.T, h http.Handler, l httpguard.Limits) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httpguard.Server(h, l)
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ln) }()
	t.Cleanup(func() {
		// Shutdown waits for the connections the server is closing.
		srv.Shutdown(context.Background())
		<-done
	})
	return ln.Addr().String()
}

// send writes raw to a new connection and returns what the server answers
// until it closes the connection (or the test gives up, a failure).
func send(t *testing.T, addr, raw string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, raw)
	got := make(chan string, 1)
	go func() { b, _ := io.ReadAll(c); got <- string(b) }()
	select {
	case s := <-got:
		return s
	case <-time.After(time.Minute): // a failure, not a wait: the limits are a second
		c.Close()
		<-got
		t.Errorf("%q: the server did not close the connection", raw)
		return ""
	}
}

// Each limit holds on the server Server returns: a stalled header, a
// stalled body and an idle kept-alive connection are closed, and headers
// over the cap are refused.
func TestServerLimits(t *testing.T) {
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, "slow", http.StatusRequestTimeout)
		}
	}), httpguard.Limits{ReadHeaderTimeout: time.Second, ReadTimeout: time.Second, IdleTimeout: time.Second, MaxHeaderBytes: 1 << 10})
	send(t, addr, "POST / HTTP/1.1\r\nHost: x\r\nX-Stalled")
	send(t, addr, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nonly this")
	if got := send(t, addr, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); !strings.HasPrefix(got, "HTTP/1.1 200") {
		t.Errorf("the kept-alive request got %q", got)
	}
	if got := send(t, addr, "GET / HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("a", 8<<10)+"\r\n\r\n"); !strings.HasPrefix(got, "HTTP/1.1 431") {
		t.Errorf("8 KiB of headers over a 1 KiB cap: %q", firstLine(got))
	}
}

func firstLine(s string) string { line, _, _ := strings.Cut(s, "\n"); return line }

// A full gate cuts off its oldest holder for a newcomer: the holder's
// blocked read fails at once and Leave reports it; the newcomer reads its
// whole body.
func TestGateCutsTheOldest(t *testing.T) {
	gate := httpguard.NewGate(httpguard.Limits{Unverified: 2})
	entered := make(chan struct{}, 3)
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pass := gate.Enter(w)
		entered <- struct{}{}
		_, err := io.ReadAll(r.Body)
		if pass.Leave() && err != nil {
			http.Error(w, "cut", http.StatusServiceUnavailable)
			return
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	}), httpguard.Limits{})
	type holder struct {
		conn net.Conn
		r    *bufio.Reader
	}
	stalled := func() holder {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\npart")
		<-entered
		return holder{c, bufio.NewReader(c)}
	}
	first := stalled()
	second := stalled()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+addr+"/", strings.NewReader("whole"))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("the newcomer: status %d, want 200", res.StatusCode)
	}
	if line, _ := first.r.ReadString('\n'); !strings.HasPrefix(line, "HTTP/1.1 503") {
		t.Errorf("the oldest holder got %q, want 503", line)
	}
	// The second holder was not cut: it reads on once its body comes.
	second.conn.Write([]byte(strings.Repeat("x", 96)))
	if line, _ := second.r.ReadString('\n'); !strings.HasPrefix(line, "HTTP/1.1 200") {
		t.Errorf("the second holder got %q once its body came, want 200", line)
	}
}
