package slack_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/slack"
	"github.com/agentbridge/agentbridge/adapters/slack/slacktest"
	"github.com/agentbridge/agentbridge/core"
)

const signingSecret = "signing-secret-789"

func TestEventsAPI(t *testing.T) {
	t.Parallel()
	fake := newFake(t, slacktest.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := start(t, fake, func(o *slack.Options) {
		o.Mode, o.SigningSecret, o.EventsListener = slack.ModeEvents, signingSecret, ln
	}, nil)
	endpoint := "http://" + ln.Addr().String() + "/slack/events"
	post := func(body []byte, header http.Header, contentType string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, endpoint, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = header
		req.Header.Set("Content-Type", contentType)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	const jsonType = "application/json"
	now := time.Now()

	// url_verification: the challenge is echoed.
	body := []byte(`{"type":"url_verification","token":"x","challenge":"ch-123"}`)
	if code, got := post(body, slacktest.SignedHeader(signingSecret, now, body), jsonType); code != 200 || got != "ch-123" {
		t.Errorf("url_verification = %d %q", code, got)
	}

	mentionBody := fake.EventCallback("EvHTTP1", mention("U1", "C1", "500.000001", "", "<@UBOT> over http"))
	refused := []struct {
		name   string
		header http.Header
	}{
		{"wrong secret", slacktest.SignedHeader("not-the-secret", now, mentionBody)},
		{"replayed old timestamp", slacktest.SignedHeader(signingSecret, now.Add(-10*time.Minute), mentionBody)},
		{"unsigned", http.Header{}},
	}
	for _, tc := range refused {
		if code, _ := post(mentionBody, tc.header, jsonType); code != http.StatusUnauthorized {
			t.Errorf("%s: status %d; want 401", tc.name, code)
		}
	}
	// A tampered body with a valid header for the original is refused too.
	tampered := bytes.Replace(mentionBody, []byte("over http"), []byte("rm -rf /"), 1)
	if code, _ := post(tampered, slacktest.SignedHeader(signingSecret, now, mentionBody), jsonType); code != http.StatusUnauthorized {
		t.Errorf("tampered body: status %d; want 401", code)
	}

	if code, _ := post(mentionBody, slacktest.SignedHeader(signingSecret, now, mentionBody), jsonType); code != 200 {
		t.Fatalf("signed event: status %d", code)
	}
	// Slack's retry of the same event (after a slow answer) runs nothing.
	retry := slacktest.SignedHeader(signingSecret, now, mentionBody)
	retry.Set("X-Slack-Retry-Num", "1")
	retry.Set("X-Slack-Retry-Reason", "http_timeout")
	if code, _ := post(mentionBody, retry, jsonType); code != 200 {
		t.Errorf("retry: status %d; want 200 so Slack stops retrying", code)
	}
	// An interactive press, form-encoded.
	payload, _ := json.Marshal(fake.BlockActions("U1", "C1", "500.000001", "500.000007", "tok:d"))
	form := []byte(url.Values{"payload": {string(payload)}}.Encode())
	if code, _ := post(form, slacktest.SignedHeader(signingSecret, now, form), "application/x-www-form-urlencoded"); code != 200 {
		t.Errorf("interactive: status %d", code)
	}
	r.rec.wait(t, "the press", func(_ []core.Message, as []core.Action) bool { return len(as) == 1 })
	r.rec.wait(t, "the mention", func(ms []core.Message, _ []core.Action) bool { return len(ms) >= 1 })
	// A marker proves the retry was processed (and dropped) before it.
	marker := fake.EventCallback("EvHTTP2", message("U1", "D1", "im", "500.000009", "", "marker"))
	post(marker, slacktest.SignedHeader(signingSecret, now, marker), jsonType)
	r.rec.wait(t, "the marker", func(ms []core.Message, _ []core.Action) bool { return len(ms) >= 2 })
	msgs := r.rec.messages()
	if len(msgs) != 2 || msgs[0].Text != "over http" || msgs[1].Text != "marker" {
		t.Errorf("delivered %+v; want the mention once, then the marker", msgs)
	}
	if a := r.rec.acts[0]; a.Value != "tok:d" || a.Ref.ID != "500.000007" || a.From.ID != "U1" {
		t.Errorf("action %+v", a)
	}
	if strings.Contains(r.logs.String(), signingSecret) {
		t.Error("signing secret logged")
	}
}
