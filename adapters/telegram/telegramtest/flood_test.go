package telegramtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// The limits count per chat and per group at the instants given, so the
// windows are checked without waiting for them.
func TestFloodLimits(t *testing.T) {
	s := NewServer("1:t")
	defer s.Close()
	t0 := time.Now()
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	try := func(method, chat string, now time.Time) int {
		t.Helper()
		s.mu.Lock()
		defer s.mu.Unlock()
		f, limited := s.floodLocked(method, chat, now)
		if !limited {
			return 0
		}
		if f.Code != 429 || f.RetryAfter < 1 || f.Description != fmt.Sprintf("Too Many Requests: retry after %d", f.RetryAfter) {
			t.Errorf("refusal %+v; want Telegram's 429", f)
		}
		return f.RetryAfter
	}
	// A burst of 3 in a second, drafts counted like messages.
	for i, m := range []string{"sendMessage", "sendMessageDraft", "editMessageText"} {
		if ra := try(m, "7", at(time.Duration(i)*time.Millisecond)); ra != 0 {
			t.Fatalf("call %d of a burst of 3 refused (retry after %d)", i+1, ra)
		}
	}
	if ra := try("sendMessageDraft", "7", at(10*time.Millisecond)); ra != 1 {
		t.Errorf("4th call within a second: retry after %d; want 1", ra)
	}
	if ra := try("sendMessage", "8", at(10*time.Millisecond)); ra != 0 {
		t.Errorf("another chat was refused (retry after %d): chats have their own budgets", ra)
	}
	if ra := try("getUpdates", "7", at(10*time.Millisecond)); ra != 0 {
		t.Errorf("getUpdates was refused: only messages count")
	}
	// One a second goes on until 60 in a minute; the 61st waits for the
	// oldest to leave the minute.
	for i := 3; i < 60; i++ {
		if ra := try("sendMessage", "7", at(time.Duration(i)*time.Second)); ra != 0 {
			t.Fatalf("call %d at %d s refused (retry after %d)", i+1, i, ra)
		}
	}
	if ra := try("sendMessage", "7", at(59*time.Second+500*time.Millisecond)); ra != 1 {
		t.Errorf("61st call in a minute: retry after %d; want 1", ra)
	}
	if ra := try("sendMessage", "7", at(60*time.Second+500*time.Millisecond)); ra != 0 {
		t.Errorf("a call after the oldest left the minute refused (retry after %d)", ra)
	}

	// A group takes 20 messages and edits a minute, paced under the
	// chat's limit; drafts are the private chats'.
	const group = "-100"
	for i := range 20 {
		if ra := try("editMessageText", group, at(time.Duration(i)*2*time.Second)); ra != 0 {
			t.Fatalf("group call %d refused (retry after %d)", i+1, ra)
		}
	}
	if ra := try("sendMessage", group, at(40*time.Second)); ra != 20 {
		t.Errorf("21st group message in a minute: retry after %d; want 20", ra)
	}

	s.SetLimits(Limits{})
	for i := range 100 {
		if ra := try("sendMessage", "9", at(time.Duration(i))); ra != 0 {
			t.Fatalf("call %d refused without limits", i+1)
		}
	}
}

// Over HTTP the refusal is Telegram's: status 429 and its JSON body, and
// the call is recorded with it.
func TestFloodAnswer(t *testing.T) {
	s := NewServer("1:t")
	defer s.Close()
	var last *http.Response
	for range 4 {
		resp, err := http.PostForm(s.URL+"/bot1:t/sendMessage", url.Values{"chat_id": {"5"}, "text": {"hi"}})
		if err != nil {
			t.Fatal(err)
		}
		if last != nil {
			last.Body.Close()
		}
		last = resp
	}
	defer last.Body.Close()
	if last.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("4th message at once: HTTP %d; want 429", last.StatusCode)
	}
	var body struct {
		OK          bool   `json:"ok"`
		ErrorCode   int    `json:"error_code"`
		Description string `json:"description"`
		Parameters  struct {
			RetryAfter int `json:"retry_after"`
		} `json:"parameters"`
	}
	if err := json.NewDecoder(last.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if body.OK || body.ErrorCode != 429 || body.Description != "Too Many Requests: retry after 1" || body.Parameters.RetryAfter != 1 {
		t.Errorf("429 body %+v; want Telegram's", body)
	}
	calls := s.Calls("sendMessage")
	if len(calls) != 4 || calls[3].Fault == nil || calls[3].Fault.Code != 429 || calls[2].Fault != nil {
		t.Errorf("calls %+v; want the 4th recorded with its 429", calls)
	}
	if n := len(s.Messages(5)); n != 3 {
		t.Errorf("%d messages; want the refused one not sent", n)
	}
}
