// Package telegramtest provides a fake Telegram Bot API server for tests, in
// the spirit of net/http/httptest: it speaks the Bot API's form-encoded
// requests and JSON answers on 127.0.0.1, keeps chats' messages, queues
// updates for getUpdates with real offset semantics (an update is confirmed
// by a later call with a higher offset), serves files for getFile, records
// every call, and can inject errors such as 429 with retry_after, 409 and
// 401. Like the real Bot API it enforces flood limits (see Limits): a
// message over a chat's or a group's budget is answered 429 with
// retry_after. It takes uploads (sendPhoto, sendDocument, sendAudio,
// sendVideo: multipart/form-data) within Telegram's limits: a request over
// MaxUpload is answered 413 "Request Entity Too Large", a photo over
// 10 MB or beyond its dimensions 400 as Telegram words it; files are
// messages of their chat, counted by the flood limits like text.
package telegramtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"image"
	_ "image/gif" // photos Telegram takes
	_ "image/jpeg"
	_ "image/png"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"
)

// BotID is the fake bot's user id; BotUsername its username.
const (
	BotID       = 4242
	BotUsername = "agent_test_bot"
)

// Call is one recorded Bot API request.
type Call struct {
	Method string
	Form   url.Values
	At     time.Time
	Fault  *Fault // the injected error it was answered with, if any
}

// Message is the current state of a message the bot sent.
type Message struct {
	ChatID    int64
	ID        int
	ThreadID  int
	Text      string
	ParseMode string
	Markup    string // reply_markup JSON as sent; "" when none
	ReplyTo   int    // the message it quotes (reply_parameters or reply_to_message_id); 0 when none
	Edits     int
	Sent      time.Time // when sendMessage created it
	File      *File     // set when the message is an upload
}

// File is what an upload sent: the method, the multipart part's form
// field, file name and Content-Type, its bytes, and the caption.
type File struct {
	Method  string // sendPhoto, sendDocument, sendAudio or sendVideo
	Field   string // photo, document, audio or video
	Name    string
	MIME    string
	Data    []byte
	Caption string
	Width   int // a photo's
	Height  int
}

// Telegram's upload limits for bots: 50 MB per file, 10 MB per photo,
// whose width and height add up to at most 10000 with a ratio of at most
// 20.
const (
	MaxUpload     = 50 << 20
	MaxPhoto      = 10 << 20
	maxPhotoSides = 10000
	maxPhotoRatio = 20
)

// TooLarge is Telegram's answer to an upload over its size limit.
var TooLarge = Fault{Code: 413, Description: "Request Entity Too Large"}

// uploads maps the upload methods to the form field that carries the file.
var uploads = map[string]string{"sendPhoto": "photo", "sendDocument": "document", "sendAudio": "audio", "sendVideo": "video"}

// Fault is an error answer the server gives instead of handling a call.
type Fault struct {
	Code        int    // HTTP status and error_code, e.g. 429
	Description string // e.g. "Too Many Requests: retry after 1"
	RetryAfter  int    // seconds; sent as parameters.retry_after when > 0
}

// Server is a fake Bot API server. Create it with NewServer and Close it.
type Server struct {
	// URL is the base URL to configure as api_url (no trailing slash).
	URL   string
	Token string

	srv *httptest.Server

	mu      sync.Mutex
	calls   []Call
	changed chan struct{} // closed and replaced on every recorded change
	updates []pending
	// allowed is the last allowed_updates a client gave (nil: all), which
	// Telegram keeps until the next one: other updates are not sent.
	allowed []string
	nextUpd int
	msgs    map[string]*Message
	nextMsg int
	faults  map[string][]Fault
	files   map[string]file
	maxPoll time.Duration
	limits  Limits
	flood   map[string][]time.Time // accepted messages' times, by budget ("chat:ID", "group:ID")
	upload  int64                  // the largest upload taken
}

// Window is one flood limit: at most N calls within any Per.
type Window struct {
	N   int
	Per time.Duration
}

// Limits are the flood limits the server enforces, each a sliding window:
// a call that would make more than N calls of its kind within Per is
// answered 429 with retry_after (whole seconds, until the oldest of them
// leaves the window) and does not count.
type Limits struct {
	// Chat limits every chat's sendMessage, editMessageText and
	// sendMessageDraft calls together.
	Chat []Window
	// Group limits a group's (chat_id < 0) sendMessage and
	// editMessageText calls together, on top of Chat.
	Group []Window
}

// DefaultLimits are Telegram's published flood limits (Bots FAQ, quoted
// by grammY's flood guide; research/platforms.md): "avoid sending more than
// one message per second" in a chat, short bursts tolerated, then 429 — a
// chat may send 60 calls in any minute and a burst of 3 in any second;
// and "no more than 20 messages per minute" to a group, which grammY's
// maintainers observe applies to edits too.
//
// Nothing is documented for sendMessageDraft. It animates a message in the
// chat like an edit does, so, to be strict, drafts count against the chat's
// limit like any message: a bridge that passes this fake stays within
// Telegram's limits whatever drafts really cost.
var DefaultLimits = Limits{
	Chat:  []Window{{N: 3, Per: time.Second}, {N: 60, Per: time.Minute}},
	Group: []Window{{N: 20, Per: time.Minute}},
}

type pending struct {
	id  int
	raw map[string]any
}

type file struct {
	path string
	data []byte
}

// NewServer starts a fake Bot API server accepting token.
func NewServer(token string) *Server {
	s := &Server{
		Token:   token,
		changed: make(chan struct{}),
		nextUpd: 1000,
		msgs:    map[string]*Message{},
		nextMsg: 100,
		faults:  map[string][]Fault{},
		files:   map[string]file{},
		maxPoll: 30 * time.Second,
		limits:  DefaultLimits,
		flood:   map[string][]time.Time{},
		upload:  MaxUpload,
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /{bottoken}/{method}", s.api)
	mux.HandleFunc("GET /file/{bottoken}/{path...}", s.file)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	return s
}

// Close shuts the server down, ending any long poll in flight.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Fail makes the next calls of method answer with faults, one each, in order.
func (s *Server) Fail(method string, faults ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[method] = append(s.faults[method], faults...)
}

// SetLimits replaces the flood limits (DefaultLimits until set); the zero
// Limits turns them off. Calls made so far still count.
func (s *Server) SetLimits(l Limits) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limits = l
}

// SetMaxUpload changes the largest file an upload may carry (MaxUpload
// until set), so a test can meet the limit without 50 MB.
func (s *Server) SetMaxUpload(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.upload = n
}

// RateLimit returns a 429 fault asking to wait retryAfter seconds.
func RateLimit(retryAfter int) Fault {
	return Fault{Code: 429, Description: fmt.Sprintf("Too Many Requests: retry after %d", retryAfter), RetryAfter: retryAfter}
}

// Conflict is the 409 a second poller gets.
var Conflict = Fault{Code: 409, Description: "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"}

// AddFile makes fileID downloadable through getFile with data.
func (s *Server) AddFile(fileID, path string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[fileID] = file{path: path, data: data}
}

// Push queues an update (the JSON object without update_id) and returns
// the update_id it got.
func (s *Server) Push(update map[string]any) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextUpd++
	s.updates = append(s.updates, pending{id: s.nextUpd, raw: update})
	s.notifyLocked()
	return s.nextUpd
}

// Redeliver queues an update again under a new update_id, as Telegram does
// when a webhook delivery is retried or a poller restarts unconfirmed.
func (s *Server) Redeliver(update map[string]any) int { return s.Push(update) }

// Pending returns the update ids not yet confirmed by an offset.
func (s *Server) Pending() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []int
	for _, p := range s.updates {
		ids = append(ids, p.id)
	}
	return ids
}

// Calls returns the recorded calls of the given methods (all when none).
func (s *Server) Calls(methods ...string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if len(methods) == 0 || contains(methods, c.Method) {
			out = append(out, c)
		}
	}
	return out
}

// Messages returns the messages the bot has sent to chatID, oldest first.
func (s *Server) Messages(chatID int64) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.msgs {
		if m.ChatID == chatID {
			out = append(out, *m)
		}
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].ID < out[j-1].ID; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// Changed returns a channel closed at the next recorded call or change, to
// wait on without sleeping.
func (s *Server) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func ok(w http.ResponseWriter, result any) {
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "result": result})
}

func fail(w http.ResponseWriter, f Fault) {
	body := map[string]any{"ok": false, "error_code": f.Code, "description": f.Description}
	if f.RetryAfter > 0 {
		body["parameters"] = map[string]any{"retry_after": f.RetryAfter}
	}
	writeJSON(w, f.Code, body)
}

func badRequest(w http.ResponseWriter, desc string) {
	fail(w, Fault{Code: 400, Description: "Bad Request: " + desc})
}

var unauthorized = Fault{Code: 401, Description: "Unauthorized"}

func (s *Server) api(w http.ResponseWriter, r *http.Request) {
	if r.PathValue("bottoken") != "bot"+s.Token {
		fail(w, unauthorized)
		return
	}
	method := r.PathValue("method")
	s.mu.Lock()
	limit := s.upload
	s.mu.Unlock()
	// An upload's request may hold the file and a little more; the file
	// itself is checked once parsed.
	r.Body = http.MaxBytesReader(w, r.Body, limit+1<<20)
	tooLarge := false
	if err := r.ParseMultipartForm(1 << 20); err != nil {
		var mb *http.MaxBytesError
		tooLarge = errors.As(err, &mb)
		r.ParseForm()
	}
	if field, ok := uploads[method]; ok && r.MultipartForm != nil {
		for _, fh := range r.MultipartForm.File[field] {
			tooLarge = tooLarge || fh.Size > limit
		}
	}
	s.mu.Lock()
	s.calls = append(s.calls, Call{Method: method, Form: r.Form, At: time.Now()})
	s.notifyLocked()
	if tooLarge {
		s.calls[len(s.calls)-1].Fault = &TooLarge
		s.mu.Unlock()
		fail(w, TooLarge)
		return
	}
	if q := s.faults[method]; len(q) > 0 {
		f := q[0]
		s.faults[method] = q[1:]
		s.calls[len(s.calls)-1].Fault = &f
		s.mu.Unlock()
		fail(w, f)
		return
	}
	if f, limited := s.floodLocked(method, r.Form.Get("chat_id"), time.Now()); limited {
		s.calls[len(s.calls)-1].Fault = &f
		s.mu.Unlock()
		fail(w, f)
		return
	}
	s.mu.Unlock()

	switch method {
	case "getMe":
		ok(w, map[string]any{"id": BotID, "is_bot": true, "first_name": "Agent", "username": BotUsername})
	case "getUpdates":
		s.getUpdates(w, r)
	case "sendMessage":
		s.sendMessage(w, r)
	case "sendPhoto", "sendDocument", "sendAudio", "sendVideo":
		s.sendFile(w, r, method)
	case "editMessageText":
		s.editMessageText(w, r)
	case "getFile":
		s.mu.Lock()
		f, found := s.files[r.Form.Get("file_id")]
		s.mu.Unlock()
		if !found {
			badRequest(w, "invalid file_id")
			return
		}
		ok(w, map[string]any{"file_id": r.Form.Get("file_id"), "file_unique_id": "u" + r.Form.Get("file_id"), "file_size": len(f.data), "file_path": f.path})
	case "sendMessageDraft":
		// Drafts may be empty (Telegram shows "Thinking…").
		if text := r.Form.Get("text"); text != "" {
			if desc := checkText(text, r.Form.Get("parse_mode")); desc != "" {
				badRequest(w, desc)
				return
			}
		}
		if r.Form.Get("draft_id") == "" || r.Form.Get("draft_id") == "0" {
			badRequest(w, "draft_id must be non-zero")
			return
		}
		ok(w, true)
	case "answerCallbackQuery", "sendChatAction", "setMyCommands", "setWebhook", "deleteWebhook":
		ok(w, true)
	default:
		fail(w, Fault{Code: 404, Description: "Not Found: method not found"})
	}
}

// floodLocked applies the flood limits to a call of method to chat at now:
// it counts the call, or returns the 429 that refuses it. s.mu is held.
func (s *Server) floodLocked(method, chat string, now time.Time) (Fault, bool) {
	type budget struct {
		key     string
		windows []Window
	}
	var budgets []budget
	switch method {
	case "sendMessage", "editMessageText", "sendMessageDraft", "sendPhoto", "sendDocument", "sendAudio", "sendVideo":
		budgets = append(budgets, budget{"chat:" + chat, s.limits.Chat})
		if method != "sendMessageDraft" && strings.HasPrefix(chat, "-") {
			budgets = append(budgets, budget{"group:" + chat, s.limits.Group})
		}
	}
	wait := time.Duration(0)
	for _, b := range budgets {
		longest := time.Duration(0)
		for _, win := range b.windows {
			longest = max(longest, win.Per)
		}
		times := s.flood[b.key]
		for len(times) > 0 && now.Sub(times[0]) >= longest {
			times = times[1:] // past every window
		}
		s.flood[b.key] = times
		for _, win := range b.windows {
			// The calls within win.Per of now; the oldest of the last N
			// must leave the window before another may go.
			in := 0
			for i := len(times) - 1; i >= 0 && now.Sub(times[i]) < win.Per; i-- {
				in++
			}
			if win.N > 0 && in >= win.N {
				wait = max(wait, times[len(times)-win.N].Add(win.Per).Sub(now))
			}
		}
	}
	if wait > 0 {
		return RateLimit(int((wait + time.Second - 1) / time.Second)), true
	}
	for _, b := range budgets {
		s.flood[b.key] = append(s.flood[b.key], now)
	}
	return Fault{}, false
}

func (s *Server) getUpdates(w http.ResponseWriter, r *http.Request) {
	offset, _ := strconv.Atoi(r.Form.Get("offset"))
	timeout, _ := strconv.Atoi(r.Form.Get("timeout"))
	limit, _ := strconv.Atoi(r.Form.Get("limit"))
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	wait := min(time.Duration(timeout)*time.Second, s.maxPoll)
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		if offset > 0 {
			// Confirm everything below offset, as Telegram does.
			keep := s.updates[:0]
			for _, p := range s.updates {
				if p.id >= offset {
					keep = append(keep, p)
				}
			}
			s.updates = keep
		}
		if raw := r.Form.Get("allowed_updates"); raw != "" {
			s.allowed = nil
			json.Unmarshal([]byte(raw), &s.allowed)
		}
		var out []map[string]any
		for _, p := range s.updates {
			if len(out) == limit {
				break
			}
			if !s.wantedLocked(p.raw) {
				continue
			}
			u := map[string]any{"update_id": p.id}
			for k, v := range p.raw {
				u[k] = v
			}
			out = append(out, u)
		}
		changed := s.changed
		s.mu.Unlock()
		if len(out) > 0 {
			ok(w, out)
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			ok(w, []any{})
			return
		case <-r.Context().Done():
			return
		}
	}
}

// wantedLocked reports whether an update's kind is one the client asked
// for (allowed_updates).
func (s *Server) wantedLocked(raw map[string]any) bool {
	if s.allowed == nil {
		return true
	}
	for kind := range raw {
		if contains(s.allowed, kind) {
			return true
		}
	}
	return false
}

func key(chat string, id int) string { return chat + "/" + strconv.Itoa(id) }

func (s *Server) sendMessage(w http.ResponseWriter, r *http.Request) {
	chat := r.Form.Get("chat_id")
	chatID, err := strconv.ParseInt(chat, 10, 64)
	if err != nil {
		badRequest(w, "chat not found")
		return
	}
	text, mode := r.Form.Get("text"), r.Form.Get("parse_mode")
	if desc := checkText(text, mode); desc != "" {
		badRequest(w, desc)
		return
	}
	s.post(w, r, chat, &Message{ChatID: chatID, Text: text, ParseMode: mode, Markup: markup(r.Form)})
}

// post stores m as a new message of chat, in the topic and quoting the
// message the request's form names, and answers with it.
func (s *Server) post(w http.ResponseWriter, r *http.Request, chat string, m *Message) {
	m.ThreadID, _ = strconv.Atoi(r.Form.Get("message_thread_id"))
	replyTo, desc := replyTarget(r.Form)
	if desc != "" {
		badRequest(w, desc)
		return
	}
	m.ReplyTo = replyTo
	s.mu.Lock()
	s.nextMsg++
	m.ID, m.Sent = s.nextMsg, time.Now()
	s.msgs[key(chat, m.ID)] = m
	s.notifyLocked()
	res := messageJSON(m)
	s.mu.Unlock()
	ok(w, res)
}

// sendFile takes an upload: the file in the method's field, a caption of
// at most 1024 characters, a photo within Telegram's photo limits.
func (s *Server) sendFile(w http.ResponseWriter, r *http.Request, method string) {
	field := uploads[method]
	chat := r.Form.Get("chat_id")
	chatID, err := strconv.ParseInt(chat, 10, 64)
	if err != nil {
		badRequest(w, "chat not found")
		return
	}
	var fh *multipart.FileHeader
	if r.MultipartForm != nil && len(r.MultipartForm.File[field]) > 0 {
		fh = r.MultipartForm.File[field][0]
	}
	if fh == nil {
		badRequest(w, "there is no "+field+" in the request")
		return
	}
	part, err := fh.Open()
	if err != nil {
		badRequest(w, "failed to read the file")
		return
	}
	data, err := io.ReadAll(part)
	part.Close()
	if err != nil {
		badRequest(w, "failed to read the file")
		return
	}
	// The filename as sent: FileHeader.Filename would hide a path in it.
	_, disp, _ := mime.ParseMediaType(fh.Header.Get("Content-Disposition"))
	f := &File{Method: method, Field: field, Name: disp["filename"], MIME: fh.Header.Get("Content-Type"), Data: data, Caption: r.Form.Get("caption")}
	if n := len(utf16.Encode([]rune(f.Caption))); n > 1024 {
		badRequest(w, "message caption is too long")
		return
	}
	if method == "sendPhoto" {
		cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
		switch {
		case len(data) > MaxPhoto:
			badRequest(w, "PHOTO_SAVE_FILE_INVALID")
			return
		case err != nil:
			badRequest(w, "IMAGE_PROCESS_FAILED")
			return
		case cfg.Width+cfg.Height > maxPhotoSides || max(cfg.Width, cfg.Height) > maxPhotoRatio*min(cfg.Width, cfg.Height):
			badRequest(w, "PHOTO_INVALID_DIMENSIONS")
			return
		}
		f.Width, f.Height = cfg.Width, cfg.Height
	}
	s.post(w, r, chat, &Message{ChatID: chatID, File: f})
}

// Files returns the files the bot has uploaded to chatID, oldest first.
func (s *Server) Files(chatID int64) []Message {
	var out []Message
	for _, m := range s.Messages(chatID) {
		if m.File != nil {
			out = append(out, m)
		}
	}
	return out
}

func (s *Server) editMessageText(w http.ResponseWriter, r *http.Request) {
	chat := r.Form.Get("chat_id")
	id, _ := strconv.Atoi(r.Form.Get("message_id"))
	text, mode := r.Form.Get("text"), r.Form.Get("parse_mode")
	if desc := checkText(text, mode); desc != "" {
		badRequest(w, desc)
		return
	}
	mk := markup(r.Form)
	s.mu.Lock()
	m := s.msgs[key(chat, id)]
	switch {
	case m == nil:
		s.mu.Unlock()
		badRequest(w, "message to edit not found")
		return
	case m.Text == text && m.ParseMode == mode && m.Markup == mk:
		s.mu.Unlock()
		badRequest(w, "message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message")
		return
	}
	m.Text, m.ParseMode, m.Markup = text, mode, mk
	m.Edits++
	s.notifyLocked()
	res := messageJSON(m)
	s.mu.Unlock()
	ok(w, res)
}

// replyTarget reads the message a send quotes: reply_parameters (Bot API
// 7.0) or the older reply_to_message_id. It returns Telegram's complaint
// when reply_parameters is malformed.
func replyTarget(f url.Values) (int, string) {
	if rp := f.Get("reply_parameters"); rp != "" {
		var p struct {
			MessageID int `json:"message_id"`
		}
		if err := json.Unmarshal([]byte(rp), &p); err != nil || p.MessageID == 0 {
			return 0, "can't parse reply parameters JSON object"
		}
		return p.MessageID, ""
	}
	id, _ := strconv.Atoi(f.Get("reply_to_message_id"))
	return id, ""
}

// markup normalizes reply_markup: the library sends "null" for none.
func markup(f url.Values) string {
	mk := f.Get("reply_markup")
	if mk == "null" || mk == "{}" || mk == `{"inline_keyboard":[]}` {
		return ""
	}
	return mk
}

func messageJSON(m *Message) map[string]any {
	chatType := "private"
	if m.ChatID < 0 {
		chatType = "supergroup"
	}
	out := map[string]any{
		"message_id": m.ID, "date": time.Now().Unix(), "text": m.Text,
		"chat": map[string]any{"id": m.ChatID, "type": chatType},
		"from": map[string]any{"id": BotID, "is_bot": true, "first_name": "Agent", "username": BotUsername},
	}
	if m.ThreadID != 0 {
		out["message_thread_id"] = m.ThreadID
		out["is_topic_message"] = true
	}
	if f := m.File; f != nil {
		delete(out, "text")
		id := fmt.Sprintf("%s-%d", f.Field, m.ID)
		obj := map[string]any{"file_id": id, "file_unique_id": "u" + id, "file_size": len(f.Data)}
		if f.Method == "sendPhoto" {
			obj["width"], obj["height"] = f.Width, f.Height
			out["photo"] = []any{obj}
		} else {
			obj["file_name"], obj["mime_type"] = f.Name, f.MIME
			out[f.Field] = obj
		}
		if f.Caption != "" {
			out["caption"] = f.Caption
		}
	}
	return out
}

var tagRE = regexp.MustCompile(`<(/?)([a-zA-Z0-9-]+)[^>]*>`)

// checkText applies Telegram's checks: HTML must parse (known tags,
// balanced), and the text after entity parsing must be 1–4096 UTF-16 units.
func checkText(text, mode string) string {
	visible := text
	if strings.EqualFold(mode, "HTML") {
		var stack []string
		allowed := map[string]bool{"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true, "s": true,
			"strike": true, "del": true, "a": true, "code": true, "pre": true, "blockquote": true, "tg-spoiler": true, "span": true, "tg-emoji": true}
		for _, m := range tagRE.FindAllStringSubmatch(text, -1) {
			name := strings.ToLower(m[2])
			if !allowed[name] {
				return "can't parse entities: Unsupported start tag \"" + name + "\""
			}
			if m[1] == "" {
				stack = append(stack, name)
				continue
			}
			if len(stack) == 0 || stack[len(stack)-1] != name {
				return "can't parse entities: Unexpected end tag"
			}
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 {
			return "can't parse entities: Can't find end tag corresponding to start tag \"" + stack[len(stack)-1] + "\""
		}
		visible = html.UnescapeString(tagRE.ReplaceAllString(text, ""))
	}
	n := len(utf16.Encode([]rune(visible)))
	switch {
	case strings.TrimSpace(visible) == "":
		return "message text is empty"
	case n > 4096:
		return "message is too long"
	}
	return ""
}

func (s *Server) file(w http.ResponseWriter, r *http.Request) {
	if r.PathValue("bottoken") != "bot"+s.Token {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	path := r.PathValue("path")
	s.mu.Lock()
	var data []byte
	found := false
	for _, f := range s.files {
		if f.path == path {
			data, found = f.data, true
		}
	}
	s.calls = append(s.calls, Call{Method: "file", Form: url.Values{"path": {path}}, At: time.Now()})
	s.notifyLocked()
	s.mu.Unlock()
	if !found {
		http.NotFound(w, r)
		return
	}
	w.Write(data)
}

// Update builders: the JSON shapes Telegram sends.

// User is a Telegram user object.
func User(id int64, first, username string) map[string]any {
	u := map[string]any{"id": id, "is_bot": false, "first_name": first}
	if username != "" {
		u["username"] = username
	}
	return u
}

// PrivateMessage is a "message" update from user in their DM with the bot.
func PrivateMessage(msgID int, user map[string]any, text string) map[string]any {
	id := user["id"]
	return map[string]any{"message": map[string]any{
		"message_id": msgID, "date": time.Now().Unix(), "text": text, "from": user,
		"chat": map[string]any{"id": id, "type": "private", "first_name": user["first_name"]},
	}}
}

// GroupMessage is a "message" update in group chatID; thread > 0 puts it
// in that forum topic. Mentions of @BotUsername get a mention entity.
func GroupMessage(chatID int64, msgID, thread int, user map[string]any, text string) map[string]any {
	m := map[string]any{
		"message_id": msgID, "date": time.Now().Unix(), "text": text, "from": user,
		"chat": map[string]any{"id": chatID, "type": "supergroup", "title": "Group", "is_forum": thread > 0},
	}
	if thread > 0 {
		m["message_thread_id"] = thread
		m["is_topic_message"] = true
	}
	if i := strings.Index(text, "@"+BotUsername); i >= 0 {
		off := len(utf16.Encode([]rune(text[:i])))
		m["entities"] = []any{map[string]any{"type": "mention", "offset": off, "length": len(BotUsername) + 1}}
	}
	if strings.HasPrefix(text, "/") {
		cmd, _, _ := strings.Cut(text, " ")
		m["entities"] = []any{map[string]any{"type": "bot_command", "offset": 0, "length": len(utf16.Encode([]rune(cmd)))}}
	}
	return map[string]any{"message": m}
}

// Edited is the "edited_message" update Telegram sends when a message
// (an update from PrivateMessage or GroupMessage) is edited to text: the
// message as it now reads, with its edit_date. Telegram sends no update
// when a message is deleted.
func Edited(update map[string]any, text string) map[string]any {
	m := map[string]any{}
	for k, v := range update["message"].(map[string]any) {
		m[k] = v
	}
	m["text"], m["edit_date"] = text, time.Now().Unix()
	delete(m, "entities")
	if i := strings.Index(text, "@"+BotUsername); i >= 0 {
		off := len(utf16.Encode([]rune(text[:i])))
		m["entities"] = []any{map[string]any{"type": "mention", "offset": off, "length": len(BotUsername) + 1}}
	}
	return map[string]any{"edited_message": m}
}

// CallbackQuery is a press of a button with data on message msgID in chatID.
func CallbackQuery(id string, user map[string]any, chatID int64, msgID, thread int, data string) map[string]any {
	chatType := "private"
	if chatID < 0 {
		chatType = "supergroup"
	}
	msg := map[string]any{"message_id": msgID, "date": time.Now().Unix(), "chat": map[string]any{"id": chatID, "type": chatType}}
	if thread > 0 {
		msg["message_thread_id"] = thread
		msg["is_topic_message"] = true
	}
	return map[string]any{"callback_query": map[string]any{"id": id, "from": user, "chat_instance": "ci", "data": data, "message": msg}}
}
