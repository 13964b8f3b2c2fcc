package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/discord/discordtest"
	"github.com/agentbridge/agentbridge/adapters/slack/slacktest"
	"github.com/agentbridge/agentbridge/adapters/telegram/telegramtest"
)

// Voice notes through serve (issue 25): each platform's fake delivers a
// voice message as the platform does, a mock OpenAI-compatible endpoint
// transcribes it, and the test agent echoes what it was given.

const (
	heardWords = "what failed in last night's build?"
	sttKey     = "sk-voice-test-key-must-not-leak"
)

// mockSTT is an OpenAI-compatible transcription endpoint that hears
// heardWords in every file (and says so with a Content-Type that lies),
// recording the files it was sent.
type mockSTT struct {
	*httptest.Server
	mu    sync.Mutex
	files []string
}

func newMockSTT(t *testing.T) *mockSTT {
	m := &mockSTT{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/audio/transcriptions" || r.Header.Get("Authorization") != "Bearer "+sttKey {
			http.Error(w, `{"error":{"message":"no"}}`, http.StatusUnauthorized)
			return
		}
		f, h, err := r.FormFile("file")
		if err != nil {
			http.Error(w, `{"error":{"message":"no file"}}`, http.StatusBadRequest)
			return
		}
		b, _ := io.ReadAll(f)
		m.mu.Lock()
		m.files = append(m.files, h.Filename+":"+string(b))
		m.mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `{"text": %q}`, heardWords)
	}))
	t.Cleanup(m.Close)
	return m
}

func (m *mockSTT) sent() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.files)
}

// transcribeSection is the transcribe lines of a platform section using m.
func (m *mockSTT) transcribeSection() string {
	return fmt.Sprintf("  transcribe: {api_url: %q, model: whisper-1, api_key: \"${TEST_STT_KEY}\"}\n", m.URL+"/v1")
}

// serveVoice runs serve with section and returns its log and a stop.
func serveVoice(t *testing.T, section string) (*lockedBuffer, func()) {
	t.Helper()
	t.Setenv("TEST_STT_KEY", sttKey)
	cfg := controlConfig(t, "log: {level: debug}\n"+section)
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &lockedBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve", "--config", cfg}, nil, &bytes.Buffer{}, stderr) }()
	return stderr, func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve = %v", err)
		}
		if strings.Contains(stderr.String(), sttKey) {
			t.Errorf("the transcription key is in serve's log")
		}
		for _, line := range strings.Split(stderr.String(), "\n") {
			if strings.Contains(line, "night's build") && !strings.Contains(line, "level=DEBUG") {
				t.Errorf("the transcript is logged above debug: %s", line)
			}
		}
	}
}

// checkHeard checks the notice quoting what was heard comes before the
// reply, and that the agent got the transcript and the audio.
func checkHeard(t *testing.T, texts []string, audio string) {
	t.Helper()
	notice := slices.IndexFunc(texts, func(s string) bool { return strings.Contains(s, "🎤 “"+heardWords+"”") })
	reply := slices.IndexFunc(texts, func(s string) bool { return strings.Contains(s, " END") })
	if notice < 0 || reply < 0 || notice > reply {
		t.Fatalf("messages %q: want the 🎤 notice before the reply", texts)
	}
	if r := texts[reply]; !strings.Contains(r, audio) || !strings.Contains(r, "last night") || strings.Contains(r, sttKey) {
		t.Errorf("the agent saw %q; want the audio %q and the transcript as its message", r, audio)
	}
}

func TestServeVoiceTelegram(t *testing.T) {
	stt := newMockSTT(t)
	fake, log := serveTelegramVoice(t, stt.transcribeSection())
	fake.AddFile("V1", "voice/file_1.oga", []byte("OggS one"))
	pushVoice(fake, 1, "V1", 4, 9, "")
	waitTG(t, fake, log, func() bool {
		return slices.ContainsFunc(tgTexts(fake), func(s string) bool { return strings.Contains(s, "build? END") })
	})
	checkHeard(t, tgTexts(fake), "[voice-uV1.ogg audio/ogg: OggS one")

	// Ten minutes and a second: over the default limit, told before any
	// download, and the agent gets the audio and the caption.
	fake.AddFile("V2", "voice/file_2.oga", []byte("OggS two"))
	pushVoice(fake, 2, "V2", 601, 9, "the long one")
	waitTG(t, fake, log, func() bool {
		return slices.ContainsFunc(tgTexts(fake), func(s string) bool { return strings.Contains(s, "the long one END") })
	})
	if !slices.Contains(tgTexts(fake), "🎤 Could not transcribe the voice note: it lasts 10m1s, over the 10m limit.") {
		t.Errorf("messages %q: want the limit told", tgTexts(fake))
	}
	if got := stt.sent(); !slices.Equal(got, []string{"voice-uV1.ogg:OggS one"}) {
		t.Errorf("the endpoint was sent %q, want the first note alone", got)
	}
}

// serveTelegramVoice runs serve with a Telegram account whose section
// ends with transcribe (its lines, indented), against a fake Telegram.
func serveTelegramVoice(t *testing.T, transcribe string) (*telegramtest.Server, *lockedBuffer) {
	t.Helper()
	const token = "987654:VOICE-SECRET"
	t.Setenv("AGENTBRIDGE_TEST_TG_TOKEN", token)
	fake := telegramtest.NewServer(token)
	t.Cleanup(fake.Close)
	log, stop := serveVoice(t, fmt.Sprintf(`telegram:
  enabled: true
  token: ${AGENTBRIDGE_TEST_TG_TOKEN}
  api_url: %s
  drafts: false
  allow_users: ["1001"]
%s`, fake.URL, transcribe))
	t.Cleanup(stop)
	return fake, log
}

// pushVoice delivers a Telegram voice message from user 1001 in its
// private chat, as Telegram sends one.
func pushVoice(fake *telegramtest.Server, id int, fileID string, seconds, size int, caption string) {
	upd := telegramtest.PrivateMessage(id, telegramtest.User(1001, "Alice", "alice"), "")
	msg := upd["message"].(map[string]any)
	delete(msg, "text")
	if caption != "" {
		msg["caption"] = caption
	}
	msg["voice"] = map[string]any{"file_id": fileID, "file_unique_id": "u" + fileID, "duration": seconds, "mime_type": "audio/ogg", "file_size": size}
	fake.Push(upd)
}

// tgTexts is the texts of the messages in user 1001's private chat.
func tgTexts(fake *telegramtest.Server) []string {
	var out []string
	for _, m := range fake.Messages(1001) {
		out = append(out, m.Text)
	}
	return out
}

// waitTG waits until cond holds for the fake Telegram.
func waitTG(t *testing.T, fake *telegramtest.Server, log *lockedBuffer, cond func() bool) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		ch := fake.Changed()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("timed out; log:\n%s", log.String())
		}
	}
}

func TestServeVoiceSlack(t *testing.T) {
	stt := newMockSTT(t)
	fake := slacktest.NewServer(slacktest.Options{})
	defer fake.Close()
	t.Setenv("TEST_SLACK_BOT_TOKEN", fake.Options().BotToken)
	t.Setenv("TEST_SLACK_APP_TOKEN", fake.Options().AppToken)
	log, stop := serveVoice(t, fmt.Sprintf(`slack:
  enabled: true
  api_url: %s
  bot_token: ${TEST_SLACK_BOT_TOKEN}
  app_token: ${TEST_SLACK_APP_TOKEN}
  allow_users: [U1]
%s`, fake.APIURL(), stt.transcribeSection()))
	defer stop()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if err := fake.WaitFor(ctx, func(s *slacktest.State) bool { return s.Connected() > 0 }); err != nil {
		t.Fatal(err)
	}
	clip := fake.AddAudioClip("F1", "audio_message.webm", "audio/webm", []byte("webm bytes"), 4200*time.Millisecond)
	fake.SendEvent("E1", map[string]any{"type": "message", "subtype": "file_share", "user": "U1", "text": "", "ts": "600.000001",
		"channel": "D1", "channel_type": "im", "event_ts": "600.000001", "files": []any{clip}})
	var texts []string
	if err := fake.WaitFor(ctx, func(s *slacktest.State) bool {
		texts = texts[:0]
		for _, m := range s.Messages() {
			texts = append(texts, m.Text)
		}
		return slices.ContainsFunc(texts, func(s string) bool { return strings.Contains(s, " END") })
	}); err != nil {
		t.Fatalf("no reply: %v\n%s", err, log.String())
	}
	checkHeard(t, texts, "[audio_message.webm audio/webm: webm bytes")
}

func TestServeVoiceDiscord(t *testing.T) {
	t.Setenv("AGENTBRIDGE_TEST_DISCORD_TOKEN", discordTestToken)
	stt := newMockSTT(t)
	fake := discordtest.NewServer(discordTestToken)
	defer fake.Close()
	log, stop := serveVoice(t, fmt.Sprintf(`discord:
  enabled: true
  token: ${AGENTBRIDGE_TEST_DISCORD_TOKEN}
  api_url: %s
  allow_users: ["111"]
%s`, fake.URL, stt.transcribeSection()))
	defer stop()
	waitDiscord(t, fake, "gateway", fake.Connected)
	url := fake.AddFile("/attachments/D1/1/voice-message.ogg", []byte("OggS discord"))
	fake.Dispatch("MESSAGE_CREATE", discordtest.VoiceMessage("M1", "D1", "", discordAlice, url, 12, 3.2))
	waitDiscord(t, fake, "the reply", func() bool {
		return slices.ContainsFunc(fake.Contents("D1"), func(s string) bool { return strings.Contains(s, " END") })
	})
	if !strings.Contains(log.String(), "voice note transcribed") {
		t.Errorf("serve did not log the transcription:\n%s", log.String())
	}
	checkHeard(t, fake.Contents("D1"), "[voice-message.ogg audio/ogg: OggS discord")
}

// TestServeVoiceLivePocketsphinx: a Telegram voice note of speech made by
// espeak-ng, transcribed through serve by a real offline engine
// (pocketsphinx on the WAV ffmpeg makes of it). Skips, loudly, without the
// tools.
func TestServeVoiceLivePocketsphinx(t *testing.T) {
	sphinx := `[pocketsphinx_continuous, -infile, "{{WAV}}", -logfn, /dev/null]`
	if _, err := exec.LookPath("pocketsphinx_continuous"); err != nil {
		sphinx = `[pocketsphinx, single, "{{WAV}}"]`
	}
	for _, tool := range []string{"espeak-ng", "ffmpeg", strings.Trim(strings.Fields(sphinx)[0], "[,")} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("SKIPPED: the live voice test needs %s (apt-get install espeak-ng ffmpeg pocketsphinx pocketsphinx-en-us)", tool)
		}
	}
	dir := t.TempDir()
	wav, ogg := filepath.Join(dir, "s.wav"), filepath.Join(dir, "s.ogg")
	if out, err := exec.Command("espeak-ng", "-s", "130", "-w", wav, "two three").CombinedOutput(); err != nil {
		t.Fatalf("espeak-ng: %v: %s", err, out)
	}
	if out, err := exec.Command("ffmpeg", "-loglevel", "error", "-i", wav, "-c:a", "libopus", ogg).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v: %s", err, out)
	}
	note, err := os.ReadFile(ogg)
	if err != nil {
		t.Fatal(err)
	}
	fake, log := serveTelegramVoice(t, fmt.Sprintf("  transcribe: {command: %s, timeout: 60s}\n", sphinx))
	fake.AddFile("LIVE", "voice/file_9.oga", note)
	pushVoice(fake, 1, "LIVE", 2, len(note), "")
	waitTG(t, fake, log, func() bool {
		return slices.ContainsFunc(tgTexts(fake), func(s string) bool { return strings.Contains(s, " END") })
	})
	texts := tgTexts(fake)
	heard := slices.IndexFunc(texts, func(s string) bool { return strings.HasPrefix(s, "🎤 “") })
	if heard < 0 || !strings.Contains(texts[heard], "two") && !strings.Contains(texts[heard], "three") {
		t.Fatalf("messages %q: want a 🎤 quote with two or three in it\n%s", texts, log.String())
	}
	t.Logf("heard: %s", texts[heard])
}
