// Command eventsflood replays issue 27's attack on serve's Slack Events API
// endpoint and reports what it cost the bridge:
//
//	eventsflood -bin ./agentbridge [-conns 150] [-declare 1048576] [-send 1047552] [-forged] [-watch 45s]
//
// It starts a fake Slack Web API (slacktest) and `agentbridge serve` with
// Slack in events mode, then opens -conns connections that each send a
// request head (Content-Length -declare; well-formed signature headers
// with a current timestamp and a made-up signature when -forged, none
// otherwise) and -send bytes of body, and stop. It samples serve's RSS
// every 100 ms for -watch, sends one correctly signed request in the
// middle, and prints one line of key=value figures: RSS before and at its
// peak, how many attacking connections serve still held open at 5 s, 15 s
// and at the end, and the signed request's status and time.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentbridge/agentbridge/adapters/slack/slacktest"
)

const secret = "bench-signing-secret"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "eventsflood:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("eventsflood", flag.ContinueOnError)
	bin := fs.String("bin", "./agentbridge", "agentbridge binary")
	conns := fs.Int("conns", 150, "attacking connections")
	declare := fs.Int("declare", 1<<20, "Content-Length each declares")
	send := fs.Int("send", 1<<20-1024, "body bytes each sends before it stops")
	forged := fs.Bool("forged", false, "send well-formed signature headers (a made-up signature)")
	watch := fs.Duration("watch", 45*time.Second, "how long to watch after the attack starts")
	if err := fs.Parse(args); err != nil {
		return err
	}
	fake := slacktest.NewServer(slacktest.Options{})
	defer fake.Close()
	dir, err := os.MkdirTemp("", "eventsflood")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := filepath.Join(dir, "config.yaml")
	err = os.WriteFile(cfg, []byte(fmt.Sprintf(`store: %s
profiles: {demo: builtin:demo}
default_profile: demo
slack:
  enabled: true
  mode: events
  events_listen: %q
  signing_secret: %s
  api_url: %s
  bot_token: %s
  allow_users: [U1]
`, filepath.Join(dir, "bridge.db"), addr, secret, fake.APIURL(), fake.Options().BotToken)), 0o600)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, *bin, "serve", "--config", cfg)
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	if err := waitSigned(ctx, addr); err != nil {
		return fmt.Errorf("serve did not answer: %w", err)
	}
	before, err := rss(cmd.Process.Pid)
	if err != nil {
		return err
	}

	head := fmt.Sprintf("POST /slack/events HTTP/1.1\r\nHost: bridge\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", *declare)
	if *forged {
		head += fmt.Sprintf("X-Slack-Request-Timestamp: %d\r\nX-Slack-Signature: v0=%s\r\n", time.Now().Unix(), strings.Repeat("0", 64))
	}
	head += "\r\n"
	body := make([]byte, *send)
	for i := range body {
		body[i] = 'x'
	}
	var open atomic.Int64
	start := time.Now()
	for range *conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		open.Add(1)
		go func() {
			io.WriteString(c, head)
			c.Write(body)
		}()
		go func() {
			io.Copy(io.Discard, c) // returns once serve closes the connection
			open.Add(-1)
		}()
	}
	peak := before
	var at5, at15 int64 = -1, -1
	signed := "not sent"
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for time.Since(start) < *watch {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		if r, err := rss(cmd.Process.Pid); err == nil {
			peak = max(peak, r)
		}
		el := time.Since(start)
		if at5 < 0 && el >= 5*time.Second {
			at5 = open.Load()
		}
		if at15 < 0 && el >= 15*time.Second {
			at15 = open.Load()
		}
		if signed == "not sent" && el >= 2*time.Second {
			t0 := time.Now()
			code, err := post(ctx, addr)
			signed = fmt.Sprintf("%d/%dms", code, time.Since(t0).Milliseconds())
			if err != nil {
				signed = "error/" + strings.ReplaceAll(err.Error(), " ", "_")
			}
		}
	}
	fmt.Fprintf(stdout, "conns=%d declare=%d send=%d forged=%t rss_before_mb=%.1f rss_peak_mb=%.1f growth_mb=%.1f open_5s=%d open_15s=%d open_%s=%d signed=%s\n",
		*conns, *declare, *send, *forged, mb(before), mb(peak), mb(peak-before), at5, at15, watch.String(), open.Load(), signed)
	return nil
}

func mb(kb int64) float64 { return float64(kb) / 1024 }

// rss is pid's resident set in KiB.
func rss(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, errors.New("no VmRSS")
}

// waitSigned waits until serve answers a signed request.
func waitSigned(ctx context.Context, addr string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, err := post(ctx, addr)
		if err == nil && code == http.StatusOK {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("status %d, %v", code, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// post sends a correctly signed url_verification request.
func post(ctx context.Context, addr string) (int, error) {
	body := `{"type":"url_verification","token":"x","challenge":"c"}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/slack/events", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header = slacktest.SignedHeader(secret, time.Now(), []byte(body))
	req.Header.Set("Content-Type", "application/json")
	res, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return 0, err
	}
	res.Body.Close()
	return res.StatusCode, nil
}
