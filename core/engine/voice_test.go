package engine_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/engine"
	"github.com/agentbridge/agentbridge/core/platformtest"
	"github.com/agentbridge/agentbridge/transcribe"
)

// sttServer is a mock OpenAI-compatible transcription endpoint: it
// records each request and answers with answer.
type sttServer struct {
	*httptest.Server
	mu     sync.Mutex
	reqs   []sttRequest
	answer func(w http.ResponseWriter, r *http.Request)
}

type sttRequest struct {
	auth, model, language, format, file, fileName string
}

func newSTT(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) *sttServer {
	s := &sttServer{answer: answer}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/audio/transcriptions" || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		req := sttRequest{auth: r.Header.Get("Authorization")}
		if err := r.ParseMultipartForm(1 << 20); err == nil {
			req.model, req.language, req.format = r.FormValue("model"), r.FormValue("language"), r.FormValue("response_format")
			if f, h, err := r.FormFile("file"); err == nil {
				b, _ := io.ReadAll(f)
				req.file, req.fileName = string(b), h.Filename
			}
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, req)
		s.mu.Unlock()
		s.answer(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *sttServer) requests() []sttRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

func sayText(text string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"text": text})
	}
}

const sttKey = "sk-test-key-never-shown"

// voiceHarness is a harness whose conversations transcribe through s,
// with v's limits, counting into obs.
func voiceHarness(t *testing.T, s *sttServer, v engine.Voice, obs *transcribed) *harness {
	v.Transcriber = &transcribe.OpenAI{URL: s.URL + "/v1", Model: "whisper-1", Key: sttKey, Language: "en"}
	return buildHarness(t, "", func(st *engine.Settings) {
		st.Voice = func(core.ConversationKey) engine.Voice { return v }
	}, nil, func(o *engine.Options) { o.Observer = obs })
}

// transcribed is an engine.Observer counting transcriptions by result.
type transcribed struct {
	counts
	mu      sync.Mutex
	results []string
}

func (o *transcribed) Transcribed(_, result string, _ time.Duration) {
	o.mu.Lock()
	o.results = append(o.results, result)
	o.mu.Unlock()
}

func (o *transcribed) got() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.results)
}

// voiceNote delivers a voice note with caption from alice and returns its
// message id.
func (h *harness) voiceNote(caption string, a core.Attachment, data string) string {
	h.plat.AddFile(a.Source, []byte(data))
	id := "voice-" + a.Source
	h.plat.Deliver(h.t.Context(), core.Message{Conv: conv, ID: id, From: alice, Text: caption, Attachments: []core.Attachment{a}})
	return id
}

// finalText waits until the engine is idle and returns the message that
// contains want, as it ended.
func (h *harness) finalText(want string) platformtest.Message {
	h.t.Helper()
	h.waitText(want)
	h.idle()
	return h.waitText(want)
}

var oggNote = core.Attachment{Kind: "audio", Name: "voice-1.ogg", MIME: "audio/ogg", Size: 9, Duration: 3 * time.Second, Source: "V1"}

// TestVoiceNoteBecomesTheMessage: the transcript, after the caption, is
// the agent's message; the audio still goes with it; the sender sees what
// was heard, quoted, before the answer; the key reaches neither the agent
// nor the logs, and the transcript is logged at debug level only.
func TestVoiceNoteBecomesTheMessage(t *testing.T) {
	const heard = "what failed in last night's build?"
	stt := newSTT(t, sayText(heard))
	obs := &transcribed{}
	h := voiceHarness(t, stt, engine.Voice{}, obs)
	id := h.voiceNote("about CI", oggNote, "OggS data")

	reply := h.finalText("[voice-1.ogg")
	for _, want := range []string{"[voice-1.ogg audio/ogg: OggS data <nil>]", "about CI " + heard} {
		if !strings.Contains(reply.Post.Text, want) {
			t.Errorf("the agent saw %q; want %q in it", reply.Post.Text, want)
		}
	}
	notice := "🎤 “" + heard + "”"
	msgs := h.plat.Messages(conv)
	at := slices.IndexFunc(msgs, func(m platformtest.Message) bool { return m.Post.Text == notice })
	answer := slices.IndexFunc(msgs, func(m platformtest.Message) bool { return m.Ref.ID == reply.Ref.ID })
	if at < 0 || at > answer {
		t.Fatalf("messages %q: want %q before the answer", h.plat.Texts(conv), notice)
	}
	if msgs[at].Post.ReplyTo != id {
		t.Errorf("the notice replies to %q, want the voice note %q", msgs[at].Post.ReplyTo, id)
	}
	want := []sttRequest{{auth: "Bearer " + sttKey, model: "whisper-1", language: "en", format: "json", file: "OggS data", fileName: "voice-1.ogg"}}
	if got := stt.requests(); !slices.Equal(got, want) {
		t.Errorf("requests = %+v, want %+v", got, want)
	}
	if got := obs.got(); !slices.Equal(got, []string{"ok"}) {
		t.Errorf("transcriptions counted %q, want ok", got)
	}
	if strings.Contains(reply.Post.Text, sttKey) {
		t.Errorf("the key reached the agent: %q", reply.Post.Text)
	}
	debug := false
	for _, r := range h.logs.records() {
		for _, v := range r.vals {
			if strings.Contains(v, sttKey) {
				t.Errorf("the key was logged: %q %q", r.msg, r.vals)
			}
			if strings.Contains(v, "night's build") {
				if r.lvl > -4 { // slog.LevelDebug
					t.Errorf("the transcript was logged above debug: %q at %v", r.msg, r.lvl)
				}
				debug = true
			}
		}
	}
	if !debug {
		t.Error("the transcript was not logged at debug level")
	}
}

// TestVoiceNoteNotHeard: a voice note over a limit (judged on what the
// platform said, before any request), or one the engine fails on, goes to
// the agent untranscribed, its sender told why in one line.
func TestVoiceNoteNotHeard(t *testing.T) {
	for _, tc := range []struct {
		name   string
		voice  engine.Voice
		answer func(w http.ResponseWriter, r *http.Request)
		note   core.Attachment
		why    string
		result string
		asked  bool
	}{
		{name: "too long", note: core.Attachment{Kind: "audio", Name: "long.ogg", MIME: "audio/ogg", Size: 9, Duration: 11 * time.Minute, Source: "L"},
			why: "it lasts 11m, over the 10m limit.", result: "too_long"},
		{name: "too big", voice: engine.Voice{MaxBytes: 4}, note: core.Attachment{Kind: "audio", Name: "big.ogg", Size: 9, Source: "B"},
			why: "it is 1 KiB, over the 4 bytes limit.", result: "too_big"},
		{name: "size unknown", voice: engine.Voice{MaxBytes: 4}, note: core.Attachment{Kind: "audio", Name: "big.ogg", Source: "U"},
			why: "it is 1 KiB, over the 4 bytes limit.", result: "too_big"},
		{name: "failing", note: oggNote, asked: true, result: "failed",
			answer: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(500)
				io.WriteString(w, `{"error":{"message":"the model is overloaded","type":"server_error"}}`)
			},
			why: "the endpoint answered HTTP 500: the model is overloaded."},
		{name: "slow", voice: engine.Voice{Timeout: 300 * time.Millisecond}, note: oggNote, asked: true, result: "timeout",
			answer: func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() },
			why:    "the transcription engine took longer than 300ms."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.answer == nil {
				tc.answer = sayText("never asked")
			}
			stt := newSTT(t, tc.answer)
			obs := &transcribed{}
			h := voiceHarness(t, stt, tc.voice, obs)
			h.voiceNote("caption words", tc.note, "OggS data")
			line := h.waitText("🎤 Could not transcribe the voice note: ")
			if want := "🎤 Could not transcribe the voice note: " + tc.why; line.Post.Text != want {
				t.Errorf("told %q, want %q", line.Post.Text, want)
			}
			reply := h.finalText("[" + tc.note.Name)
			if !strings.Contains(reply.Post.Text, "OggS data <nil>] caption words") || strings.Contains(reply.Post.Text, "never asked") {
				t.Errorf("the agent saw %q; want the audio and the caption alone", reply.Post.Text)
			}
			if n := len(stt.requests()); (n > 0) != tc.asked {
				t.Errorf("%d requests to the engine; want asked=%v", n, tc.asked)
			}
			if got := obs.got(); !slices.Equal(got, []string{tc.result}) {
				t.Errorf("transcriptions counted %q, want %s", got, tc.result)
			}
			if h.count("🎤 “") != 0 {
				t.Errorf("a transcript was quoted: %q", h.plat.Texts(conv))
			}
		})
	}
}

// TestStatusSaysTranscribing: /status names a transcription under way.
func TestStatusSaysTranscribing(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	stt := newSTT(t, func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
		sayText("hello there")(w, r)
	})
	h := voiceHarness(t, stt, engine.Voice{}, &transcribed{})
	h.voiceNote("", oggNote, "OggS data")
	<-arrived
	h.send(alice, "/status")
	h.waitText("🎤 Transcribing a voice note.")
	close(release)
	if reply := h.finalText("[voice-1.ogg"); !strings.Contains(reply.Post.Text, "<nil>] hello there\n") {
		t.Errorf("reply %q: want the transcript alone as the message", reply.Post.Text)
	}
}

// TestAudioUntouchedWithoutTranscribe: with no engine configured, audio
// goes to the agent as before and nothing is said about it.
func TestAudioUntouchedWithoutTranscribe(t *testing.T) {
	h := newHarness(t, "", nil)
	h.voiceNote("just this", oggNote, "OggS data")
	reply := h.finalText("[voice-1.ogg")
	if !strings.Contains(reply.Post.Text, "<nil>] just this\n") || h.count("🎤") != 0 {
		t.Errorf("messages %q: want the audio and caption, no 🎤 line", h.plat.Texts(conv))
	}
}
