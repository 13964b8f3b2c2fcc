package telegram_test

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/adapters/telegram"
	"github.com/agentbridge/agentbridge/adapters/telegram/telegramtest"
	"github.com/agentbridge/agentbridge/core"
)

func TestWebhook(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const secret = "hook-SECRET_1"
	e := newEnv(t, func(o *telegram.Options) {
		o.Mode = telegram.ModeWebhook
		o.WebhookListener = ln
		o.WebhookURL = "https://bridge.example/telegram"
		o.WebhookSecret = core.Secret(secret)
	})
	rec := newRecorder()
	stop := e.run(rec)
	e.waitFor("setWebhook", func() bool { return len(e.fake.Calls("setWebhook")) == 1 })
	c := e.fake.Calls("setWebhook")[0].Form
	if c.Get("url") != "https://bridge.example/telegram" || c.Get("secret_token") != secret {
		t.Errorf("setWebhook form = %v", c)
	}

	post := func(secretHeader string, update map[string]any) int {
		t.Helper()
		update["update_id"] = 5000
		body, _ := json.Marshal(update)
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+ln.Addr().String()+"/", strings.NewReader(string(body)))
		if secretHeader != "" {
			req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secretHeader)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for _, bad := range []string{"", "wrong"} {
		if code := post(bad, telegramtest.PrivateMessage(1, alice, "forged")); code != http.StatusUnauthorized {
			t.Errorf("delivery with secret %q: HTTP %d; want 401", bad, code)
		}
	}
	// A delivery is handed to core (which only queues it) before the
	// answer, so Telegram's retry of a failed answer is the only way to
	// lose it.
	if code := post(secret, telegramtest.PrivateMessage(2, alice, "hello")); code != http.StatusOK {
		t.Errorf("delivery: HTTP %d", code)
	}
	select {
	case m := <-rec.msgs:
		if m.Text != "hello" {
			t.Errorf("handed over %q; the forged deliveries must not be", m.Text)
		}
	default:
		t.Error("answered before the update was handed to core")
	}
	if err := stop(); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Errorf("webhook listener still open after Run returned")
	}
	select {
	case m := <-rec.msgs:
		t.Errorf("unexpected message %q", m.Text)
	default:
	}
}
