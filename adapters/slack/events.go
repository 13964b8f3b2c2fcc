package slack

import (
	"context"
	"encoding/json"
	"errors"
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
	"github.com/agentbridge/agentbridge/internal/httpguard"
)

// maxEventBody caps an Events API or interactivity request body; larger is
// answered 413. Slack's largest deliveries (a 40,000-character message with
// its blocks, a button press carrying its message) stay well under it.
const maxEventBody = 512 << 10

// runEvents serves the Events API (and interactivity) over HTTP on
// EventsListen until ctx ends, with httpguard's limits
// (Options.EventsLimits).
func (a *Adapter) runEvents(ctx context.Context, h core.Handler) error {
	ln := a.opts.EventsListener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", a.opts.EventsListen); err != nil {
			return fmt.Errorf("slack: events listener: %w", err)
		}
	}
	srv := httpguard.Server(a.eventsHandler(ctx, h), a.opts.EventsLimits)
	srv.BaseContext = func(net.Listener) context.Context { return ctx }
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
	gate := httpguard.NewGate(a.opts.EventsLimits)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		body, status, err := a.signedBody(w, r, gate)
		if err != nil {
			if status == http.StatusUnauthorized {
				a.log.WarnContext(ctx, "events request refused", "err", err, "remote", r.RemoteAddr)
			}
			// Closing spares the server reading an unread body to reuse
			// the connection.
			w.Header().Set("Connection", "close")
			http.Error(w, http.StatusText(status), status)
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

// signedBody reads r's body once its headers could be Slack's, and returns
// it if its signature holds; otherwise the status to answer and why. The
// signature headers (present, well-formed, timestamp within Slack's five
// minutes) are checked before a byte of the body is read, and the body is
// read holding a place in gate, so unsigned requests cost nothing and
// forged ones hold at most the gate's bound of bodies at once.
func (a *Adapter) signedBody(w http.ResponseWriter, r *http.Request, gate *httpguard.Gate) ([]byte, int, error) {
	sv, err := slackapi.NewSecretsVerifier(r.Header, a.opts.SigningSecret.Reveal())
	if err != nil {
		return nil, http.StatusUnauthorized, fmt.Errorf("verify request: %w", err)
	}
	if r.ContentLength > maxEventBody {
		return nil, http.StatusRequestEntityTooLarge, errors.New("body over the cap")
	}
	pass := gate.Enter(w)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxEventBody))
	if err == nil {
		sv.Write(body)
		err = sv.Ensure()
		if err != nil {
			err = fmt.Errorf("verify request: %w", err)
		}
	}
	cut := pass.Leave()
	var tooBig *http.MaxBytesError
	switch {
	case err == nil:
		return body, 0, nil
	case errors.As(err, &tooBig):
		return nil, http.StatusRequestEntityTooLarge, err
	case errors.Is(err, slackapi.ErrInvalidSignature):
		return nil, http.StatusUnauthorized, err
	case cut:
		return nil, http.StatusServiceUnavailable, err // made room for a newer request
	default:
		return nil, http.StatusBadRequest, err // a stalled or broken body
	}
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
