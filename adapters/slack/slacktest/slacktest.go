// Package slacktest is a fake Slack for tests, in the spirit of
// net/http/httptest: one local HTTP server that answers the Web API methods
// the bridge uses (auth.test, apps.connections.open, chat.postMessage,
// chat.update, chat.postEphemeral, the chat streaming methods
// (chat.startStream / appendStream / stopStream, with the stream's Markdown
// accumulated and its state checked),
// assistant.threads.setStatus, reactions.add, files.info and private file
// downloads, and the v2 upload flow: files.getUploadURLExternal, the
// upload URL (valid once, for the declared length only; a file over
// Options.MaxUpload is file_upload_size_restricted),
// files.completeUploadExternal sharing the file into a channel or thread)
// and serves a Socket Mode WebSocket that says hello, pings,
// delivers events_api and interactive envelopes, records acks, redelivers
// unacked envelopes on the next connection and can send disconnect.
//
// The real slack-go client talks to it through slack.OptionAPIURL(s.APIURL()).
// Every call is recorded; tests wait for conditions on the record with
// WaitFor instead of sleeping. Failures (429 with Retry-After, Slack error
// codes) are injected per method with Fail.
package slacktest

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
)

// Options configure a Server. Zero fields get the defaults shown.
type Options struct {
	BotToken  string // "xoxb-test"
	AppToken  string // "xapp-test"
	TeamID    string // "T1"
	BotUserID string // "UBOT"
	BotID     string // "B1"
	// PingEvery is how often the WebSocket pings the client; default 50ms.
	// slack-go reconnects when pings stop for longer than its ping interval.
	PingEvery time.Duration
	// UpdateLimit, when positive, makes chat.update answer 429 once more
	// than this many calls arrive within UpdateWindow (Slack's Tier 3 is
	// about 50 a minute per method per workspace).
	UpdateLimit int
	// UpdateWindow is the window UpdateLimit counts in; default a minute.
	UpdateWindow time.Duration
	// AppendLimit, when positive, makes chat.appendStream answer 429 once
	// more than this many calls arrive within AppendWindow (Tier 4 is
	// about 100 a minute per workspace).
	AppendLimit int
	// AppendWindow is the window AppendLimit counts in; default a minute.
	AppendWindow time.Duration
	// MaxUpload is the largest file files.getUploadURLExternal takes;
	// default Slack's 1 GB.
	MaxUpload int64
}

// MaxUpload is Slack's limit on one file: 1 GB.
const MaxUpload = 1000 * 1000 * 1000

// File is a file the bot uploaded, as files.completeUploadExternal shared it.
type File struct {
	ID    string
	Name  string // the filename given to files.getUploadURLExternal
	Title string
	Data  []byte // the bytes posted to the upload URL
}

// upload is a file between files.getUploadURLExternal and its completion.
type upload struct {
	id, name  string
	length    int64
	data      []byte
	uploaded  bool // its URL has been used
	completed bool
}

// Call is one recorded Web API call.
type Call struct {
	Method string     // e.g. "chat.update"
	At     time.Time  // when it arrived
	Form   url.Values // the form fields (blocks arrive JSON-encoded)
	Status int        // the HTTP status the fake answered
	Error  string     // the Slack error code answered, if any
}

// Message is the current state of a message the bot posted.
type Message struct {
	Channel  string
	TS       string
	ThreadTS string
	Text     string
	Blocks   string // JSON as last sent; "" when the message has none
	Mrkdwn   bool
	Edits    int // chat.update calls, or streaming appends (stopStream included)
	// Streamed marks a message created by chat.startStream; its Text is the
	// Markdown accumulated by startStream, appendStream and stopStream.
	Streamed bool
	// Streaming is true from chat.startStream until chat.stopStream.
	Streaming bool
	// File is set when the message is a file shared by
	// files.completeUploadExternal (Text is its initial_comment).
	File *File
}

// Failure is an injected answer to one Web API call.
type Failure struct {
	Status     int    // HTTP status; default 200 (Slack errors are 200 with ok:false)
	RetryAfter int    // seconds, sent as Retry-After (use with Status 429)
	Error      string // Slack error code, e.g. "msg_too_long"
	// Skip lets this many calls of the method succeed before the failure
	// applies (a failure midway through a series of calls).
	Skip int
}

// Envelope is a Socket Mode envelope as sent to the client.
type Envelope struct {
	ID      string
	Type    string // "events_api", "interactive", "slash_commands"
	Payload any
	Retry   int // retry_attempt
	sentOn  int // connection number it was last written to; 0 = never
}

// Server is a fake Slack. Create it with NewServer and Close it at the end.
type Server struct {
	opts Options
	srv  *httptest.Server

	mu        sync.Mutex
	calls     []Call
	msgs      map[string]*Message // by channel+":"+ts
	order     []*Message
	files     map[string]fileEntry
	uploads   map[string]*upload
	nextFile  int
	failures  map[string][]Failure
	pending   []Envelope // sent or to send, not yet acked
	acks      []string
	opens     int
	conns     int // live WebSocket connections
	connSeq   int // WebSocket connections ever accepted
	nextTS    int
	nextEnv   int
	updateWin []time.Time
	appendWin []time.Time
	changed   chan struct{}
	kick      chan struct{} // wakes the WebSocket writer
	disc      chan string   // disconnect requests
	wsWG      sync.WaitGroup
	closed    chan struct{}
}

type fileEntry struct {
	name, mime string
	data       []byte
	clip       time.Duration // an audio clip's length; 0 for other files
}

// NewServer starts a fake Slack on 127.0.0.1.
func NewServer(opts Options) *Server {
	if opts.BotToken == "" {
		opts.BotToken = "xoxb-test"
	}
	if opts.AppToken == "" {
		opts.AppToken = "xapp-test"
	}
	if opts.TeamID == "" {
		opts.TeamID = "T1"
	}
	if opts.BotUserID == "" {
		opts.BotUserID = "UBOT"
	}
	if opts.BotID == "" {
		opts.BotID = "B1"
	}
	if opts.UpdateWindow <= 0 {
		opts.UpdateWindow = time.Minute
	}
	if opts.AppendWindow <= 0 {
		opts.AppendWindow = time.Minute
	}
	if opts.PingEvery <= 0 {
		opts.PingEvery = 50 * time.Millisecond
	}
	if opts.MaxUpload <= 0 {
		opts.MaxUpload = MaxUpload
	}
	s := &Server{
		opts:     opts,
		msgs:     map[string]*Message{},
		files:    map[string]fileEntry{},
		uploads:  map[string]*upload{},
		failures: map[string][]Failure{},
		changed:  make(chan struct{}),
		kick:     make(chan struct{}, 1),
		disc:     make(chan string, 1),
		closed:   make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/ws", s.serveWS)
	mux.HandleFunc("/files-pri/", s.serveFile)
	mux.HandleFunc("/upload/v1/", s.serveUpload)
	mux.HandleFunc("/", s.serveAPI)
	s.srv = httptest.NewServer(mux)
	return s
}

// Close stops the server and its WebSocket connections.
func (s *Server) Close() {
	close(s.closed)
	s.srv.CloseClientConnections()
	s.srv.Close()
	s.wsWG.Wait()
}

// URL is the server's base URL, without a trailing slash.
func (s *Server) URL() string { return s.srv.URL }

// APIURL is the value for slack.OptionAPIURL and the config's api_url.
func (s *Server) APIURL() string { return s.srv.URL + "/" }

// Options returns the options in effect (with defaults filled in).
func (s *Server) Options() Options { return s.opts }

// Fail queues failures for the next calls of method, in order.
func (s *Server) Fail(method string, f ...Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures[method] = append(s.failures[method], f...)
}

// AddFile makes a file downloadable with the bot token and returns its
// files.info object (as a message event's "files" entry carries it).
func (s *Server) AddFile(id, name, mime string, data []byte) map[string]any {
	s.mu.Lock()
	s.files[id] = fileEntry{name: name, mime: mime, data: data}
	s.mu.Unlock()
	return s.fileObject(id)
}

// AddAudioClip is AddFile for an audio clip recorded in Slack: its
// files.info object carries subtype slack_audio, media_display_type audio
// and duration_ms besides the type given (audio/webm, audio/mp4, …).
func (s *Server) AddAudioClip(id, name, mime string, data []byte, duration time.Duration) map[string]any {
	s.mu.Lock()
	s.files[id] = fileEntry{name: name, mime: mime, data: data, clip: duration}
	s.mu.Unlock()
	return s.fileObject(id)
}

func (s *Server) fileObject(id string) map[string]any {
	s.mu.Lock()
	f := s.files[id]
	s.mu.Unlock()
	u := s.srv.URL + "/files-pri/" + s.opts.TeamID + "-" + id + "/" + url.PathEscape(f.name)
	obj := map[string]any{"id": id, "name": f.name, "mimetype": f.mime, "size": len(f.data),
		"url_private": u, "url_private_download": u + "?download=1"}
	if f.clip > 0 {
		obj["subtype"], obj["media_display_type"], obj["duration_ms"] = "slack_audio", "audio", f.clip.Milliseconds()
	}
	return obj
}

// Calls returns the recorded Web API calls, optionally only those of the
// given methods.
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

// Messages returns the bot's messages in posting order (copies).
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Message, len(s.order))
	for i, m := range s.order {
		out[i] = *m
	}
	return out
}

// Acks returns the envelope ids the client acknowledged, in order.
func (s *Server) Acks() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.acks...)
}

// Opens reports how many times apps.connections.open succeeded.
func (s *Server) Opens() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opens
}

// Connected reports how many Socket Mode connections are live.
func (s *Server) Connected() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// WaitFor blocks until cond, evaluated under the server's lock after every
// change, returns true, or ctx ends.
func (s *Server) WaitFor(ctx context.Context, cond func(s *State) bool) error {
	for {
		s.mu.Lock()
		ok := cond(&State{s: s})
		ch := s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("slacktest: condition not met: %w", ctx.Err())
		}
	}
}

// State is a read-only view of the server given to WaitFor conditions.
type State struct{ s *Server }

// Calls counts the recorded calls of method.
func (st *State) Calls(method string) int {
	n := 0
	for _, c := range st.s.calls {
		if c.Method == method {
			n++
		}
	}
	return n
}

// Acked reports whether envelope id was acknowledged.
func (st *State) Acked(id string) bool { return contains(st.s.acks, id) }

// Opens counts successful apps.connections.open calls.
func (st *State) Opens() int { return st.s.opens }

// Connected counts live Socket Mode connections.
func (st *State) Connected() int { return st.s.conns }

// Message returns the current state of a message whose text contains sub,
// in thread (any thread if thread is "").
func (st *State) Message(thread, sub string) (Message, bool) {
	for _, m := range st.s.order {
		if (thread == "" || m.ThreadTS == thread) && strings.Contains(m.Text, sub) {
			return *m, true
		}
	}
	return Message{}, false
}

// Messages returns copies of all the bot's messages.
func (st *State) Messages() []Message {
	out := make([]Message, len(st.s.order))
	for i, m := range st.s.order {
		out[i] = *m
	}
	return out
}

// changedLocked wakes WaitFor callers; s.mu must be held.
func (s *Server) changedLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Send queues an envelope for the client and returns its id. It is written
// to the live connection, or to the next one; it is redelivered on every
// new connection until acked, with retry_attempt counting up.
func (s *Server) Send(typ string, payload any) string {
	s.mu.Lock()
	s.nextEnv++
	id := fmt.Sprintf("env-%d", s.nextEnv)
	s.pending = append(s.pending, Envelope{ID: id, Type: typ, Payload: payload})
	s.changedLocked()
	s.mu.Unlock()
	s.wake()
	return id
}

// SendEvent wraps an inner event (e.g. an app_mention) in an event_callback
// and sends it as an events_api envelope. It returns the envelope id.
func (s *Server) SendEvent(eventID string, event map[string]any) string {
	return s.Send("events_api", map[string]any{
		"type": "event_callback", "token": "verification-token", "team_id": s.opts.TeamID,
		"api_app_id": "A1", "event_id": eventID, "event_time": time.Now().Unix(), "event": event,
	})
}

// EventCallback returns the event_callback body for an inner event, as the
// Events API posts it over HTTP.
func (s *Server) EventCallback(eventID string, event map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{
		"type": "event_callback", "token": "verification-token", "team_id": s.opts.TeamID,
		"api_app_id": "A1", "event_id": eventID, "event_time": time.Now().Unix(), "event": event,
	})
	return b
}

// MessageChanged is the inner event Slack sends when user edits their
// message ts in channel (thread "" for a top-level one): subtype
// message_changed, the message as it now reads under "message", as it read
// under "previous_message", and a ts of its own. Send it with SendEvent.
func MessageChanged(user, channel, channelType, ts, thread, oldText, newText string) map[string]any {
	now := fmt.Sprintf("%d.000200", time.Now().Unix())
	msg := func(text string) map[string]any {
		m := map[string]any{"type": "message", "user": user, "text": text, "ts": ts}
		if thread != "" {
			m["thread_ts"] = thread
		}
		return m
	}
	edited := msg(newText)
	edited["edited"] = map[string]any{"user": user, "ts": now}
	return map[string]any{"type": "message", "subtype": "message_changed", "hidden": true, "channel": channel,
		"channel_type": channelType, "ts": now, "event_ts": now, "message": edited, "previous_message": msg(oldText)}
}

// MessageDeleted is the inner event Slack sends when message ts of user in
// channel is deleted: subtype message_deleted, deleted_ts, and the message
// as it read under "previous_message". Send it with SendEvent.
func MessageDeleted(user, channel, channelType, ts, thread, oldText string) map[string]any {
	now := fmt.Sprintf("%d.000300", time.Now().Unix())
	prev := map[string]any{"type": "message", "user": user, "text": oldText, "ts": ts}
	if thread != "" {
		prev["thread_ts"] = thread
	}
	return map[string]any{"type": "message", "subtype": "message_deleted", "hidden": true, "channel": channel,
		"channel_type": channelType, "ts": now, "event_ts": now, "deleted_ts": ts, "previous_message": prev}
}

// Press sends an interactive block_actions envelope: user pressed the button
// with value on message msgTS in channel (thread may be empty).
func (s *Server) Press(user, channel, thread, msgTS, value string) string {
	return s.Send("interactive", s.BlockActions(user, channel, thread, msgTS, value))
}

// BlockActions returns a block_actions payload for a button press.
func (s *Server) BlockActions(user, channel, thread, msgTS, value string) map[string]any {
	container := map[string]any{"type": "message", "message_ts": msgTS, "channel_id": channel, "is_ephemeral": false}
	if thread != "" {
		container["thread_ts"] = thread
	}
	return map[string]any{
		"type": "block_actions", "trigger_id": "trig", "api_app_id": "A1",
		"team":      map[string]any{"id": s.opts.TeamID},
		"user":      map[string]any{"id": user, "name": strings.ToLower(user)},
		"channel":   map[string]any{"id": channel},
		"container": container,
		"message":   map[string]any{"ts": msgTS, "thread_ts": thread},
		"actions": []any{map[string]any{"type": "button", "action_id": "agentbridge-0", "block_id": "ab-actions",
			"value": value, "action_ts": "1"}},
	}
}

// Disconnect asks the live connection to go away with a disconnect
// envelope (reason e.g. "refresh_requested").
func (s *Server) Disconnect(reason string) {
	select {
	case s.disc <- reason:
	default:
	}
	s.wake()
}

func (s *Server) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	c, err := up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	s.wsWG.Add(1)
	defer s.wsWG.Done()
	defer c.Close()
	s.mu.Lock()
	s.conns++
	s.connSeq++
	conn := s.connSeq
	s.changedLocked()
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.conns--
		s.changedLocked()
		s.mu.Unlock()
	}()

	var wmu sync.Mutex
	write := func(v any) error {
		wmu.Lock()
		defer wmu.Unlock()
		c.SetWriteDeadline(time.Now().Add(5 * time.Second))
		return c.WriteJSON(v)
	}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		for {
			var m map[string]any
			if err := c.ReadJSON(&m); err != nil {
				return
			}
			id, _ := m["envelope_id"].(string)
			if id == "" {
				continue
			}
			s.mu.Lock()
			s.acks = append(s.acks, id)
			for i, e := range s.pending {
				if e.ID == id {
					s.pending = append(s.pending[:i], s.pending[i+1:]...)
					break
				}
			}
			s.changedLocked()
			s.mu.Unlock()
		}
	}()
	if write(map[string]any{"type": "hello", "num_connections": 1,
		"connection_info": map[string]any{"app_id": "A1"}}) != nil {
		return
	}
	ping := time.NewTicker(s.opts.PingEvery)
	defer ping.Stop()
	for {
		// Deliver what is due.
		s.mu.Lock()
		var due []map[string]any
		for i := range s.pending {
			e := &s.pending[i]
			// Unacked envelopes sent on an earlier connection are due again.
			switch e.sentOn {
			case conn:
				continue
			case 0:
			default:
				e.Retry++
			}
			e.sentOn = conn
			due = append(due, map[string]any{"type": e.Type, "envelope_id": e.ID, "payload": e.Payload,
				"accepts_response_payload": false, "retry_attempt": e.Retry, "retry_reason": retryReason(e.Retry)})
		}
		s.mu.Unlock()
		for _, d := range due {
			if write(d) != nil {
				return
			}
		}
		select {
		case <-s.kick:
		case reason := <-s.disc:
			write(map[string]any{"type": "disconnect", "reason": reason,
				"debug_info": map[string]any{"host": "fake"}})
			// Slack closes the socket shortly after; the client reconnects.
			wmu.Lock()
			c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, reason), time.Now().Add(time.Second))
			wmu.Unlock()
			return
		case <-ping.C:
			wmu.Lock()
			err := c.WriteControl(websocket.PingMessage, []byte("ping"), time.Now().Add(time.Second))
			wmu.Unlock()
			if err != nil {
				return
			}
		case <-readDone:
			return
		case <-r.Context().Done():
			return
		case <-s.closed:
			return
		}
	}
}

func retryReason(n int) string {
	if n == 0 {
		return ""
	}
	return "timeout"
}

func (s *Server) token(r *http.Request) string {
	if t, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return t
	}
	return r.Form.Get("token")
}

func (s *Server) serveFile(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	if s.token(r) != s.opts.BotToken {
		// Slack answers an HTML login page, not a 401, to unauthenticated downloads.
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html>login</html>")
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/files-pri/"), "/")
	id := parts[0][strings.LastIndexByte(parts[0], '-')+1:]
	s.mu.Lock()
	f, ok := s.files[id]
	s.calls = append(s.calls, Call{Method: "file.download", At: time.Now(), Form: url.Values{"file": {id}}, Status: 200})
	s.changedLocked()
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", f.mime)
	w.Write(f.data)
}

// Files returns the files shared in the bot's messages, in posting order.
func (s *Server) Files() []Message {
	var out []Message
	for _, m := range s.Messages() {
		if m.File != nil {
			out = append(out, m)
		}
	}
	return out
}

// serveUpload takes a file's bytes at the URL files.getUploadURLExternal
// gave: once, and only exactly the declared length (a multipart "file"
// part, as slack-go posts it, or the raw body).
func (s *Server) serveUpload(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, "/upload/v1/")
	call := Call{Method: "upload", At: time.Now(), Form: url.Values{"file": {id}}, Status: http.StatusOK}
	defer func() {
		s.mu.Lock()
		s.calls = append(s.calls, call)
		s.changedLocked()
		s.mu.Unlock()
	}()
	refuse := func(code int, msg string) {
		call.Status, call.Error = code, msg
		http.Error(w, msg, code)
	}
	s.mu.Lock()
	u := s.uploads[id]
	valid := u != nil && !u.uploaded && r.Method == http.MethodPost
	if valid {
		u.uploaded = true // used, whatever comes of it
	}
	s.mu.Unlock()
	if !valid {
		refuse(http.StatusNotFound, "upload URL unknown or already used")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, u.length+1<<16)
	var data []byte
	var err error
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
		var f multipart.File
		if f, _, err = r.FormFile("file"); err == nil {
			data, err = io.ReadAll(f)
			f.Close()
		}
	} else {
		data, err = io.ReadAll(r.Body)
	}
	switch {
	case err != nil:
		refuse(http.StatusBadRequest, "bad upload: "+err.Error())
		return
	case int64(len(data)) != u.length:
		refuse(http.StatusBadRequest, fmt.Sprintf("%d bytes, %d declared", len(data), u.length))
		return
	}
	s.mu.Lock()
	u.data = data
	s.mu.Unlock()
	fmt.Fprintf(w, "OK - %d", len(data))
}

func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/")
	r.ParseForm()
	form := url.Values{}
	for k, v := range r.Form {
		if k != "token" {
			form[k] = v
		}
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	call := Call{Method: method, At: now, Form: form, Status: http.StatusOK}
	defer func() {
		s.calls = append(s.calls, call)
		s.changedLocked()
	}()
	reply := func(v map[string]any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	fail := func(code string) {
		call.Error = code
		reply(map[string]any{"ok": false, "error": code})
	}

	want := s.opts.BotToken
	if method == "apps.connections.open" {
		want = s.opts.AppToken
	}
	if s.token(r) != want {
		fail("invalid_auth")
		return
	}
	if q := s.failures[method]; len(q) > 0 && q[0].Skip > 0 {
		q[0].Skip--
	} else if len(q) > 0 {
		f := q[0]
		s.failures[method] = q[1:]
		if f.Status == 0 {
			f.Status = http.StatusOK
		}
		if f.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(f.RetryAfter))
		}
		call.Status, call.Error = f.Status, f.Error
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.Status)
		json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": f.Error})
		return
	}

	switch method {
	case "auth.test":
		reply(map[string]any{"ok": true, "url": "https://fake.slack.com/", "team": "Fake", "user": "bridge",
			"team_id": s.opts.TeamID, "user_id": s.opts.BotUserID, "bot_id": s.opts.BotID})
	case "apps.connections.open":
		s.opens++
		reply(map[string]any{"ok": true, "url": "ws://" + r.Host + "/ws?n=" + strconv.Itoa(s.opens)})
	case "chat.postMessage", "chat.startStream":
		ch := form.Get("channel")
		if code := checkContent(form); code != "" {
			fail(code)
			return
		}
		if method == "chat.startStream" {
			// A stream is a reply in a thread; in channels (not DMs) Slack
			// also wants to know whom it answers.
			if form.Get("thread_ts") == "" ||
				!strings.HasPrefix(ch, "D") && (form.Get("recipient_user_id") == "" || form.Get("recipient_team_id") == "") {
				fail("invalid_arguments")
				return
			}
		}
		s.nextTS++
		ts := fmt.Sprintf("1700001000.%06d", s.nextTS)
		text := form.Get("text")
		if method == "chat.startStream" {
			text = form.Get("markdown_text")
		}
		m := &Message{Channel: ch, TS: ts, ThreadTS: form.Get("thread_ts"), Text: text,
			Blocks: nonEmptyBlocks(form.Get("blocks")), Mrkdwn: form.Get("mrkdwn") != "false",
			Streamed: method == "chat.startStream", Streaming: method == "chat.startStream"}
		s.msgs[ch+":"+ts] = m
		s.order = append(s.order, m)
		reply(map[string]any{"ok": true, "channel": ch, "ts": ts,
			"message": map[string]any{"text": text, "ts": ts, "thread_ts": m.ThreadTS, "bot_id": s.opts.BotID}})
	case "chat.update", "chat.appendStream", "chat.stopStream":
		if method == "chat.update" && s.opts.UpdateLimit > 0 {
			win := s.updateWin[:0]
			for _, t := range s.updateWin {
				if now.Sub(t) < s.opts.UpdateWindow {
					win = append(win, t)
				}
			}
			s.updateWin = win
			if len(win) >= s.opts.UpdateLimit {
				call.Status, call.Error = http.StatusTooManyRequests, "ratelimited"
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": "ratelimited"})
				return
			}
			s.updateWin = append(s.updateWin, now)
		}
		if method == "chat.appendStream" && s.opts.AppendLimit > 0 {
			win := s.appendWin[:0]
			for _, t := range s.appendWin {
				if now.Sub(t) < s.opts.AppendWindow {
					win = append(win, t)
				}
			}
			s.appendWin = win
			if len(win) >= s.opts.AppendLimit {
				call.Status, call.Error = http.StatusTooManyRequests, "ratelimited"
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": "ratelimited"})
				return
			}
			s.appendWin = append(s.appendWin, now)
		}
		ch, ts := form.Get("channel"), form.Get("ts")
		m := s.msgs[ch+":"+ts]
		if m == nil {
			fail("message_not_found")
			return
		}
		if code := checkContent(form); code != "" {
			fail(code)
			return
		}
		if method != "chat.update" && !m.Streaming {
			fail("message_not_in_streaming_state")
			return
		}
		if method == "chat.appendStream" && form.Get("markdown_text") == "" {
			fail("invalid_arguments")
			return
		}
		switch method {
		case "chat.update":
			if _, ok := form["text"]; ok {
				m.Text = form.Get("text")
			}
			// Slack drops a message's blocks when an update gives text but no blocks.
			if _, ok := form["blocks"]; ok {
				m.Blocks = nonEmptyBlocks(form.Get("blocks"))
			} else if _, ok := form["text"]; ok {
				m.Blocks = ""
			}
			m.Mrkdwn = form.Get("mrkdwn") != "false"
		case "chat.appendStream":
			m.Text += form.Get("markdown_text")
		case "chat.stopStream":
			m.Text += form.Get("markdown_text")
			m.Streaming = false
		}
		m.Edits++
		reply(map[string]any{"ok": true, "channel": ch, "ts": ts, "text": m.Text})
	case "chat.postEphemeral":
		s.nextTS++
		reply(map[string]any{"ok": true, "message_ts": fmt.Sprintf("1700002000.%06d", s.nextTS)})
	case "assistant.threads.setStatus", "reactions.add", "reactions.remove":
		reply(map[string]any{"ok": true})
	case "files.getUploadURLExternal":
		// Slack's words: missing_argument "typically only occurs when the
		// length provided is 0"; a team's limit on large files
		// file_upload_size_restricted.
		length, err := strconv.ParseInt(form.Get("length"), 10, 64)
		switch {
		case form.Get("filename") == "" || length == 0:
			fail("missing_argument")
			return
		case err != nil || length < 0:
			fail("invalid_arguments")
			return
		case length > s.opts.MaxUpload:
			fail("file_upload_size_restricted")
			return
		}
		s.nextFile++
		id := fmt.Sprintf("F%06d", s.nextFile)
		s.uploads[id] = &upload{id: id, name: form.Get("filename"), length: length}
		reply(map[string]any{"ok": true, "upload_url": s.srv.URL + "/upload/v1/" + id, "file_id": id})
	case "files.completeUploadExternal":
		var files []struct {
			ID    string `json:"id"`
			Title string `json:"title"`
		}
		if json.Unmarshal([]byte(form.Get("files")), &files) != nil || len(files) == 0 {
			fail("invalid_arguments")
			return
		}
		for _, f := range files {
			if u := s.uploads[f.ID]; u == nil || u.data == nil || u.completed {
				fail("file_not_found")
				return
			}
		}
		ch, thread := form.Get("channel_id"), form.Get("thread_ts")
		if thread != "" && ch == "" {
			fail("invalid_arguments")
			return
		}
		var out []map[string]any
		for _, f := range files {
			u := s.uploads[f.ID]
			u.completed = true
			title := f.Title
			if title == "" {
				title = u.name
			}
			out = append(out, map[string]any{"id": u.id, "title": title})
			if ch == "" {
				continue // uploaded, shared nowhere
			}
			s.nextTS++
			m := &Message{Channel: ch, TS: fmt.Sprintf("1700001000.%06d", s.nextTS), ThreadTS: thread,
				Text: form.Get("initial_comment"), Mrkdwn: true, File: &File{ID: u.id, Name: u.name, Title: title, Data: u.data}}
			s.msgs[ch+":"+m.TS] = m
			s.order = append(s.order, m)
		}
		reply(map[string]any{"ok": true, "files": out})
	case "files.info":
		id := form.Get("file")
		if _, ok := s.files[id]; !ok {
			fail("file_not_found")
			return
		}
		s.mu.Unlock()
		obj := s.fileObject(id)
		s.mu.Lock()
		reply(map[string]any{"ok": true, "file": obj})
	default:
		fail("unknown_method")
	}
}

// checkContent applies Slack's size rules to a post or update.
func checkContent(form url.Values) string {
	if utf8.RuneCountInString(form.Get("text")) > 40000 || utf8.RuneCountInString(form.Get("markdown_text")) > 12000 {
		return "msg_too_long"
	}
	raw := form.Get("blocks")
	if raw == "" {
		if form.Get("text") == "" && form.Get("markdown_text") == "" && form.Get("attachments") == "" {
			if _, ok := form["text"]; ok {
				return "no_text"
			}
		}
		return ""
	}
	var blocks []struct {
		Type string `json:"type"`
		Text *struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"text"`
		Elements []json.RawMessage `json:"elements"`
	}
	if json.Unmarshal([]byte(raw), &blocks) != nil || len(blocks) > 50 {
		return "invalid_blocks"
	}
	for _, b := range blocks {
		if b.Type == "section" && (b.Text == nil || utf8.RuneCountInString(b.Text.Text) > 3000 || b.Text.Text == "") {
			return "invalid_blocks"
		}
		if b.Type == "actions" && len(b.Elements) > 25 {
			return "invalid_blocks"
		}
	}
	return ""
}

func nonEmptyBlocks(b string) string {
	if b == "[]" {
		return ""
	}
	return b
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Buttons returns the values of the buttons in m's blocks, in order.
func (m Message) Buttons() []string {
	var blocks []struct {
		Type     string `json:"type"`
		Elements []struct {
			Type  string `json:"type"`
			Value string `json:"value"`
		} `json:"elements"`
	}
	if json.Unmarshal([]byte(m.Blocks), &blocks) != nil {
		return nil
	}
	var out []string
	for _, b := range blocks {
		for _, e := range b.Elements {
			if b.Type == "actions" && e.Type == "button" {
				out = append(out, e.Value)
			}
		}
	}
	return out
}

// SignedHeader returns the headers Slack sends with an Events API or
// interactivity request: the timestamp and the v0 HMAC-SHA256 signature of
// "v0:<timestamp>:<body>" with the app's signing secret.
func SignedHeader(secret string, at time.Time, body []byte) http.Header {
	ts := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("v0:" + ts + ":"))
	mac.Write(body)
	h := http.Header{}
	h.Set("X-Slack-Request-Timestamp", ts)
	h.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
	return h
}
