// Package trigger is the HTTP endpoint that starts turns: POST /v1/turns
// with a bearer token and a JSON body naming a conversation and a message
// (a deploy hook, a failing CI job). Each request becomes an ordinary turn
// in that conversation through the engine's Submit; the answer is the
// turn's id at once (202), or with "wait": true the reply's text once the
// turn has ended (200).
package trigger

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/time/rate"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/engine"
)

// Path is the endpoint's one path.
const Path = "/v1/turns"

// Limits of the endpoint.
const (
	// MaxBody is the largest request body accepted; larger is 413.
	MaxBody = 64 << 10
	// Rate and Burst bound requests over all callers, good tokens or bad:
	// Burst at once, then Rate a second; beyond that 429 with Retry-After.
	Rate  = 1
	Burst = 10
	// MaxWait bounds how long a "wait": true request is held open.
	MaxWait = 30 * time.Minute
)

// Request is the JSON body of POST /v1/turns.
type Request struct {
	Platform  string `json:"platform"`
	Workspace string `json:"workspace"`
	Channel   string `json:"channel"`
	Thread    string `json:"thread"`
	Message   string `json:"message"`
	Profile   string `json:"profile"`
	Session   string `json:"session"`
	Wait      bool   `json:"wait"`
}

// Response is the JSON answer. Status is "queued" for a 202, how the
// turn ended for a 200 (engine.Result.Status), and Error says what was
// wrong with a refused request.
type Response struct {
	TurnID string `json:"turn_id,omitempty"`
	Status string `json:"status,omitempty"`
	Reply  string `json:"reply,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Submitter starts turns; *engine.Engine implements it.
type Submitter interface {
	Submit(ctx context.Context, s engine.Submission) (string, error)
}

// Options configure a Handler.
type Options struct {
	Token     core.Secret
	Submitter Submitter
	// Known reports whether the bridge knows conv (a 404 otherwise).
	Known func(ctx context.Context, conv core.ConversationKey) bool
	// Profile reports whether a profile of that name is configured.
	Profile func(name string) bool
	Log     *slog.Logger
	// Limiter overrides the Rate/Burst limiter (tests).
	Limiter *rate.Limiter
	// MaxWait overrides MaxWait (tests).
	MaxWait time.Duration
}

// Handler serves POST /v1/turns.
type Handler struct {
	opts  Options
	token [sha256.Size]byte
	lim   *rate.Limiter
}

// New returns the endpoint's handler.
func New(opts Options) *Handler {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Limiter == nil {
		opts.Limiter = rate.NewLimiter(Rate, Burst)
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = MaxWait
	}
	return &Handler{opts: opts, token: sha256.Sum256([]byte(opts.Token.Reveal())), lim: opts.Limiter}
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != Path {
		reply(w, http.StatusNotFound, Response{Error: "not found: the endpoint is POST " + Path})
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		reply(w, http.StatusMethodNotAllowed, Response{Error: "method not allowed: use POST"})
		return
	}
	// Every request spends the budget, so a flood of guesses is slowed
	// as much as a flood of turns.
	if res := h.lim.Reserve(); !res.OK() || res.Delay() > 0 {
		wait := res.Delay()
		res.Cancel()
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(max(wait, time.Second).Seconds()))))
		reply(w, http.StatusTooManyRequests, Response{Error: "too many requests: try again later"})
		return
	}
	if !h.authorized(r) {
		h.opts.Log.Warn("trigger request refused: bad or missing token", "remote", r.RemoteAddr)
		w.Header().Set("WWW-Authenticate", `Bearer realm="agentbridge"`)
		reply(w, http.StatusUnauthorized, Response{Error: "unauthorized: send Authorization: Bearer TOKEN"})
		return
	}
	req, status, err := decode(w, r)
	if err != nil {
		reply(w, status, Response{Error: err.Error()})
		return
	}
	if msg := h.check(req); msg != "" {
		reply(w, http.StatusBadRequest, Response{Error: msg})
		return
	}
	conv := core.ConversationKey{Platform: req.Platform, Workspace: req.Workspace, Channel: req.Channel, Thread: req.Thread}
	if h.opts.Known != nil && !h.opts.Known(r.Context(), conv) {
		reply(w, http.StatusNotFound, Response{Error: "unknown conversation: the platform account is not served, or the bridge does not know this channel"})
		return
	}
	done := make(chan engine.Result, 1)
	id, err := h.opts.Submitter.Submit(r.Context(), engine.Submission{
		Conv: conv, Text: req.Message, Profile: req.Profile, Session: req.Session,
		Origin: engine.OriginTrigger, Done: func(res engine.Result) { done <- res },
	})
	if errors.Is(err, engine.ErrUnknownPlatform) {
		reply(w, http.StatusNotFound, Response{Error: "unknown conversation: platform account " + strconv.Quote(req.Platform) + " is not served"})
		return
	}
	if err != nil {
		reply(w, http.StatusServiceUnavailable, Response{Error: "could not start the turn: " + err.Error()})
		return
	}
	h.opts.Log.Info("trigger started a turn", "turn", id, "conv", conv, "wait", req.Wait)
	if !req.Wait {
		reply(w, http.StatusAccepted, Response{TurnID: id, Status: "queued"})
		return
	}
	timer := time.NewTimer(h.opts.MaxWait)
	defer timer.Stop()
	select {
	case res := <-done:
		status := http.StatusOK
		if res.Status == "busy" || res.Status == "draining" {
			status = http.StatusServiceUnavailable
		}
		reply(w, status, Response{TurnID: id, Status: res.Status, Reply: res.Reply, Error: res.Error})
	case <-timer.C:
		reply(w, http.StatusAccepted, Response{TurnID: id, Status: "running", Error: "the turn is still running; its reply goes to the conversation"})
	case <-r.Context().Done():
		// The caller left; the turn goes on and answers in the chat.
	}
}

// authorized compares the bearer token in constant time. Both sides are
// hashed first, so neither the comparison nor its length reveals anything
// about the token.
func (h *Handler) authorized(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	sum := sha256.Sum256([]byte(strings.TrimSpace(got)))
	match := subtle.ConstantTimeCompare(sum[:], h.token[:]) == 1
	return ok && match && !h.opts.Token.IsZero()
}

// decode reads the JSON body, refusing an oversized or malformed one.
func decode(w http.ResponseWriter, r *http.Request) (Request, int, error) {
	var req Request
	if r.ContentLength > MaxBody {
		return req, http.StatusRequestEntityTooLarge, fmt.Errorf("request body over %d bytes", MaxBody)
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(&req)
	if err == nil && dec.Decode(&struct{}{}) != io.EOF {
		err = errors.New("data after the JSON object")
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return req, http.StatusRequestEntityTooLarge, fmt.Errorf("request body over %d bytes", MaxBody)
	case err != nil:
		return req, http.StatusBadRequest, fmt.Errorf("malformed JSON body: %v", err)
	}
	return req, 0, nil
}

// check returns what is wrong with a well-formed request, "" if nothing.
func (h *Handler) check(req Request) string {
	var missing []string
	for _, f := range []struct{ name, v string }{{"platform", req.Platform}, {"channel", req.Channel}, {"message", strings.TrimSpace(req.Message)}} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	switch {
	case len(missing) > 0:
		return "missing " + strings.Join(missing, ", ")
	case req.Profile != "" && h.opts.Profile != nil && !h.opts.Profile(req.Profile):
		return "unknown profile " + strconv.Quote(req.Profile)
	case req.Session != "" && !core.ValidSessionName(req.Session):
		return "session names are 1 to 64 " + core.SessionNameRule
	}
	return ""
}

func reply(w http.ResponseWriter, status int, body Response) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}
