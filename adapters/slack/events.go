package slack

import (
	"context"
	"encoding/json"

	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/agentbridge/agentbridge/core"
)

// maxEventBody bounds an Events API request body.
const maxEventBody = 1 << 20

// runEvents serves the Events API (and interactivity) over HTTP on
// EventsListen until ctx ends.
func (a *Adapter) runEvents(ctx context.Context, h core.Handler) error {
	ln := a.opts.EventsListener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", a.opts.EventsListen); err != nil {
			return fmt.Errorf("slack: events listener: %w", err)
		}
	}
	srv := &http.Server{
		Handler:           a.eventsHandler(ctx, h),
		ReadHeaderTimeout: 5 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	a.log.InfoContext(ctx, "events API listening", "addr", ln.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		srv.Shutdown(shut)
		<-errc
		return nil
	case err := <-errc:
		return fmt.Errorf("slack: events listener stopped: %w", err)
	}
}

// eventsHandler verifies each request's signature (HMAC with the signing
// secret over the timestamp and raw body; stale timestamps refused),
// answers and hands the event to h. While h drains, Events API callbacks
// (messages) are answered 503, so Slack retries them later (with
// X-Slack-Retry-Num), when the next instance may be up.
func (a *Adapter) eventsHandler(ctx context.Context, h core.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxEventBody+1))
		if err != nil || len(body) > maxEventBody {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		if err := a.verify(r.Header, body); err != nil {
			a.log.WarnContext(ctx, "events request refused", "err", err, "remote", r.RemoteAddr)
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		}
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
			a.formRequest(ctx, h, w, body)
			return
		}
		ea, err := slackevents.ParseEvent(json.RawMessage(body), slackevents.OptionNoVerifyToken())
		if err != nil {
			http.Error(w, "bad event", http.StatusBadRequest)
			return
		}
		switch ea.Type {
		case slackevents.URLVerification:
			var ch slackevents.ChallengeResponse
			json.Unmarshal(body, &ch)
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, ch.Challenge)
			return
		case slackevents.CallbackEvent:
			cb, _ := ea.Data.(*slackevents.EventsAPICallbackEvent)
			id := ""
			if cb != nil {
				id = cb.EventID
			}
			if draining(h) {
				http.Error(w, "draining", http.StatusServiceUnavailable)
				return
			}
			// X-Slack-Retry-Num redeliveries carry the same event_id and are
			// dropped by eventsAPI's dedup; answer 200 so Slack stops.
			w.WriteHeader(http.StatusOK)
			a.eventsAPI(ctx, h, ea, id)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}

// verify checks Slack's request signature and timestamp window.
func (a *Adapter) verify(h http.Header, body []byte) error {
	sv, err := slackapi.NewSecretsVerifier(h, a.opts.SigningSecret.Reveal())
	if err != nil {
		return fmt.Errorf("verify request: %w", err)
	}
	if _, err := sv.Write(body); err != nil {
		return fmt.Errorf("verify request: %w", err)
	}
	if err := sv.Ensure(); err != nil {
		return fmt.Errorf("verify request: %w", err)
	}
	return nil
}

// formRequest handles interactivity (payload=…) and slash commands, which
// Slack posts form-encoded.
func (a *Adapter) formRequest(ctx context.Context, h core.Handler, w http.ResponseWriter, body []byte) {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	if p := form.Get("payload"); p != "" {
		var cb slackapi.InteractionCallback
		if err := json.Unmarshal([]byte(p), &cb); err != nil {
			http.Error(w, "bad payload", http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
		a.interaction(ctx, h, cb)
		return
	}
	if form.Get("command") != "" {
		cmd := slackapi.SlashCommand{TeamID: form.Get("team_id"), ChannelID: form.Get("channel_id"),
			UserID: form.Get("user_id"), UserName: form.Get("user_name"), Command: form.Get("command"),
			Text: form.Get("text"), TriggerID: form.Get("trigger_id")}
		w.WriteHeader(http.StatusOK)
		a.slashCommand(ctx, h, cmd)
		return
	}
	http.Error(w, "unknown request", http.StatusBadRequest)
}
