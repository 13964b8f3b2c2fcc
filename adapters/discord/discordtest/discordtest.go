// Package discordtest is a fake Discord for tests, in the spirit of
// net/http/httptest: an HTTP server speaking the parts of the REST API the
// bridge uses (gateway discovery, users/@me, channels, messages, typing,
// threads, interaction callbacks and follow-ups, attachments) and a gateway
// WebSocket (hello, identify, ready, heartbeat acks, dispatches, resume with
// replay, op 7 reconnect, close codes). It also takes application command
// registrations (bulk overwrites, globally and per guild) and keeps the
// state of each interaction's response, so slash commands can be tested
// like a user sees them. It enforces per-channel rate-limit
// buckets like Discord, records every call, and keeps the current content
// of every message, so tests can drive the real discordgo library against
// it and assert on what a user would see. Messages may carry files
// (multipart: payload_json and files[n]), up to MaxUpload in all; more is
// answered 413 with code 40005, as Discord does.
package discordtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// BotID is the fake bot's user id; AppID its application id.
const (
	BotID = "900000000000000001"
	AppID = "900000000000000002"
)

// Call is one recorded REST request.
type Call struct {
	Method string
	Path   string // URL path, e.g. /api/v9/channels/C1/messages
	Body   string
	Auth   string // the Authorization header
	Status int    // what the fake answered
	At     time.Time
}

// Message is the current state of a message the bot created.
type Message struct {
	ID         string
	ChannelID  string
	Content    string
	Components json.RawMessage // as last sent; "[]" or empty when none
	// AllowedMentions is the allowed_mentions object as last sent.
	AllowedMentions json.RawMessage
	// ReplyTo is the message it replies to (message_reference), "" when
	// none or when the referenced message did not exist.
	ReplyTo string
	Edits   int
	// Files are the files attached when the message was created.
	Files []File
}

// File is a file attached to a message (a multipart files[n] part).
type File struct {
	Name        string // the part's filename
	ContentType string
	Data        []byte
}

// MaxUpload is Discord's limit on a message's files without boosts:
// 10 MiB.
const MaxUpload = 10 << 20

// tooLarge is Discord's answer to files over the limit.
var tooLarge = map[string]any{"message": "Request entity too large", "code": 40005}

// multipartBody is a multipart request's parts: payload_json, and the files.
type multipartBody struct {
	payload string
	files   []File
}

// Channel is a channel or thread the fake knows.
type Channel struct {
	ID       string `json:"id"`
	Type     int    `json:"type"` // 0 text, 11 public thread, 1 DM
	GuildID  string `json:"guild_id,omitempty"`
	ParentID string `json:"parent_id,omitempty"`
	OwnerID  string `json:"owner_id,omitempty"`
	Name     string `json:"name,omitempty"`
}

// Server is a fake Discord. Create it with NewServer and Close it at the end.
type Server struct {
	// URL is the base URL to configure as api_url.
	URL string
	srv *httptest.Server

	// Set before the first connection; read under mu afterwards.
	mu                sync.Mutex
	token             string // expected bot token, without "Bot "
	allowContent      bool   // the MESSAGE_CONTENT intent is enabled in the "portal"
	bucketLimit       int    // requests per bucket window; 0 = unlimited
	bucketWindow      time.Duration
	heartbeatInterval int

	calls     []Call
	msgs      map[string]*Message
	userMsgs  map[string]string // id → channel of users' messages dispatched as MESSAGE_CREATE
	noReplies bool              // refuse every message_reference (RefuseReplies)
	noThreads bool              // RefuseThreads
	order     []string
	channels  map[string]*Channel
	files     map[string][]byte
	maxUpload int64
	nextID    int
	buckets   map[string][]time.Time
	forced    map[string][]float64 // route → injected 429 retry_after seconds
	changed   chan struct{}
	identifys []map[string]any
	resumes   int
	conns     int

	// Gateway session state.
	sessionID string
	seq       int
	events    []gwEvent // every dispatch of the session, for resume replay
	conn      *gwConn
	closeNext int  // close code for the next identify/resume, 0 = none
	stall     bool // accept gateway connections but never say hello
	stalled   int  // connections held that way

	// Application commands and interactions.
	commands  map[string]json.RawMessage // guild ("" = global) → last bulk overwrite body
	refused   map[string]bool            // guilds whose registration answers 403
	responses map[string]*Response       // interaction token → its response
	expired   map[string]bool            // interaction tokens Discord no longer accepts
}

// Response is the state of an interaction's response as the invoking user
// sees it.
type Response struct {
	// Type is the callback type (4 message, 5 deferred message, 6 deferred
	// update, …); 0 before the callback.
	Type int
	// Flags are the callback's message flags; 64 is ephemeral.
	Flags int
	// Content is the response message's text, after edits; "" while the
	// user sees "thinking…".
	Content string
	// AllowedMentions is the allowed_mentions object as last sent.
	AllowedMentions json.RawMessage
	Edits           int
	// MessageID is the response message's id.
	MessageID string
}

type gwEvent struct {
	Seq  int
	Type string
	Data any
}

type gwConn struct {
	ws  *websocket.Conn
	wmu sync.Mutex
}

func (c *gwConn) write(v any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
	return c.ws.WriteJSON(v)
}

// NewServer starts a fake Discord that accepts token (without the "Bot "
// prefix), allows the MESSAGE_CONTENT intent, and enforces Discord's
// observed 5 requests per 5 s per channel route.
func NewServer(token string) *Server {
	s := &Server{
		token:             token,
		allowContent:      true,
		bucketLimit:       5,
		bucketWindow:      5 * time.Second,
		heartbeatInterval: 1000,
		msgs:              map[string]*Message{},
		userMsgs:          map[string]string{},
		channels:          map[string]*Channel{},
		files:             map[string][]byte{},
		maxUpload:         MaxUpload,
		buckets:           map[string][]time.Time{},
		forced:            map[string][]float64{},
		changed:           make(chan struct{}),
		nextID:            1000,
		commands:          map[string]json.RawMessage{},
		refused:           map[string]bool{},
		responses:         map[string]*Response{},
		expired:           map[string]bool{},
	}
	s.srv = httptest.NewServer(s.routes())
	s.URL = s.srv.URL
	return s
}

// Close closes the gateway connection and shuts the server down.
func (s *Server) Close() {
	s.mu.Lock()
	c := s.conn
	s.conn = nil
	s.mu.Unlock()
	if c != nil {
		c.ws.Close()
	}
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// SetMessageContentAllowed says whether identifying with the privileged
// MESSAGE_CONTENT intent is allowed; when not, identify is closed with 4014.
func (s *Server) SetMessageContentAllowed(ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.allowContent = ok
}

// RefuseThreads makes starting a thread from a message answer 403 Missing
// Permissions, as Discord does for a bot without Create Public Threads.
func (s *Server) RefuseThreads(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noThreads = on
}

// RefuseReplies makes message creation refuse any message_reference with
// 400 Invalid Form Body, as Discord does for a reply it will not allow (a
// system message, say).
func (s *Server) RefuseReplies(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noReplies = on
}

// SetBucket sets how many requests one route bucket (method + channel)
// takes per window; n = 0 disables rate limiting.
func (s *Server) SetBucket(n int, window time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bucketLimit, s.bucketWindow = n, window
}

// SetMaxUpload changes how many bytes of files a message may carry
// (MaxUpload until set), so a test can meet the limit without 10 MiB.
func (s *Server) SetMaxUpload(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.maxUpload = n
}

// SetHeartbeatInterval sets the interval announced in hello, in ms.
func (s *Server) SetHeartbeatInterval(ms int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.heartbeatInterval = ms
}

// RateLimitNext makes the next n requests of method on channel answer 429
// with retry_after.
func (s *Server) RateLimitNext(method, channel string, n int, retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := method + " " + channel
	for range n {
		s.forced[k] = append(s.forced[k], retryAfter.Seconds())
	}
}

// AddChannel registers a channel or thread (GET /channels/{id} answers it).
func (s *Server) AddChannel(c Channel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cc := c
	s.channels[c.ID] = &cc
}

// AddFile serves data at path (e.g. "/attachments/1/2/a.txt") and returns
// the CDN URL a MESSAGE_CREATE would carry for it.
func (s *Server) AddFile(path string, data []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[path] = data
	return "https://cdn.discordapp.com" + path + "?ex=1&is=2&hm=3"
}

// Registered returns the body of the last application command bulk
// overwrite for guild ("" for the global commands) and whether there was
// one.
func (s *Server) Registered(guild string) (json.RawMessage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.commands[guild]
	return b, ok
}

// RefuseGuild makes registering commands in guild fail with 403 Missing
// Access, as Discord answers when the bot is not in the guild or lacks the
// applications.commands scope.
func (s *Server) RefuseGuild(guild string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refused[guild] = true
}

// ExpireInteraction makes Discord refuse the interaction token: callbacks
// answer 404 Unknown interaction, follow-ups and edits 404 Unknown Webhook.
func (s *Server) ExpireInteraction(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expired[token] = true
}

// Interaction returns the response state of the interaction with token,
// and whether it was answered at all.
func (s *Server) Interaction(token string) (Response, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.responses[token]
	if !ok {
		return Response{}, false
	}
	return *r, true
}

// Calls returns every recorded REST call.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// CallsTo returns the calls whose method is method and whose path contains
// part.
func (s *Server) CallsTo(method, part string) []Call {
	var out []Call
	for _, c := range s.Calls() {
		if c.Method == method && strings.Contains(c.Path, part) {
			out = append(out, c)
		}
	}
	return out
}

// Messages returns the current state of the bot's messages in channel,
// oldest first.
func (s *Server) Messages(channel string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, id := range s.order {
		if m := s.msgs[id]; m.ChannelID == channel {
			out = append(out, *m)
		}
	}
	return out
}

// Contents returns the current text of the bot's messages in channel.
func (s *Server) Contents(channel string) []string {
	var out []string
	for _, m := range s.Messages(channel) {
		out = append(out, m.Content)
	}
	return out
}

// Identifies returns the identify payloads received, in order.
func (s *Server) Identifies() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.identifys)
}

// Resumes reports how many resumes the gateway accepted.
func (s *Server) Resumes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resumes
}

// Connected reports whether a gateway connection is ready (after READY or
// RESUMED).
func (s *Server) Connected() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn != nil
}

// Wait blocks until cond returns true (it is evaluated after every change
// the fake records) or ctx ends; it reports whether cond became true.
func (s *Server) Wait(ctx context.Context, cond func() bool) bool {
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if cond() {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return cond()
		}
	}
}

// changedLocked wakes waiters. s.mu is held.
func (s *Server) changedLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Server) newID() string {
	s.nextID++
	return strconv.Itoa(s.nextID)
}

// Dispatch sends a gateway event (op 0) of type t to the connected bot.
// Without a connection the event is kept for the next resume, as Discord
// does for a resumable session.
func (s *Server) Dispatch(t string, d any) {
	s.mu.Lock()
	s.seq++
	ev := gwEvent{Seq: s.seq, Type: t, Data: d}
	if m, ok := d.(map[string]any); ok && t == "MESSAGE_CREATE" {
		id, _ := m["id"].(string)
		ch, _ := m["channel_id"].(string)
		s.userMsgs[id] = ch
	}
	s.events = append(s.events, ev)
	c := s.conn
	s.mu.Unlock()
	if c != nil {
		c.write(map[string]any{"op": 0, "s": ev.Seq, "t": ev.Type, "d": ev.Data})
	}
}

// Reconnect sends op 7 (Reconnect) to the connected bot.
func (s *Server) Reconnect() {
	s.mu.Lock()
	c := s.conn
	s.conn = nil
	s.changedLocked()
	s.mu.Unlock()
	if c != nil {
		c.write(map[string]any{"op": 7, "d": nil})
	}
}

// Drop closes the gateway TCP connection without a close frame. Events
// dispatched until the bot resumes are replayed on resume.
func (s *Server) Drop() {
	s.mu.Lock()
	c := s.conn
	s.conn = nil
	s.changedLocked()
	s.mu.Unlock()
	if c != nil {
		c.ws.NetConn().Close()
	}
}

// CloseGateway closes the connected gateway with code (e.g. 4014).
func (s *Server) CloseGateway(code int) {
	s.mu.Lock()
	c := s.conn
	s.conn = nil
	s.changedLocked()
	s.mu.Unlock()
	if c != nil {
		c.wmu.Lock()
		c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, "closed by test"), time.Now().Add(time.Second))
		c.wmu.Unlock()
		c.ws.Close()
	}
}

// StallHandshakes makes the gateway accept WebSocket connections and then
// send nothing, not even hello, until the bot closes them: a gateway that
// hangs mid-handshake.
func (s *Server) StallHandshakes(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stall = on
}

// Stalled reports how many gateway connections StallHandshakes has held.
func (s *Server) Stalled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stalled
}

// CloseNextHandshake makes the next identify or resume be answered by a
// close with code (e.g. 4004, 4014).
func (s *Server) CloseNextHandshake(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeNext = code
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v9/gateway", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"url": "ws://" + r.Host + "/gw"})
	})
	mux.HandleFunc("GET /api/v9/users/@me", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"id": BotID, "username": "bridge", "bot": true})
	})
	mux.HandleFunc("GET /api/v9/channels/{cid}", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		c := s.channels[r.PathValue("cid")]
		s.mu.Unlock()
		if c == nil {
			writeJSON(w, 404, map[string]any{"message": "Unknown Channel", "code": 10003})
			return
		}
		writeJSON(w, 200, c)
	})
	mux.HandleFunc("POST /api/v9/channels/{cid}/messages", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Content         string          `json:"content"`
			Components      json.RawMessage `json:"components"`
			AllowedMentions json.RawMessage `json:"allowed_mentions"`
			Reference       *struct {
				MessageID       string `json:"message_id"`
				FailIfNotExists *bool  `json:"fail_if_not_exists"`
			} `json:"message_reference"`
		}
		json.Unmarshal([]byte(requestBody(r)), &body)
		files := requestFiles(r)
		var size int64
		for _, f := range files {
			size += int64(len(f.Data))
		}
		s.mu.Lock()
		max := s.maxUpload
		s.mu.Unlock()
		if size > max {
			writeJSON(w, http.StatusRequestEntityTooLarge, tooLarge)
			return
		}
		if body.Content == "" && len(body.Components) == 0 && len(files) == 0 {
			writeJSON(w, 400, map[string]any{"message": "Cannot send an empty message", "code": 50006})
			return
		}
		// A reply must name a message in the same channel; an unknown one is
		// an error unless fail_if_not_exists is false, which sends a plain
		// message instead.
		replyTo := ""
		if ref := body.Reference; ref != nil {
			s.mu.Lock()
			ch, known := s.userMsgs[ref.MessageID]
			refuse := s.noReplies
			s.mu.Unlock()
			switch {
			case refuse || (known && ch != r.PathValue("cid")):
				writeJSON(w, 400, map[string]any{"message": "Invalid Form Body", "code": 50035,
					"errors": map[string]any{"message_reference": map[string]any{"_errors": []any{map[string]any{"code": "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "message": "Unknown message"}}}}})
				return
			case known:
				replyTo = ref.MessageID
			case ref.FailIfNotExists == nil || *ref.FailIfNotExists:
				writeJSON(w, 400, map[string]any{"message": "Invalid Form Body", "code": 50035,
					"errors": map[string]any{"message_reference": map[string]any{"_errors": []any{map[string]any{"code": "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "message": "Unknown message"}}}}})
				return
			}
		}
		if utf16Len(body.Content) > 2000 {
			writeJSON(w, 400, map[string]any{"message": "Invalid Form Body", "code": 50035,
				"errors": map[string]any{"content": map[string]any{"_errors": []any{map[string]any{"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 2000 or fewer in length."}}}}})
			return
		}
		s.mu.Lock()
		m := &Message{ID: s.newID(), ChannelID: r.PathValue("cid"), Content: body.Content, Components: body.Components, AllowedMentions: body.AllowedMentions, ReplyTo: replyTo, Files: files}
		s.msgs[m.ID] = m
		s.order = append(s.order, m.ID)
		var attachments []any
		for _, f := range files {
			id := s.newID()
			attachments = append(attachments, map[string]any{"id": id, "filename": f.Name, "size": len(f.Data), "content_type": f.ContentType,
				"url": "https://cdn.discordapp.com/attachments/" + m.ChannelID + "/" + id + "/" + f.Name})
		}
		s.changedLocked()
		s.mu.Unlock()
		writeJSON(w, 200, map[string]any{"id": m.ID, "channel_id": m.ChannelID, "content": m.Content, "attachments": attachments,
			"author": map[string]any{"id": BotID, "username": "bridge", "bot": true}})
	})
	mux.HandleFunc("PATCH /api/v9/channels/{cid}/messages/{mid}", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Content         *string          `json:"content"`
			Components      *json.RawMessage `json:"components"`
			AllowedMentions json.RawMessage  `json:"allowed_mentions"`
		}
		json.Unmarshal([]byte(requestBody(r)), &body)
		s.mu.Lock()
		m := s.msgs[r.PathValue("mid")]
		if m == nil || m.ChannelID != r.PathValue("cid") {
			s.mu.Unlock()
			writeJSON(w, 404, map[string]any{"message": "Unknown Message", "code": 10008})
			return
		}
		if body.Content != nil && utf16Len(*body.Content) > 2000 {
			s.mu.Unlock()
			writeJSON(w, 400, map[string]any{"message": "Invalid Form Body", "code": 50035})
			return
		}
		if body.Content != nil {
			m.Content = *body.Content
		}
		if body.Components != nil {
			m.Components = *body.Components
		}
		m.AllowedMentions = body.AllowedMentions
		m.Edits++
		s.changedLocked()
		out := map[string]any{"id": m.ID, "channel_id": m.ChannelID, "content": m.Content}
		s.mu.Unlock()
		writeJSON(w, 200, out)
	})
	mux.HandleFunc("POST /api/v9/channels/{cid}/typing", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(204)
	})
	mux.HandleFunc("POST /api/v9/channels/{cid}/messages/{mid}/threads", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Name string `json:"name"`
		}
		json.Unmarshal([]byte(requestBody(r)), &body)
		s.mu.Lock()
		if s.noThreads {
			s.mu.Unlock()
			writeJSON(w, 403, map[string]any{"message": "Missing Permissions", "code": 50013})
			return
		}
		parent := s.channels[r.PathValue("cid")]
		c := &Channel{ID: r.PathValue("mid"), Type: 11, ParentID: r.PathValue("cid"), OwnerID: BotID, Name: body.Name}
		if parent != nil {
			c.GuildID = parent.GuildID
		}
		s.channels[c.ID] = c
		s.mu.Unlock()
		writeJSON(w, 201, c)
	})
	register := func(w http.ResponseWriter, r *http.Request) {
		guild := r.PathValue("gid")
		body := requestBody(r)
		var cmds []map[string]any
		if err := json.Unmarshal([]byte(body), &cmds); err != nil {
			writeJSON(w, 400, map[string]any{"message": "Invalid Form Body", "code": 50035})
			return
		}
		s.mu.Lock()
		if s.refused[guild] {
			s.mu.Unlock()
			writeJSON(w, 403, map[string]any{"message": "Missing Access", "code": 50001})
			return
		}
		s.commands[guild] = json.RawMessage(body)
		for _, c := range cmds {
			c["id"], c["application_id"], c["version"] = s.newID(), r.PathValue("app"), "1"
			if guild != "" {
				c["guild_id"] = guild
			}
		}
		s.changedLocked()
		s.mu.Unlock()
		writeJSON(w, 200, cmds)
	}
	mux.HandleFunc("PUT /api/v9/applications/{app}/commands", register)
	mux.HandleFunc("PUT /api/v9/applications/{app}/guilds/{gid}/commands", register)
	mux.HandleFunc("POST /api/v9/interactions/{iid}/{tok}/callback", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Type int `json:"type"`
			Data struct {
				Content         string          `json:"content"`
				Flags           int             `json:"flags"`
				AllowedMentions json.RawMessage `json:"allowed_mentions"`
			} `json:"data"`
		}
		json.Unmarshal([]byte(requestBody(r)), &body)
		tok := r.PathValue("tok")
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.expired[tok] {
			writeJSON(w, 404, map[string]any{"message": "Unknown interaction", "code": 10062})
			return
		}
		if _, answered := s.responses[tok]; answered {
			writeJSON(w, 400, map[string]any{"message": "Interaction has already been acknowledged.", "code": 40060})
			return
		}
		s.responses[tok] = &Response{MessageID: s.newID(), Type: body.Type, Flags: body.Data.Flags, Content: body.Data.Content, AllowedMentions: body.Data.AllowedMentions}
		s.changedLocked()
		w.WriteHeader(204)
	})
	mux.HandleFunc("POST /api/v9/webhooks/{app}/{tok}", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		if s.expired[r.PathValue("tok")] {
			s.mu.Unlock()
			writeJSON(w, 404, map[string]any{"message": "Unknown Webhook", "code": 10015})
			return
		}
		id := s.newID()
		s.mu.Unlock()
		writeJSON(w, 200, map[string]any{"id": id, "channel_id": "followup"})
	})
	mux.HandleFunc("PATCH /api/v9/webhooks/{app}/{tok}/messages/{mid}", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Content         *string         `json:"content"`
			AllowedMentions json.RawMessage `json:"allowed_mentions"`
		}
		json.Unmarshal([]byte(requestBody(r)), &body)
		tok := r.PathValue("tok")
		s.mu.Lock()
		defer s.mu.Unlock()
		resp := s.responses[tok]
		if s.expired[tok] || resp == nil || r.PathValue("mid") != "@original" {
			writeJSON(w, 404, map[string]any{"message": "Unknown Webhook", "code": 10015})
			return
		}
		if body.Content != nil {
			if utf16Len(*body.Content) > 2000 {
				writeJSON(w, 400, map[string]any{"message": "Invalid Form Body", "code": 50035})
				return
			}
			resp.Content = *body.Content
		}
		resp.AllowedMentions = body.AllowedMentions
		resp.Edits++
		s.changedLocked()
		writeJSON(w, 200, map[string]any{"id": resp.MessageID, "content": resp.Content, "flags": resp.Flags})
	})
	mux.HandleFunc("GET /attachments/", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		data, ok := s.files[r.URL.Path]
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(data)
	})
	mux.HandleFunc("/gw/", s.gateway)

	// Every REST call passes the recorder, the token check and the buckets.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/gw") {
			mux.ServeHTTP(w, r)
			return
		}
		s.mu.Lock()
		max := s.maxUpload
		s.mu.Unlock()
		body, _ := io.ReadAll(io.LimitReader(r.Body, max+1<<20+1))
		rec := &statusRecorder{ResponseWriter: w, status: 200}
		// A multipart body is recorded as its payload_json; the files are
		// kept apart.
		mp, isMultipart, err := parseMultipart(r.Header.Get("Content-Type"), body)
		recorded := string(body)
		if isMultipart {
			recorded = mp.payload
		}
		defer func() {
			s.mu.Lock()
			s.calls = append(s.calls, Call{Method: r.Method, Path: r.URL.Path, Body: recorded, Auth: r.Header.Get("Authorization"), Status: rec.status, At: time.Now()})
			s.changedLocked()
			s.mu.Unlock()
		}()
		if int64(len(body)) > max+1<<20 {
			writeJSON(rec, http.StatusRequestEntityTooLarge, tooLarge)
			return
		}
		if err != nil {
			writeJSON(rec, 400, map[string]any{"message": "Invalid Form Body", "code": 50035})
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), bodyKey{}, mp))
		if strings.HasPrefix(r.URL.Path, "/api/") && !strings.HasPrefix(r.URL.Path, "/api/v9/interactions/") &&
			!strings.HasPrefix(r.URL.Path, "/api/v9/webhooks/") && r.Header.Get("Authorization") != "Bot "+s.token {
			writeJSON(rec, 401, map[string]any{"message": "401: Unauthorized", "code": 0})
			return
		}
		if s.limited(rec, r) {
			return
		}
		mux.ServeHTTP(rec, r)
	})
}

type bodyKey struct{}

// requestBody returns the request's JSON body: a multipart request's
// payload_json.
func requestBody(r *http.Request) string {
	b, _ := r.Context().Value(bodyKey{}).(multipartBody)
	return b.payload
}

// requestFiles returns a multipart request's files.
func requestFiles(r *http.Request) []File {
	b, _ := r.Context().Value(bodyKey{}).(multipartBody)
	return b.files
}

// parseMultipart reads body: a JSON body as the payload, or a multipart
// one's payload_json and files[n] parts.
func parseMultipart(contentType string, body []byte) (multipartBody, bool, error) {
	typ, params, _ := mime.ParseMediaType(contentType)
	if typ != "multipart/form-data" {
		return multipartBody{payload: string(body)}, false, nil
	}
	var out multipartBody
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return out, true, nil
		}
		if err != nil {
			return out, true, err
		}
		data, err := io.ReadAll(part)
		if err != nil {
			return out, true, err
		}
		switch name := part.FormName(); {
		case name == "payload_json":
			out.payload = string(data)
		case strings.HasPrefix(name, "files["):
			// The filename as sent: Part.FileName would hide a path in it.
			_, disp, _ := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
			out.files = append(out.files, File{Name: disp["filename"], ContentType: part.Header.Get("Content-Type"), Data: data})
		}
	}
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// route returns the rate-limit bucket of a request: method plus the
// channel for channel routes (Discord buckets per top-level resource).
func route(r *http.Request) (string, bool) {
	p := strings.TrimPrefix(r.URL.Path, "/api/v9/")
	if !strings.HasPrefix(p, "channels/") || r.Method == http.MethodGet {
		return "", false
	}
	parts := strings.Split(p, "/")
	if len(parts) < 3 {
		return "", false
	}
	kind := parts[2] // messages, typing
	if kind == "messages" && len(parts) > 4 {
		kind = parts[4] // threads
	}
	return r.Method + " " + parts[1] + " " + kind, true
}

// limited applies injected 429s and the per-route bucket, writing Discord's
// headers; it reports whether it answered the request with 429.
func (s *Server) limited(w http.ResponseWriter, r *http.Request) bool {
	key, ok := route(r)
	if !ok {
		return false
	}
	parts := strings.SplitN(key, " ", 3)
	forcedKey := parts[0] + " " + parts[1]
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.forced[forcedKey]; len(q) > 0 {
		s.forced[forcedKey] = q[1:]
		write429(w, q[0], key)
		return true
	}
	if s.bucketLimit <= 0 {
		return false
	}
	now := time.Now()
	hits := s.buckets[key]
	for len(hits) > 0 && now.Sub(hits[0]) >= s.bucketWindow {
		hits = hits[1:]
	}
	if len(hits) >= s.bucketLimit {
		s.buckets[key] = hits
		write429(w, (s.bucketWindow - now.Sub(hits[0])).Seconds(), key)
		return true
	}
	hits = append(hits, now)
	s.buckets[key] = hits
	resetAfter := s.bucketWindow - now.Sub(hits[0])
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(s.bucketLimit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(s.bucketLimit-len(hits)))
	h.Set("X-RateLimit-Reset-After", strconv.FormatFloat(resetAfter.Seconds(), 'f', 3, 64))
	h.Set("X-RateLimit-Bucket", bucketHash(key))
	return false
}

func bucketHash(key string) string {
	return fmt.Sprintf("%x", []byte(strings.SplitN(key, " ", 2)[0]+strings.SplitN(key, " ", 3)[2]))
}

func write429(w http.ResponseWriter, retryAfter float64, key string) {
	h := w.Header()
	h.Set("Retry-After", strconv.Itoa(int(retryAfter)+1))
	h.Set("X-RateLimit-Limit", "5")
	h.Set("X-RateLimit-Remaining", "0")
	h.Set("X-RateLimit-Reset-After", strconv.FormatFloat(retryAfter, 'f', 3, 64))
	h.Set("X-RateLimit-Bucket", bucketHash(key))
	h.Set("X-RateLimit-Scope", "user")
	writeJSON(w, 429, map[string]any{"message": "You are being rate limited.", "retry_after": retryAfter, "global": false})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r >= 0x10000 {
			n++
		}
	}
	return n
}

// intentMessageContent is the privileged MESSAGE_CONTENT intent bit.
const intentMessageContent = 1 << 15

// gateway serves one WebSocket connection of the gateway.
func (s *Server) gateway(w http.ResponseWriter, r *http.Request) {
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	ws, err := up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &gwConn{ws: ws}
	defer ws.Close()
	s.mu.Lock()
	s.conns++
	interval := s.heartbeatInterval
	if s.stall {
		s.stalled++
		s.changedLocked()
		s.mu.Unlock()
		for { // until the bot (or Close) ends the connection
			if _, _, err := ws.ReadMessage(); err != nil {
				return
			}
		}
	}
	s.mu.Unlock()
	if c.write(map[string]any{"op": 10, "d": map[string]any{"heartbeat_interval": interval}}) != nil {
		return
	}
	closeWith := func(code int) {
		c.wmu.Lock()
		ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, "closed by fake"), time.Now().Add(time.Second))
		c.wmu.Unlock()
	}
	for {
		var m struct {
			Op int             `json:"op"`
			D  json.RawMessage `json:"d"`
		}
		if err := ws.ReadJSON(&m); err != nil {
			s.mu.Lock()
			if s.conn == c {
				s.conn = nil
				s.changedLocked()
			}
			s.mu.Unlock()
			return
		}
		switch m.Op {
		case 1:
			c.write(map[string]any{"op": 11})
		case 2:
			var id map[string]any
			json.Unmarshal(m.D, &id)
			intents, _ := id["intents"].(float64)
			s.mu.Lock()
			s.identifys = append(s.identifys, id)
			code := s.closeNext
			s.closeNext = 0
			switch {
			case code != 0:
			case id["token"] != "Bot "+s.token:
				code = 4004
			case int(intents)&intentMessageContent != 0 && !s.allowContent:
				code = 4014
			}
			if code != 0 {
				s.changedLocked()
				s.mu.Unlock()
				closeWith(code)
				return
			}
			// A new session: events of the old one are not replayed.
			s.sessionID = "session-" + s.newID()
			s.events = nil
			s.seq++
			ready := gwEvent{Seq: s.seq, Type: "READY", Data: map[string]any{"v": 9, "session_id": s.sessionID,
				"resume_gateway_url": "ws://" + r.Host + "/gw",
				"user":               map[string]any{"id": BotID, "username": "bridge", "bot": true},
				"application":        map[string]any{"id": AppID},
				"guilds":             []any{}}}
			// READY goes out before the connection counts as connected (and
			// under the lock, as on resume), so nothing a test sends once
			// Connected reports true can overtake it: discordgo's Open reads
			// the first event holding the session lock, and an op 7 there
			// deadlocks it (CloseWithCode takes the same lock).
			c.write(map[string]any{"op": 0, "s": ready.Seq, "t": ready.Type, "d": ready.Data})
			s.conn = c
			s.changedLocked()
			s.mu.Unlock()
		case 6:
			var res struct {
				Token     string `json:"token"`
				SessionID string `json:"session_id"`
				Seq       int    `json:"seq"`
			}
			json.Unmarshal(m.D, &res)
			s.mu.Lock()
			code := s.closeNext
			s.closeNext = 0
			if code == 0 && res.Token != "Bot "+s.token {
				code = 4004
			}
			if code != 0 {
				s.changedLocked()
				s.mu.Unlock()
				closeWith(code)
				return
			}
			if res.SessionID != s.sessionID {
				s.mu.Unlock()
				c.write(map[string]any{"op": 9, "d": false})
				continue
			}
			var replay []gwEvent
			for _, ev := range s.events {
				if ev.Seq > res.Seq {
					replay = append(replay, ev)
				}
			}
			s.seq++
			resumed := s.seq
			// Write under the lock so a concurrent Dispatch cannot overtake the replay.
			for _, ev := range replay {
				c.write(map[string]any{"op": 0, "s": ev.Seq, "t": ev.Type, "d": ev.Data})
			}
			c.write(map[string]any{"op": 0, "s": resumed, "t": "RESUMED", "d": map[string]any{}})
			s.resumes++
			s.conn = c
			s.changedLocked()
			s.mu.Unlock()
		}
	}
}

// User is a Discord user as the helpers below put it in events.
type User struct {
	ID   string
	Name string
	Bot  bool
}

func (u User) json() map[string]any {
	return map[string]any{"id": u.ID, "username": u.Name, "global_name": u.Name, "bot": u.Bot}
}

// MessageCreate builds a MESSAGE_CREATE payload. guild "" makes it a DM;
// mention puts a bot mention in front of content.
func MessageCreate(id, channel, guild string, from User, content string, mention bool) map[string]any {
	d := map[string]any{"id": id, "channel_id": channel, "content": content, "type": 0,
		"author": from.json(), "timestamp": time.Now().UTC().Format(time.RFC3339), "mentions": []any{}, "attachments": []any{}}
	if mention {
		d["content"] = "<@" + BotID + "> " + content
		d["mentions"] = []any{map[string]any{"id": BotID, "username": "bridge", "bot": true}}
	}
	if guild != "" {
		d["guild_id"] = guild
		d["member"] = map[string]any{"nick": from.Name}
	}
	return d
}

// MessageUpdate builds the MESSAGE_UPDATE payload Discord sends when from
// edits message id: the whole message as it now reads, with its
// edited_timestamp (mention as for MessageCreate).
func MessageUpdate(id, channel, guild string, from User, content string, mention bool) map[string]any {
	d := MessageCreate(id, channel, guild, from, content, mention)
	d["edited_timestamp"] = time.Now().UTC().Format(time.RFC3339)
	return d
}

// MessageDelete builds the MESSAGE_DELETE payload Discord sends when
// message id is deleted: its id, channel and guild only.
func MessageDelete(id, channel, guild string) map[string]any {
	d := map[string]any{"id": id, "channel_id": channel}
	if guild != "" {
		d["guild_id"] = guild
	}
	return d
}

// WithAttachment adds an attachment to a MessageCreate payload.
func WithAttachment(d map[string]any, id, name, url, contentType string, size int) map[string]any {
	atts, _ := d["attachments"].([]any)
	d["attachments"] = append(atts, map[string]any{"id": id, "filename": name, "url": url,
		"proxy_url": url, "size": size, "content_type": contentType})
	return d
}

// VoiceMessage builds the MESSAGE_CREATE payload of a voice message from
// from in channel (guild "" makes it a DM), as Discord sends one: no
// content, flags IS_VOICE_MESSAGE (1<<13), and one attachment,
// voice-message.ogg (audio/ogg), with its duration_secs and waveform. url
// is where AddFile serves its bytes.
func VoiceMessage(id, channel, guild string, from User, url string, size int, seconds float64) map[string]any {
	d := MessageCreate(id, channel, guild, from, "", false)
	d["flags"] = 1 << 13
	d["attachments"] = []any{map[string]any{"id": id + "-a", "filename": "voice-message.ogg", "url": url, "proxy_url": url,
		"size": size, "content_type": "audio/ogg", "duration_secs": seconds, "waveform": "AAAAAAAAAAAA", "flags": 1 << 13}}
	return d
}

// SlashCommand builds an INTERACTION_CREATE payload for "/agent sub" typed
// in channel (guild "" makes it a DM); arg, when not empty, is the
// subcommand's "name" option.
func SlashCommand(id, token, channel, guild string, from User, sub, arg string) map[string]any {
	opt := map[string]any{"type": 1, "name": sub}
	if arg != "" {
		opt["options"] = []any{map[string]any{"type": 3, "name": "name", "value": arg}}
	}
	d := map[string]any{"id": id, "application_id": AppID, "type": 2, "token": token, "version": 1,
		"channel_id": channel,
		"data":       map[string]any{"id": "900000000000000003", "name": "agent", "type": 1, "options": []any{opt}}}
	if guild != "" {
		d["guild_id"] = guild
		d["member"] = map[string]any{"user": from.json(), "nick": from.Name}
	} else {
		d["user"] = from.json()
	}
	return d
}

// ButtonPress builds an INTERACTION_CREATE payload for a press of the button
// with customID on message msgID.
func ButtonPress(id, token, channel, guild, msgID string, from User, customID string) map[string]any {
	d := map[string]any{"id": id, "application_id": AppID, "type": 3, "token": token, "version": 1,
		"channel_id": channel,
		"message":    map[string]any{"id": msgID, "channel_id": channel},
		"data":       map[string]any{"custom_id": customID, "component_type": 2}}
	if guild != "" {
		d["guild_id"] = guild
		d["member"] = map[string]any{"user": from.json(), "nick": from.Name}
	} else {
		d["user"] = from.json()
	}
	return d
}
