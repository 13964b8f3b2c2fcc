package transcribe_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/transcribe"
)

const key = "sk-secret-key-0123456789"

var note = core.Attachment{Kind: "audio", Name: "voice-7.ogg", MIME: "audio/ogg"}

// audio writes a voice note's bytes to a file and returns its path.
func audio(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "01-voice-7.ogg")
	if err := os.WriteFile(p, []byte("OggS fake opus"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// endpoint serves answer at /v1/audio/transcriptions and returns an
// engine pointed at it.
func endpoint(t *testing.T, answer http.HandlerFunc) *transcribe.OpenAI {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/audio/transcriptions", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Content-Type") != "" && !strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
			t.Errorf("Content-Type %q, want multipart/form-data", r.Header.Get("Content-Type"))
		}
		// A real server reads the upload before it answers (and only then
		// notices a client that went away).
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			t.Errorf("not a multipart form: %v", err)
		}
		answer(w, r)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &transcribe.OpenAI{URL: srv.URL + "/v1/", Model: "whisper-1", Key: key, Language: "en"}
}

func TestOpenAIRequestAndAnswer(t *testing.T) {
	got := map[string]string{}
	o := endpoint(t, func(w http.ResponseWriter, r *http.Request) {
		f, h, err := r.FormFile("file")
		if err != nil {
			t.Fatalf("no file part: %v", err)
		}
		b, _ := io.ReadAll(f)
		got["auth"] = r.Header.Get("Authorization")
		got["file"] = h.Filename + " " + h.Header.Get("Content-Type") + " " + string(b)
		for _, k := range []string{"model", "language", "response_format"} {
			got[k] = r.FormValue(k)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"text": "  Hello world.  ", "language": "en"}`)
	})
	text, err := o.Transcribe(t.Context(), audio(t), note)
	if err != nil || text != "Hello world." {
		t.Fatalf("Transcribe = %q, %v; want the trimmed text", text, err)
	}
	want := map[string]string{"auth": "Bearer " + key, "file": "voice-7.ogg audio/ogg OggS fake opus",
		"model": "whisper-1", "language": "en", "response_format": "json"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

// A slow server: the caller's deadline ends the call, as a deadline.
func TestOpenAISlowTimesOut(t *testing.T) {
	o := endpoint(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := o.Transcribe(ctx, audio(t), note)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a deadline", err)
	}
}

// An answer that starts and never ends: the deadline still holds.
func TestOpenAIStalledBodyTimesOut(t *testing.T) {
	o := endpoint(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"text": "hel`)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if _, err := o.Transcribe(ctx, audio(t), note); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a deadline", err)
	}
}

func TestOpenAIErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		ctype  string
		body   string
		want   string
	}{
		{"500 with an OpenAI error", 500, "application/json", `{"error": {"message": "The server had an error\nwhile processing", "type": "server_error"}}`,
			"the endpoint answered HTTP 500: The server had an error while processing"},
		{"401 echoing the key", 401, "application/json", `{"error": {"message": "Incorrect API key provided: ` + key + `"}}`,
			"the endpoint answered HTTP 401: Incorrect API key provided: REDACTED"},
		{"a bare error string", 400, "application/json", `{"error": "file too short"}`, "the endpoint answered HTTP 400: file too short"},
		{"a proxy's HTML page", 502, "text/html", `<html><body>Bad Gateway</body></html>`, "the endpoint answered HTTP 502"},
		{"JSON without text", 200, "application/json", `{"segments": []}`, `the endpoint answered JSON without a "text" string`},
		{"HTML called JSON", 200, "application/json", `<!doctype html><p>login</p>`, `not a transcript (Content-Type "application/json")`},
		{"binary", 200, "application/json", "\x00\x01\x02", "not a transcript"},
		{"silence", 200, "application/json", `{"text": "   "}`, "no speech was recognised"},
		{"huge", 200, "application/json", `{"text": "` + strings.Repeat("la ", 1<<19) + `"}`, "answered more than 1048576 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := endpoint(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.ctype)
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			})
			text, err := o.Transcribe(t.Context(), audio(t), note)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Transcribe = %q, %v; want an error with %q", text, err, tc.want)
			}
			if strings.Contains(err.Error(), key) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q shows the key or spans lines", err)
			}
		})
	}
}

// The answer is read by what it holds, not by what its Content-Type says.
func TestOpenAILyingContentType(t *testing.T) {
	for _, tc := range []struct{ ctype, body string }{
		{"text/html; charset=utf-8", `{"text": "hello world"}`},
		{"application/octet-stream", `{"text": "hello world"}`},
		{"application/json", "hello world\n"}, // a server that ignores response_format
		{"", `{"text":"hello world"}`},
	} {
		o := endpoint(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header()["Content-Type"] = []string{tc.ctype}
			io.WriteString(w, tc.body)
		})
		if text, err := o.Transcribe(t.Context(), audio(t), note); err != nil || text != "hello world" {
			t.Errorf("Content-Type %q, body %q: Transcribe = %q, %v; want hello world", tc.ctype, tc.body, text, err)
		}
	}
}

// A body that never ends is cut off at the bound, not read to the
// deadline.
func TestOpenAIEndlessBody(t *testing.T) {
	o := endpoint(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"text": "`)
		chunk := strings.Repeat("la ", 1<<12)
		for r.Context().Err() == nil {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	})
	if _, err := o.Transcribe(t.Context(), audio(t), note); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("err = %v, want the bound", err)
	}
}

// command is the test binary run as a transcription command in mode.
func command(mode string, args ...string) *transcribe.Command {
	return &transcribe.Command{Argv: append([]string{os.Args[0], "-test.run=^$", "--", "stt-helper", mode}, args...)}
}

func TestCommandTranscribes(t *testing.T) {
	p := audio(t)
	text, err := command("echo", "{{FILE}}").Transcribe(t.Context(), p, note)
	if err != nil || text != "heard OggS fake opus" {
		t.Fatalf("Transcribe = %q, %v", text, err)
	}
}

// JSON lines with the text in "t" (pocketsphinx 5) are read for the text.
func TestCommandJSONLines(t *testing.T) {
	text, err := command("json").Transcribe(t.Context(), audio(t), note)
	if err != nil || text != "two three four" {
		t.Fatalf("Transcribe = %q, %v; want the t fields joined", text, err)
	}
}

func TestCommandFails(t *testing.T) {
	_, err := command("fail").Transcribe(t.Context(), audio(t), note)
	if err == nil || !strings.HasSuffix(err.Error(), "exit status 3: model not found") {
		t.Fatalf("err = %v; want the exit status and stderr's last line", err)
	}
}

func TestCommandOutputBounded(t *testing.T) {
	_, err := command("flood").Transcribe(t.Context(), audio(t), note)
	if err == nil || !strings.Contains(err.Error(), "answered more than 1048576 bytes") {
		t.Fatalf("err = %v; want the bound", err)
	}
}

// The command gets the infra environment, not the bridge's secrets.
func TestCommandGetsNoSecrets(t *testing.T) {
	t.Setenv("STT_TEST_SECRET", "xoxb-token")
	text, err := command("env").Transcribe(t.Context(), audio(t), note)
	if err != nil || text != `secret=""` {
		t.Fatalf("Transcribe = %q, %v; want the variable unset", text, err)
	}
}

// On the deadline the command's whole process group is killed: its child
// too.
func TestCommandTimeoutKillsTheGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		// The deadline comes once the child exists.
		for {
			if _, err := os.Stat(pidFile); err == nil {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	_, err := command("hang", pidFile).Transcribe(ctx, audio(t), note)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want the context's end", err)
	}
	b, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid <= 0 {
		t.Fatalf("no child pid in %q", b)
	}
	deadline := time.Now().Add(30 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the command's child %d outlived it", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

func TestCommandTimesOut(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	_, err := command("sleep").Transcribe(ctx, audio(t), note)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a deadline", err)
	}
}

// A command whose program is on no PATH is reported before any voice
// note meets it; one that is there is not.
func TestCommandUnstartable(t *testing.T) {
	if err := command("echo", "{{FILE}}").Unstartable(); err != nil {
		t.Errorf("the test binary: %v", err)
	}
	missing := &transcribe.Command{Argv: []string{"no-such-stt-program", "{{FILE}}"}}
	if err := missing.Unstartable(); err == nil || !strings.Contains(err.Error(), "no-such-stt-program cannot run") {
		t.Errorf("a missing program: %v", err)
	}
	noFFmpeg := &transcribe.Command{Argv: []string{os.Args[0], "{{WAV}}"}, Environ: []string{"PATH=" + t.TempDir()}}
	if err := noFFmpeg.Unstartable(); err == nil || !strings.Contains(err.Error(), "ffmpeg cannot run") {
		t.Errorf("{{WAV}} without ffmpeg: %v", err)
	}
}
