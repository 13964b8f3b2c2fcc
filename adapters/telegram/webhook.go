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
	"sync"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/agentbridge/agentbridge/core"
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
// Each delivery is checked against the secret, answered at once, and handed
// to core by one worker, in order.
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
		"allowed_updates": `["message","callback_query"]`,
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

	queue := make(chan update, 256)
	var wg sync.WaitGroup
	wg.Go(func() {
		for u := range queue {
			a.deliver(ctx, h, []update{u})
		}
	})
	srv := &http.Server{Handler: a.webhookHandler(queue), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	a.log.InfoContext(ctx, "telegram webhook serving", "bot", a.self.UserName, "listen", ln.Addr().String())

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
	close(queue) // no handler runs after Shutdown returns
	wg.Wait()
	return result
}

// webhookHandler accepts deliveries that carry the secret and queues them.
func (a *Adapter) webhookHandler(queue chan<- update) http.Handler {
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
		case queue <- ups[0]:
			w.WriteHeader(http.StatusOK)
		default:
			// Telegram retries later; better than blocking its connection.
			http.Error(w, "busy", http.StatusServiceUnavailable)
		}
	})
}
