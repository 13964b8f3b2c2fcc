package discord

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	discordgo "github.com/bwmarrin/discordgo"

	"github.com/agentbridge/agentbridge/adapters/internal/pace"
	"github.com/agentbridge/agentbridge/core"
)

// transport is the session's http.RoundTripper. It sends every request to
// the api_url override when one is set, and keeps Discord's rate-limit
// state in one adapters/internal/pace budget per route bucket (and one for the global
// limit): it reads the X-RateLimit-* headers and 429 bodies, then strips
// them so discordgo's own limiter never sleeps inside a call.
type transport struct {
	target *url.URL // nil: the real Discord
	base   http.RoundTripper

	routes *pace.Budgets // by bucket and channel once X-RateLimit-Bucket named it, else by route
	global *pace.Budget  // 50 requests a second per bot

	mu      sync.Mutex
	buckets map[string]string // route → X-RateLimit-Bucket, as Discord announced it
}

// routeLimit is a route bucket's budget until Discord announces one:
// message create and edit allow about 5 per 5 s per channel. A bucket is a
// window (its calls come back at the announced reset, not one by one), so
// interim edits can leave one of its calls for a reply's final text.
var routeLimit = pace.Limit{N: 5, Per: 5 * time.Second, Window: true}

// globalLimit is the bot's global budget, 50 requests a second.
var globalLimit = pace.Limit{N: 50, Per: time.Second, Burst: 5}

func newTransport(target *url.URL, base http.RoundTripper) *transport {
	return &transport{target: target, base: base, routes: pace.NewBudgets(routeLimit),
		global: pace.NewBudget(globalLimit), buckets: map[string]string{}}
}

func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	key := routeKey(r.Method, r.URL.Path)
	if t.target != nil {
		r = r.Clone(r.Context())
		r.URL.Scheme, r.URL.Host = t.target.Scheme, t.target.Host
		r.URL.Path = strings.TrimSuffix(t.target.Path, "/") + r.URL.Path
		r.URL.RawPath = ""
		r.Host = t.target.Host
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	t.observe(key, resp)
	return resp, nil
}

// route returns the budget of route key: its bucket's, once Discord named
// the bucket. A bucket hash is shared by the routes of one template across
// channels, so the budget is the hash's in key's channel (Discord's "major
// parameter").
func (t *transport) route(key string) *pace.Budget {
	t.mu.Lock()
	b := t.buckets[key]
	t.mu.Unlock()
	if b == "" {
		return t.routes.Get(key)
	}
	_, channel, _ := strings.Cut(key, " ")
	channel, _, _ = strings.Cut(channel, " ")
	return t.routes.Get(b + " " + channel)
}

// observe applies a response's rate-limit headers to key's budget (or the
// global one): a 429 holds it for retry_after, X-RateLimit-Remaining: 0
// holds it until the announced reset, before Discord has to say 429, and
// the announced limit and window replace the default.
func (t *transport) observe(key string, resp *http.Response) {
	h := resp.Header
	defer func() {
		for _, k := range []string{"X-RateLimit-Remaining", "X-RateLimit-Reset", "X-RateLimit-Reset-After", "X-RateLimit-Global", "Retry-After"} {
			h.Del(k)
		}
	}()
	global := h.Get("X-RateLimit-Global") != ""
	if bucket := h.Get("X-RateLimit-Bucket"); bucket != "" && key != "" {
		t.mu.Lock()
		if len(t.buckets) > 10000 {
			clear(t.buckets)
		}
		t.buckets[key] = bucket
		t.mu.Unlock()
	}
	budget := t.global
	if !global {
		if key == "" {
			return // interactions and webhooks: not tracked
		}
		budget = t.route(key)
	}
	resetAfter, _ := strconv.ParseFloat(h.Get("X-RateLimit-Reset-After"), 64)
	if resp.StatusCode == http.StatusTooManyRequests {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		var rl struct {
			RetryAfter float64 `json:"retry_after"`
			Global     bool    `json:"global"`
		}
		json.Unmarshal(body, &rl)
		if rl.Global {
			budget = t.global
		}
		wait := seconds(rl.RetryAfter)
		if wait <= 0 {
			ra, _ := strconv.ParseFloat(h.Get("Retry-After"), 64)
			wait = seconds(ra)
		}
		budget.Spent(time.Now().Add(wait))
		budget.Refused()
		return
	}
	limit, _ := strconv.Atoi(h.Get("X-RateLimit-Limit"))
	remaining, err := strconv.Atoi(h.Get("X-RateLimit-Remaining"))
	switch {
	case err != nil:
	case remaining == 0:
		budget.Spent(time.Now().Add(seconds(resetAfter)))
	case limit > 0 && remaining == limit-1 && resetAfter > 0:
		// The first request of a window: Reset-After is the window.
		budget.SetLimit(pace.Limit{N: limit, Per: seconds(resetAfter).Round(100 * time.Millisecond), Window: true})
	}
}

// wait reports how long route key (and the global limit) still blocks,
// without taking anything.
func (t *transport) wait(key string) time.Duration {
	return max(t.route(key).Held(), t.global.Held())
}

func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

// routeKey names the rate-limit bucket of a request: Discord limits per
// top-level resource, so channel routes are keyed by method, channel and
// sub-resource. Interaction and webhook routes return "" (not tracked:
// interactions are not bound by the global limit).
func routeKey(method, path string) string {
	i := strings.Index(path, "/channels/")
	if i < 0 {
		return ""
	}
	parts := strings.Split(path[i+len("/channels/"):], "/")
	sub := ""
	if len(parts) > 1 {
		sub = parts[1]
	}
	if sub == "messages" && len(parts) > 3 {
		sub = parts[3]
	}
	return method + " " + parts[0] + " " + sub
}

// budget takes one request of route's budget for caller, in its fair turn
// at priority p, then one of the global budget. When the turn is more than
// maxWait away it fails with a *core.RateLimitError saying when it comes,
// without calling Discord: sends wait up to maxWait, because a refused
// notice would be lost; edits never wait, so the presenter coalesces.
func (a *Adapter) budget(ctx context.Context, route, caller string, p core.Priority, maxWait time.Duration) error {
	if err := a.rt.route(route).Claim(ctx, caller, p, maxWait); err != nil {
		return err
	}
	return a.rt.global.Take(ctx, caller, p)
}

// target is the channel id messages of conv go to: the thread, if any and
// open.
func (a *Adapter) target(conv core.ConversationKey) string {
	if unopened, _ := a.unopened.get(conv.Thread); conv.Thread != "" && !unopened {
		return conv.Thread
	}
	return conv.Channel
}

// sendWait bounds how long Send waits for the budget before refusing.
const sendWait = 5 * time.Second

// Send implements core.Platform. Mentions are never parsed: nothing the
// agent writes can ping anyone.
func (a *Adapter) Send(ctx context.Context, to core.ConversationKey, p core.Post) (core.MessageRef, error) {
	ch := a.target(to)
	if ch == "" {
		return core.MessageRef{}, fmt.Errorf("discord: send: no channel in %s: %w", to, core.ErrNotFound)
	}
	return a.post(ctx, to, ch, p.Priority, &discordgo.MessageSend{
		Content:         content(p),
		Components:      components(p.Buttons),
		AllowedMentions: noMentions(),
		Reference:       a.replyRef(to, ch, p),
	}, nil)
}

// post creates message send in channel ch of conversation to, in its
// turn at priority p of the channel's budget (waiting up to sendWait). A
// reply Discord refuses goes again as a plain message; files, when set,
// gives the files to attach to each attempt.
func (a *Adapter) post(ctx context.Context, to core.ConversationKey, ch string, p core.Priority, send *discordgo.MessageSend, files func() []*discordgo.File) (core.MessageRef, error) {
	attempt := func() (*discordgo.Message, error) {
		if files != nil {
			send.Files = files()
		}
		return a.sess.ChannelMessageSendComplex(ch, send, discordgo.WithContext(ctx), discordgo.WithRetryOnRatelimit(false))
	}
	if err := a.budget(ctx, "POST "+ch+" messages", to.String(), p, sendWait); err != nil {
		return core.MessageRef{}, fmt.Errorf("discord: send to %s: %w", to, err)
	}
	m, err := attempt()
	if err != nil && send.Reference != nil && badRequest(err) {
		// A reply Discord refuses must never cost the message itself.
		a.log.Warn("reply refused; sending it as a plain message", "channel", ch, "err", a.scrub(err))
		send.Reference = nil
		if err = a.budget(ctx, "POST "+ch+" messages", to.String(), p, sendWait); err != nil {
			return core.MessageRef{}, fmt.Errorf("discord: send to %s: %w", to, err)
		}
		m, err = attempt()
	}
	if err != nil {
		return core.MessageRef{}, a.translate("send to "+to.String(), err)
	}
	a.mu.Lock()
	now := time.Now()
	if len(a.sentAt) > 1000 {
		for id, at := range a.sentAt {
			if now.Sub(at) > editWindow {
				delete(a.sentAt, id)
			}
		}
	}
	a.sentAt[m.ID] = now
	a.mu.Unlock()
	return core.MessageRef{Conv: to, ID: m.ID}, nil
}

// Edit implements core.Platform. A message older than the edit window is
// reported as core.ErrNotFound, so a long reply continues in a new message.
func (a *Adapter) Edit(ctx context.Context, ref core.MessageRef, p core.Post) error {
	ch := a.target(ref.Conv)
	a.mu.Lock()
	at, known := a.sentAt[ref.ID]
	a.mu.Unlock()
	if known && time.Since(at) >= editWindow {
		return fmt.Errorf("discord: edit message %s: older than Discord's %s edit window: %w", ref.ID, editWindow, core.ErrNotFound)
	}
	if err := a.budget(ctx, "PATCH "+ch+" messages", ref.ID, p.Priority, 0); err != nil {
		return fmt.Errorf("discord: edit message %s: %w", ref.ID, err)
	}
	text := content(p)
	comps := components(p.Buttons)
	if comps == nil {
		comps = []discordgo.MessageComponent{} // removes buttons
	}
	_, err := a.sess.ChannelMessageEditComplex(&discordgo.MessageEdit{
		ID: ref.ID, Channel: ch,
		Content:         &text,
		Components:      &comps,
		AllowedMentions: noMentions(),
	}, discordgo.WithContext(ctx), discordgo.WithRetryOnRatelimit(false))
	if err != nil {
		return a.translate("edit message "+ref.ID, err)
	}
	return nil
}

// Typing implements core.Typer. Discord's indicator lasts 10 s; calls
// closer than typingEvery to the last one in the channel do nothing.
func (a *Adapter) Typing(ctx context.Context, conv core.ConversationKey) error {
	ch := a.target(conv)
	a.mu.Lock()
	last := a.typed[ch]
	now := time.Now()
	if now.Sub(last) < typingEvery {
		a.mu.Unlock()
		return nil
	}
	if len(a.typed) > 10000 {
		clear(a.typed)
	}
	a.typed[ch] = now
	a.mu.Unlock()
	if d := a.rt.wait("POST " + ch + " typing"); d > 0 {
		return &core.RateLimitError{RetryAfter: d}
	}
	if err := a.sess.ChannelTyping(ch, discordgo.WithContext(ctx), discordgo.WithRetryOnRatelimit(false)); err != nil {
		a.mu.Lock()
		a.typed[ch] = last // let the next call try again
		a.mu.Unlock()
		return a.translate("typing in "+conv.String(), err)
	}
	return nil
}

// Download implements core.Downloader: it fetches an attachment's CDN URL
// (through the adapter's HTTP client, so api_url applies) into w, refusing
// more than max bytes.
func (a *Adapter) Download(ctx context.Context, at core.Attachment, w io.Writer, max int64) error {
	u, err := url.Parse(at.Source)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("discord: download %s: not an attachment URL", at.Name)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, at.Source, nil)
	if err != nil {
		return fmt.Errorf("discord: download %s: %w", at.Name, err)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return fmt.Errorf("discord: download %s: %w", at.Name, a.scrub(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return fmt.Errorf("discord: download %s: %w", at.Name, core.ErrNotFound)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("discord: download %s: HTTP %d", at.Name, resp.StatusCode)
	}
	if resp.ContentLength > max {
		return fmt.Errorf("discord: download %s: %d bytes is over the %d byte limit", at.Name, resp.ContentLength, max)
	}
	n, err := io.Copy(w, io.LimitReader(resp.Body, max+1))
	if err != nil {
		return fmt.Errorf("discord: download %s: %w", at.Name, a.scrub(err))
	}
	if n > max {
		return fmt.Errorf("discord: download %s: over the %d byte limit", at.Name, max)
	}
	return nil
}

// Discord JSON error codes the adapter translates.
const (
	codeUnknownChannel  = 10003
	codeUnknownMessage  = 10008
	codeEditWindowLimit = 30046 // too many edits to messages older than one hour
	codeEmptyMessage    = 50006
	codeInvalidForm     = 50035
	codeTooLarge        = 40005 // files over the upload limit
)

// translate turns a discordgo error into core's error types, scrubbed of
// tokens.
func (a *Adapter) translate(op string, err error) error {
	var rl *discordgo.RateLimitError
	if errors.As(err, &rl) && rl.RateLimit != nil && rl.TooManyRequests != nil {
		wait := max(rl.RetryAfter, a.rt.wait(routeKeyOf(rl.URL)))
		return fmt.Errorf("discord: %s: %w", op, &core.RateLimitError{RetryAfter: wait, Err: errors.New(a.scrub(err).Error())})
	}
	var re *discordgo.RESTError
	if errors.As(err, &re) {
		status := 0
		if re.Response != nil {
			status = re.Response.StatusCode
		}
		code := 0
		if re.Message != nil {
			code = re.Message.Code
		}
		detail := fmt.Sprintf("HTTP %d, code %d", status, code)
		if re.Message != nil && re.Message.Message != "" {
			detail += ": " + re.Message.Message
		}
		detail = a.redact(detail)
		switch {
		case status == http.StatusNotFound, code == codeUnknownChannel, code == codeUnknownMessage, code == codeEditWindowLimit:
			return fmt.Errorf("discord: %s: %s: %w", op, detail, core.ErrNotFound)
		case code == codeInvalidForm && bytes.Contains(re.ResponseBody, []byte("MAX_LENGTH")):
			return fmt.Errorf("discord: %s: %s: %w", op, detail, core.ErrMessageTooLong)
		case code == codeEmptyMessage, code == codeInvalidForm:
			return fmt.Errorf("discord: %s: %s: %w", op, detail, core.ErrFormatting)
		case code == codeTooLarge, status == http.StatusRequestEntityTooLarge:
			return fmt.Errorf("discord: %s: %s (over Discord's 10 MiB upload limit): %w", op, detail, core.ErrFileTooLarge)
		}
		return fmt.Errorf("discord: %s: %s", op, detail)
	}
	// scrub keeps context errors matchable; their text may name a URL
	// with an interaction token.
	return fmt.Errorf("discord: %s: %w", op, a.scrub(err))
}

func routeKeyOf(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	// discordgo's RateLimitError carries no method; edits are the calls
	// that meet limits in practice.
	return routeKey(http.MethodPatch, u.Path)
}

// tokenInPath matches interaction and webhook tokens in URLs.
// Compiled on first use: every agentbridge process links this package.
var tokenInPath = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(/(?:interactions|webhooks)/[0-9A-Za-z]+/)[^/?\s"]+`)
})

// redact removes the bot token and interaction/webhook tokens from s.
func (a *Adapter) redact(s string) string {
	if tok := a.opts.Token.Reveal(); tok != "" {
		s = strings.ReplaceAll(s, tok, "REDACTED")
	}
	return tokenInPath().ReplaceAllString(s, "${1}REDACTED")
}

// scrub returns err with tokens removed from its message. The result keeps
// context errors matchable; other causes are flattened to text, since
// their fields may hold credential-bearing URLs.
func (a *Adapter) scrub(err error) error {
	if err == nil {
		return nil
	}
	msg := a.redact(err.Error())
	switch {
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: %w", msg, context.Canceled)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: %w", msg, context.DeadlineExceeded)
	}
	return errors.New(msg)
}

// noMentions is allowed_mentions with nothing allowed.
func noMentions() *discordgo.MessageAllowedMentions {
	return &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}
}

// content is the text to send for p: rendered Markdown as is, plain text
// escaped so Discord shows it literally.
func content(p core.Post) string {
	if p.Plain {
		return escapePlain(p.Text)
	}
	return p.Text
}

// escapePlain backslash-escapes what Discord Markdown would interpret: the
// inline markers anywhere, and block markers at the start of a line.
func escapePlain(s string) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	lineStart := true
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteByte('\n')
			lineStart = true
			continue
		case strings.ContainsRune("\\*_~`|[]<", r):
			b.WriteByte('\\')
		case lineStart && strings.ContainsRune("#->+", r):
			b.WriteByte('\\')
		}
		if r != ' ' && r != '\t' {
			lineStart = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// components lays buttons out in action rows of at most five.
func components(buttons []core.Button) []discordgo.MessageComponent {
	if len(buttons) == 0 {
		return nil
	}
	var rows []discordgo.MessageComponent
	for i := 0; i < len(buttons); i += 5 {
		var row discordgo.ActionsRow
		for _, bt := range buttons[i:min(i+5, len(buttons))] {
			style := discordgo.SecondaryButton
			switch bt.Style {
			case core.StylePrimary:
				style = discordgo.PrimaryButton
			case core.StyleDanger:
				style = discordgo.DangerButton
			}
			label := bt.Label
			if r := []rune(label); len(r) > 80 {
				label = string(r[:79]) + "…"
			}
			row.Components = append(row.Components, discordgo.Button{Label: label, Style: style, CustomID: bt.Value})
		}
		rows = append(rows, row)
	}
	return rows
}
