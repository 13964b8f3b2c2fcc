package telegram

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/internal/httpguard"
)

// ModeWebhook and ModePolling select how updates arrive.
const (
	ModePolling = "polling"
	ModeWebhook = "webhook"
)

// secretHeader carries the webhook's secret_token on every delivery.
const secretHeader = "X-Telegram-Bot-Api-Secret-Token"

// maxUpdateBytes bounds one webhook delivery.
const maxUpdateBytes = 1 << 20

// runWebhook registers the webhook and serves deliveries until ctx ends.
// Each delivery is checked against the secret and handed to core (which
// only queues it) before it is answered. While core drains, deliveries are
// answered 503: Telegram keeps them and retries, so the next instance gets
// them.
func (a *Adapter) runWebhook(ctx context.Context, h core.Handler) error {
	if a.opts.WebhookURL == "" || a.opts.WebhookSecret.IsZero() {
		return errors.New("telegram webhook mode needs webhook_url and webhook_secret")
	}
	ln := a.opts.WebhookListener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", a.opts.WebhookListen); err != nil {
			return fmt.Errorf("telegram webhook listener: %w", err)
		}
	}
	_, err := a.call(ctx, "setWebhook", tgbotapi.Params{
		"url":             a.opts.WebhookURL,
		"secret_token":    a.opts.WebhookSecret.Reveal(),
		"allowed_updates": allowedUpdates,
	})
	if err != nil {
		ln.Close()
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, ErrUnauthorized) {
			return core.Fatal(err)
		}
		return fmt.Errorf("telegram setWebhook: %w", err)
	}

	srv := httpguard.Server(a.webhookHandler(ctx, h), httpguard.Limits{})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	a.log.InfoContext(ctx, "webhook serving", "bot", a.self.UserName, "listen", ln.Addr().String())

	var result error
	select {
	case <-ctx.Done():
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			result = fmt.Errorf("telegram webhook server: %w", err)
		}
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	if result == nil {
		<-served
	}
	return result
}

// webhookHandler accepts deliveries that carry the secret and hands them
// to h. ctx (Run's) is what the handoff carries, not the request's.
func (a *Adapter) webhookHandler(ctx context.Context, h core.Handler) http.Handler {
	drain := core.DrainSignal(h)
	secret := []byte(a.opts.WebhookSecret.Reveal())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if subtle.ConstantTimeCompare([]byte(r.Header.Get(secretHeader)), secret) != 1 {
			a.log.WarnContext(r.Context(), "webhook delivery without the right secret rejected", "remote", r.RemoteAddr)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxUpdateBytes+1))
		if err != nil || len(body) > maxUpdateBytes {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		ups, err := decodeUpdates(json.RawMessage("[" + string(body) + "]"))
		if err != nil || len(ups) != 1 {
			http.Error(w, "bad update", http.StatusBadRequest)
			return
		}
		select {
		case <-drain:
			http.Error(w, "draining", http.StatusServiceUnavailable)
			return
		default:
		}
		a.handle(context.WithoutCancel(ctx), h, ups[0])
		w.WriteHeader(http.StatusOK)
	})
}
