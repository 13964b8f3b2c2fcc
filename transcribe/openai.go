package transcribe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge/core"
)

// OpenAI is an OpenAI-compatible transcription endpoint: it POSTs the audio
// as multipart form data (file, model, language, response_format=json) to
// URL + "/audio/transcriptions" and reads {"text": …} — the shape of
// OpenAI's, Groq's and whisper.cpp's server.
type OpenAI struct {
	URL      string      // API base, e.g. https://api.openai.com/v1
	Model    string      // e.g. whisper-1
	Key      core.Secret // sent as a bearer token when set
	Language string      // ISO-639-1 hint, e.g. "en"; "" lets the engine guess
	// Client makes the request; nil is a client with no timeout of its own
	// (the caller's context bounds the call).
	Client *http.Client
}

var _ core.Transcriber = (*OpenAI)(nil)

// Transcribe implements core.Transcriber.
func (o *OpenAI) Transcribe(ctx context.Context, path string, a core.Attachment) (string, error) {
	form, ctype, err := o.form(path, a)
	if err != nil {
		return "", err
	}
	url := strings.TrimRight(o.URL, "/") + "/audio/transcriptions"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, form)
	if err != nil {
		return "", fmt.Errorf("transcription request: %w", err)
	}
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("Accept", "application/json")
	if !o.Key.IsZero() {
		req.Header.Set("Authorization", "Bearer "+o.Key.Reveal())
	}
	client := o.Client
	if client == nil {
		client = &http.Client{}
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", o.scrub(fmt.Errorf("transcription request: %w", err))
	}
	defer resp.Body.Close()
	// Bounded: a server that answers forever is cut off past MaxOutput.
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxOutput+1))
	if err != nil {
		return "", o.scrub(fmt.Errorf("transcription response: %w", err))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", o.scrub(fmt.Errorf("the endpoint answered HTTP %d%s", resp.StatusCode, errorText(body)))
	}
	if len(body) > MaxOutput {
		return "", fmt.Errorf("the endpoint %w", errTooMuch)
	}
	text, err := transcript(body, resp.Header.Get("Content-Type"))
	if err != nil {
		return "", o.scrub(err)
	}
	return text, nil
}

// form is the multipart body: the whole file in memory, so the request
// has a length (servers such as whisper.cpp's want one); callers bound the
// file's size before.
func (o *OpenAI) form(path string, a core.Attachment) (io.Reader, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", fmt.Errorf("open audio: %w", err)
	}
	defer f.Close()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	name := a.Name
	if name == "" {
		name = filepath.Base(path)
	}
	mime := a.MIME
	if mime == "" {
		mime = "application/octet-stream"
	}
	h := textproto.MIMEHeader{}
	// The file name's extension is how OpenAI tells the format apart.
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, filepath.Base(name)))
	h.Set("Content-Type", mime)
	part, err := w.CreatePart(h)
	if err == nil {
		_, err = io.Copy(part, f)
	}
	for _, kv := range [][2]string{{"model", o.Model}, {"language", o.Language}, {"response_format", "json"}} {
		if err == nil && kv[1] != "" {
			err = w.WriteField(kv[0], kv[1])
		}
	}
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		return nil, "", fmt.Errorf("build request: %w", err)
	}
	return &b, w.FormDataContentType(), nil
}

// transcript reads a successful answer by what it holds, not by what its
// Content-Type claims: {"text": …} as asked, or the plain text a server
// that ignores response_format sends. Markup (an HTML page from a proxy)
// and binary data are refused.
func transcript(body []byte, ctype string) (string, error) {
	trimmed := bytes.TrimSpace(body)
	var v struct {
		Text *string `json:"text"`
	}
	switch {
	case json.Unmarshal(trimmed, &v) == nil && v.Text != nil:
		return spoken(*v.Text)
	case len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '['):
		return "", fmt.Errorf("the endpoint answered JSON without a \"text\" string: %s", oneLine(string(trimmed), 120))
	case len(trimmed) == 0:
		return "", ErrNoSpeech
	case trimmed[0] == '<' || !utf8.Valid(trimmed) || bytes.ContainsFunc(trimmed, isBinary):
		return "", fmt.Errorf("the endpoint answered something that is not a transcript (Content-Type %q)", oneLine(ctype, 60))
	}
	return spoken(string(trimmed))
}

func isBinary(r rune) bool { return r < 0x20 && r != '\n' && r != '\r' && r != '\t' }

// spoken is a transcript as the turn's message: trimmed, and never empty.
func spoken(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", ErrNoSpeech
	}
	return s, nil
}

// errorText is ": " and the message of an error answer, one line: the
// "message" of OpenAI's {"error": {"message": …}}, a bare {"error": …} or
// {"message": …}, else the body's first characters.
func errorText(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	msg := ""
	if json.Unmarshal(body, &v) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &inner) == nil && inner.Message != "":
			msg = inner.Message
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			msg = s
		default:
			msg = v.Message
		}
	} else if utf8.Valid(body) && !bytes.HasPrefix(bytes.TrimSpace(body), []byte("<")) {
		msg = string(body)
	}
	if msg = oneLine(msg, 200); msg == "" {
		return ""
	}
	return ": " + msg
}

// scrub keeps the key out of an error, whatever a server echoed.
func (o *OpenAI) scrub(err error) error {
	if err == nil || o.Key.IsZero() || !strings.Contains(err.Error(), o.Key.Reveal()) {
		return err
	}
	s := scrubbed{msg: strings.ReplaceAll(err.Error(), o.Key.Reveal(), "REDACTED")}
	if errors.Is(err, context.DeadlineExceeded) {
		s.cause = context.DeadlineExceeded
	}
	return s
}

// scrubbed is an error whose text was cleaned. It unwraps to nothing that
// could show the key: only to a context deadline, for errors.Is.
type scrubbed struct {
	msg   string
	cause error
}

func (s scrubbed) Error() string { return s.msg }
func (s scrubbed) Unwrap() error { return s.cause }
