package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/telegram/telegramtest"
)

// serveProcess is agentbridge serve running as its own process (this test
// binary re-executed as main), so signals reach it as they would in
// production.
type serveProcess struct {
	cmd     *exec.Cmd
	mu      sync.Mutex
	log     strings.Builder
	changed chan struct{} // closed and replaced on each log line
	exited  chan struct{}
	err     error // Wait's, once exited is closed
}

func startServe(t *testing.T, cfg string) *serveProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "serve", "--config", cfg)
	cmd.Env = append(os.Environ(), mainEnv+"=1", "GORACE=atexit_sleep_ms=0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &serveProcess{cmd: cmd, changed: make(chan struct{}), exited: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text() + "\n")
			close(p.changed)
			p.changed = make(chan struct{})
			p.mu.Unlock()
		}
		io.Copy(io.Discard, stderr)
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

func (p *serveProcess) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// waitLog waits until the log matches re, and returns the match.
func (p *serveProcess) waitLog(t *testing.T, re *regexp.Regexp, deadline <-chan time.Time) []string {
	t.Helper()
	for {
		p.mu.Lock()
		m, ch := re.FindStringSubmatch(p.log.String()), p.changed
		p.mu.Unlock()
		if m != nil {
			return m
		}
		select {
		case <-ch:
		case <-p.exited:
			t.Fatalf("serve exited (%v) before its log matched %s:\n%s", p.err, re, p.Log())
		case <-deadline:
			t.Fatalf("serve's log never matched %s:\n%s", re, p.Log())
		}
	}
}

// TestServeSurvivesSIGHUPAtAnyMoment sends SIGHUP to a real serve process
// over and over from its first line of output, through the start of its
// adapters, while it serves and while it drains: every one is a reload,
// none ends the process, and SIGTERM still stops it cleanly (exit 0).
func TestServeSurvivesSIGHUPAtAnyMoment(t *testing.T) {
	const token = "987654:HUP-SECRET"
	t.Setenv("AGENTBRIDGE_DEMO_DELAY", "1ms")
	fake := telegramtest.NewServer(token)
	defer fake.Close()
	// The literal token draws a warning, so serve writes a line before
	// its adapters start.
	cfg := writeConfig(t, fmt.Sprintf(`store: %s
profiles: {demo: builtin:demo}
default_profile: demo
telegram:
  enabled: true
  token: %s
  api_url: %s
  allow_users: ["1001"]
`, filepath.Join(t.TempDir(), "bridge.db"), token, fake.URL))

	for round, name := range []string{"Alpha", "Bravo", "Charlie"} {
		deadline := time.After(60 * time.Second)
		p := startServe(t, cfg)
		p.waitLog(t, regexp.MustCompile(`.`), deadline)
		hups := 0
		hup := func() {
			t.Helper()
			if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
				t.Fatalf("round %d: SIGHUP %d: %v\n%s", round, hups, err, p.Log())
			}
			hups++
		}
		// Until it says it is serving, and some more.
		for !strings.Contains(p.Log(), "agentbridge serving") {
			hup()
			select {
			case <-p.exited:
				t.Fatalf("round %d: serve died after %d SIGHUPs during start-up (%v):\n%s", round, hups, p.err, p.Log())
			case <-deadline:
				t.Fatalf("round %d: serve never started:\n%s", round, p.Log())
			case <-time.After(time.Millisecond):
			}
		}
		for range 20 {
			hup()
		}
		p.waitLog(t, regexp.MustCompile(`config reloaded`), deadline)
		// It still answers.
		fake.Push(telegramtest.PrivateMessage(round+1, telegramtest.User(1001, "Alice", "alice"), "my name is "+name))
		for {
			ch := fake.Changed()
			if msgs := fake.Messages(1001); len(msgs) > 0 && strings.Contains(msgs[len(msgs)-1].Text, name) && len(fake.Pending()) == 0 {
				break
			}
			select {
			case <-ch:
			case <-p.exited:
				t.Fatalf("round %d: serve exited (%v):\n%s", round, p.err, p.Log())
			case <-deadline:
				t.Fatalf("round %d: no reply after the SIGHUPs:\n%s", round, p.Log())
			}
		}
		// SIGTERM, with hangups during the drain.
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	drain:
		for {
			select {
			case <-p.exited:
				break drain
			case <-deadline:
				t.Fatalf("round %d: serve did not stop on SIGTERM:\n%s", round, p.Log())
			case <-time.After(time.Millisecond):
				if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil && !errors.Is(err, os.ErrProcessDone) {
					t.Fatal(err)
				}
			}
		}
		if p.err != nil {
			t.Fatalf("round %d: serve ended with %v after %d SIGHUPs; want exit 0:\n%s", round, p.err, hups, p.Log())
		}
		if strings.Contains(p.Log(), "HUP-SECRET") {
			t.Errorf("the token in serve's log:\n%s", p.Log())
		}
	}
}

// TestServeMetricsBeforeTraffic: with metrics.listen on port 0, serve logs
// the address it bound, and a scrape there before any message shows every
// agentbridge_* series of the enabled accounts and profiles at zero.
func TestServeMetricsBeforeTraffic(t *testing.T) {
	const token = "987654:METRICS-SECRET"
	t.Setenv("AGENTBRIDGE_TEST_TG_TOKEN", token)
	fake := telegramtest.NewServer(token)
	defer fake.Close()
	cfg := writeConfig(t, fmt.Sprintf(`store: %s
profiles: {demo: builtin:demo}
default_profile: demo
metrics: {listen: "127.0.0.1:0"}
telegram:
  enabled: true
  token: ${AGENTBRIDGE_TEST_TG_TOKEN}
  api_url: %s
  allow_users: ["1001"]
`, filepath.Join(t.TempDir(), "bridge.db"), fake.URL))
	deadline := time.After(60 * time.Second)
	p := startServe(t, cfg)
	addr := p.waitLog(t, regexp.MustCompile(`msg="metrics listening" addr=(127\.0\.0\.1:\d+)`), deadline)[1]
	if strings.HasSuffix(addr, ":0") {
		t.Fatalf("serve logged %s, not the port it bound", addr)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`agentbridge_messages_total{platform="telegram",result="turn"} 0`,
		`agentbridge_messages_total{platform="telegram",result="busy"} 0`,
		`agentbridge_messages_total{platform="telegram",result="denied"} 0`,
		`agentbridge_turns_total{platform="telegram",profile="demo",result="ok"} 0`,
		`agentbridge_turns_total{platform="telegram",profile="demo",result="error"} 0`,
		`agentbridge_turns_running{platform="telegram",profile="demo"} 0`,
		`agentbridge_turn_duration_seconds_count{platform="telegram",profile="demo"} 0`,
		`agentbridge_permission_requests_total{platform="telegram",result="allowed"} 0`,
		`agentbridge_replies_lost_total{platform="telegram"} 0`,
		`agentbridge_turns_waiting{platform="telegram"} 0`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics before any traffic lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
	if len(fake.Calls("sendMessage")) != 0 {
		t.Errorf("the bridge sent messages before any traffic")
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-deadline:
		t.Fatal("serve did not stop")
	}
	if p.err != nil {
		t.Fatalf("serve: %v\n%s", p.err, p.Log())
	}
}

// TestServeMetricsAddressTaken: a metrics address already in use stops
// serve at start with the reason, before any adapter runs.
func TestServeMetricsAddressTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	const token = "987654:TAKEN-SECRET"
	t.Setenv("AGENTBRIDGE_TEST_TG_TOKEN", token)
	fake := telegramtest.NewServer(token)
	defer fake.Close()
	cfg := writeConfig(t, fmt.Sprintf(`store: %s
profiles: {demo: builtin:demo}
default_profile: demo
metrics: {listen: "%s"}
telegram:
  enabled: true
  token: ${AGENTBRIDGE_TEST_TG_TOKEN}
  api_url: %s
  allow_users: ["1001"]
`, filepath.Join(t.TempDir(), "bridge.db"), taken.Addr(), fake.URL))
	var stderr tgLogBuffer
	err = run(t.Context(), []string{"serve", "--config", cfg}, nil, &tgLogBuffer{}, &stderr)
	if code := exitStatus(err, &stderr); code != 1 || !strings.Contains(stderr.String(), "metrics listener") {
		t.Errorf("exit %d, stderr %q; want 1 and the metrics listener's error", code, stderr.String())
	}
	if n := len(fake.Calls("getUpdates")); n != 0 {
		t.Errorf("%d getUpdates calls: the adapter ran although serve could not start", n)
	}
}
