package trigger

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/engine"
)

const token = "s3cret-token-0123456789"

// submitter stands in for the engine: it keeps each submission and, when
// finish is set, ends the turn with it.
type submitter struct {
	mu     sync.Mutex
	subs   []engine.Submission
	finish *engine.Result
}

func (s *submitter) Submit(_ context.Context, sub engine.Submission) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sub.Conv.Platform == "gone" {
		return "", engine.ErrUnknownPlatform
	}
	s.subs = append(s.subs, sub)
	if s.finish != nil && sub.Done != nil {
		r := *s.finish
		r.TurnID = "t1"
		go sub.Done(r)
	}
	return "t1", nil
}

func (s *submitter) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.subs)
}

func server(t *testing.T, sub *submitter, lim *rate.Limiter) *httptest.Server {
	t.Helper()
	h := New(Options{
		Token: token, Submitter: sub, Limiter: lim,
		Known:   func(_ context.Context, c core.ConversationKey) bool { return c.Channel != "nowhere" },
		Profile: func(name string) bool { return name == "demo" },
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func post(t *testing.T, srv *httptest.Server, method, path, auth, body string) (*http.Response, Response) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r Response
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("%s %s: answer is not JSON: %v", method, path, err)
	}
	return resp, r
}

const good = `{"platform":"slack","workspace":"T1","channel":"C1","thread":"1.2","message":"deploy done","profile":"demo","session":"deploys"}`

func TestAccepted(t *testing.T) {
	sub := &submitter{}
	srv := server(t, sub, nil)
	resp, r := post(t, srv, "POST", Path, "Bearer "+token, good)
	if resp.StatusCode != http.StatusAccepted || r.TurnID != "t1" || r.Status != "queued" {
		t.Fatalf("answer %d %+v; want 202 with the turn id", resp.StatusCode, r)
	}
	got := sub.subs[0]
	want := core.ConversationKey{Platform: "slack", Workspace: "T1", Channel: "C1", Thread: "1.2"}
	if got.Conv != want || got.Text != "deploy done" || got.Profile != "demo" || got.Session != "deploys" || got.Origin != engine.OriginTrigger {
		t.Errorf("submission %+v", got)
	}
}

func TestWaitReturnsReply(t *testing.T) {
	sub := &submitter{finish: &engine.Result{Status: "ok", Reply: "All green."}}
	srv := server(t, sub, nil)
	resp, r := post(t, srv, "POST", Path, "Bearer "+token, `{"platform":"slack","channel":"C1","message":"status?","wait":true}`)
	if resp.StatusCode != http.StatusOK || r.Reply != "All green." || r.Status != "ok" || r.TurnID != "t1" {
		t.Errorf("answer %d %+v; want 200 with the reply", resp.StatusCode, r)
	}
	sub.finish = &engine.Result{Status: "busy"}
	if resp, r := post(t, srv, "POST", Path, "Bearer "+token, `{"platform":"slack","channel":"C1","message":"x","wait":true}`); resp.StatusCode != http.StatusServiceUnavailable || r.Status != "busy" {
		t.Errorf("busy answer %d %+v; want 503 busy", resp.StatusCode, r)
	}
}

// Hostile and broken requests are refused with the right status, and none
// starts a turn.
func TestRefused(t *testing.T) {
	sub := &submitter{}
	srv := server(t, sub, rate.NewLimiter(rate.Inf, 0))
	huge := `{"platform":"slack","channel":"C1","message":"` + strings.Repeat("x", MaxBody) + `"}`
	tests := []struct {
		name, method, path, auth, body string
		want                           int
	}{
		{"no token", "POST", Path, "", good, 401},
		{"wrong token", "POST", Path, "Bearer nope", good, 401},
		{"token prefix", "POST", Path, "Bearer " + token[:len(token)-1], good, 401},
		{"not bearer", "POST", Path, "Basic " + token, good, 401},
		{"wrong method", "GET", Path, "Bearer " + token, "", 405},
		{"wrong path", "POST", "/v1/other", "Bearer " + token, good, 404},
		{"huge body", "POST", Path, "Bearer " + token, huge, 413},
		{"malformed JSON", "POST", Path, "Bearer " + token, `{"platform":`, 400},
		{"unknown field", "POST", Path, "Bearer " + token, `{"platform":"slack","channel":"C1","message":"m","chanel":"x"}`, 400},
		{"two objects", "POST", Path, "Bearer " + token, good + good, 400},
		{"missing message", "POST", Path, "Bearer " + token, `{"platform":"slack","channel":"C1"}`, 400},
		{"unknown profile", "POST", Path, "Bearer " + token, `{"platform":"slack","channel":"C1","message":"m","profile":"x"}`, 400},
		{"bad session", "POST", Path, "Bearer " + token, `{"platform":"slack","channel":"C1","message":"m","session":"../x"}`, 400},
		{"unknown conversation", "POST", Path, "Bearer " + token, `{"platform":"slack","channel":"nowhere","message":"m"}`, 404},
		{"platform not served", "POST", Path, "Bearer " + token, `{"platform":"gone","channel":"C1","message":"m"}`, 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, r := post(t, srv, tc.method, tc.path, tc.auth, tc.body)
			if resp.StatusCode != tc.want || r.Error == "" || r.TurnID != "" {
				t.Errorf("answer %d %+v; want %d with an error", resp.StatusCode, r, tc.want)
			}
			if tc.want == 401 && resp.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("401 without WWW-Authenticate")
			}
			if tc.want == 405 && resp.Header.Get("Allow") != "POST" {
				t.Errorf("405 with Allow %q", resp.Header.Get("Allow"))
			}
		})
	}
	if n := sub.count(); n != 0 {
		t.Errorf("%d turns started by refused requests", n)
	}
}

// A flood is cut off at the burst with 429 and Retry-After, bad tokens
// included, and the budget refills.
func TestFlood(t *testing.T) {
	sub := &submitter{}
	lim := rate.NewLimiter(rate.Every(time.Hour), 3)
	srv := server(t, sub, lim)
	var codes []int
	for i := range 8 {
		auth := "Bearer " + token
		if i%2 == 1 {
			auth = "Bearer wrong"
		}
		resp, _ := post(t, srv, "POST", Path, auth, good)
		codes = append(codes, resp.StatusCode)
		if resp.StatusCode == 429 && resp.Header.Get("Retry-After") == "" {
			t.Errorf("429 without Retry-After")
		}
	}
	want := []int{202, 401, 202, 429, 429, 429, 429, 429}
	for i := range want {
		if codes[i] != want[i] {
			t.Fatalf("statuses %v; want %v", codes, want)
		}
	}
	if sub.count() != 2 {
		t.Errorf("%d turns; want 2", sub.count())
	}
	lim.SetLimit(rate.Inf)
	if resp, _ := post(t, srv, "POST", Path, "Bearer "+token, good); resp.StatusCode != 202 {
		t.Errorf("after the budget refilled: %d, want 202", resp.StatusCode)
	}
}

// An empty configured token lets nobody in, even with an empty bearer.
func TestEmptyTokenRefusesAll(t *testing.T) {
	srv := httptest.NewServer(New(Options{Submitter: &submitter{}}))
	defer srv.Close()
	if resp, _ := post(t, srv, "POST", Path, "Bearer ", good); resp.StatusCode != 401 {
		t.Errorf("empty token: %d, want 401", resp.StatusCode)
	}
}

func FuzzRequest(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte(`{"wait":true}`))
	f.Add([]byte(`[1,2]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		h := New(Options{Token: token, Submitter: &submitter{}, Limiter: rate.NewLimiter(rate.Inf, 0)})
		req := httptest.NewRequest("POST", Path, strings.NewReader(string(body)))
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case 202, 400, 404, 413:
		default:
			t.Fatalf("status %d for %q", rec.Code, body)
		}
		var r Response
		if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
			t.Fatalf("answer not JSON: %q", rec.Body.String())
		}
	})
}
