package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
)

// A turn's voice notes: each audio attachment is checked against the
// conversation's limits on what the platform said of it, before anything
// is downloaded; once downloaded it is transcribed, the sender sees what
// was heard, and the words become the agent's message (after any caption).
// The audio still goes to the agent. A note that is over a limit, or that
// the engine fails on, goes to the agent untranscribed, its sender told why
// in one line.

// Voice is how one conversation's voice notes are transcribed.
type Voice struct {
	// Transcriber turns speech into text; nil leaves audio untranscribed.
	Transcriber core.Transcriber
	// Timeout bounds each transcription; default DefaultTranscribeTimeout.
	Timeout time.Duration
	// MaxDuration and MaxBytes bound the voice notes transcribed; defaults
	// DefaultMaxVoiceDuration and DefaultMaxVoiceBytes.
	MaxDuration time.Duration
	MaxBytes    int64
}

// Voice defaults: OpenAI's endpoint takes up to 25 MiB.
const (
	DefaultTranscribeTimeout = 2 * time.Minute
	DefaultMaxVoiceDuration  = 10 * time.Minute
	DefaultMaxVoiceBytes     = 25 << 20
)

// voice returns conv's Voice with defaults.
func (s *Settings) voice(conv core.ConversationKey) Voice {
	var v Voice
	if s.Voice != nil {
		v = s.Voice(conv)
	}
	if v.Timeout <= 0 {
		v.Timeout = DefaultTranscribeTimeout
	}
	if v.MaxDuration <= 0 {
		v.MaxDuration = DefaultMaxVoiceDuration
	}
	if v.MaxBytes <= 0 {
		v.MaxBytes = DefaultMaxVoiceBytes
	}
	return v
}

// textNotHeard starts the line that tells why a voice note went to the
// agent untranscribed.
const textNotHeard = "🎤 Could not transcribe the voice note: "

// maxQuote bounds the transcript quoted back to the sender; the agent
// gets all of it.
const maxQuote = 1500

// voiceNotes returns the indexes of the message's audio attachments to
// transcribe, telling the sender about each one over a limit.
func (r *turnRun) voiceNotes(ctx context.Context, v Voice) []int {
	if v.Transcriber == nil {
		return nil
	}
	var out []int
	for i, a := range r.t.msg.Attachments {
		if a.Kind != "audio" {
			continue
		}
		switch {
		case a.Duration > v.MaxDuration:
			r.notHeard(ctx, "too_long", 0, fmt.Errorf("it lasts %s, over the %s limit", minutes(a.Duration), minutes(v.MaxDuration)))
		case a.Size > v.MaxBytes:
			r.notHeard(ctx, "too_big", 0, fmt.Errorf("it is %s, over the %s limit", size(a.Size), agentproc.Size(int(v.MaxBytes))))
		default:
			out = append(out, i)
		}
	}
	return out
}

// hear transcribes the voice notes (indexes into the message's
// attachments, downloaded to paths) and returns the agent's message: the
// message's text, then each transcript.
func (r *turnRun) hear(ctx context.Context, v Voice, notes []int, paths []string) string {
	if len(notes) == 0 {
		return r.t.msg.Text
	}
	r.setTranscribing(true)
	defer r.setTranscribing(false)
	stop := r.typingWhile(ctx)
	defer stop()
	var parts []string
	if text := strings.TrimSpace(r.t.msg.Text); text != "" {
		parts = append(parts, text)
	}
	for _, i := range notes {
		if text, ok := r.transcribe(ctx, v, r.t.msg.Attachments[i], paths[i]); ok {
			parts = append(parts, text)
		}
	}
	return strings.Join(parts, "\n\n")
}

// transcribe hears one downloaded voice note, saying what was heard or why
// nothing was.
func (r *turnRun) transcribe(ctx context.Context, v Voice, a core.Attachment, path string) (string, bool) {
	if path == "" {
		r.notHeard(ctx, "failed", 0, errors.New("it could not be downloaded"))
		return "", false
	}
	if st, err := os.Stat(path); err == nil && st.Size() > v.MaxBytes {
		// The platform did not say its size.
		r.notHeard(ctx, "too_big", 0, fmt.Errorf("it is %s, over the %s limit", size(st.Size()), agentproc.Size(int(v.MaxBytes))))
		return "", false
	}
	r.log.InfoContext(ctx, "transcribing a voice note", "attachment", a.Name, "mime", a.MIME, "duration", a.Duration, "timeout", v.Timeout)
	tctx, cancel := context.WithTimeout(ctx, v.Timeout)
	start := time.Now()
	text, err := v.Transcriber.Transcribe(tctx, path, a)
	took := time.Since(start)
	cancel()
	switch {
	case ctx.Err() != nil:
		// Stopped with its turn: the stop has its own word.
		r.log.InfoContext(ctx, "transcription stopped with its turn", "took", took)
		return "", false
	case errors.Is(err, context.DeadlineExceeded):
		r.notHeard(ctx, "timeout", took, fmt.Errorf("the transcription engine took longer than %s", minutes(v.Timeout)))
		return "", false
	case err != nil:
		r.notHeard(ctx, "failed", took, err)
		return "", false
	}
	e, t := r.e, r.t
	e.opts.Observer.Transcribed(t.plat.Name(), "ok", took)
	r.log.InfoContext(ctx, "voice note transcribed", "attachment", a.Name, "took", took, "chars", utf8.RuneCountInString(text))
	r.log.DebugContext(ctx, "transcript", "text", text)
	e.say(ctx, t.plat, t.msg, "🎤 “"+quote(text)+"”")
	return text, true
}

// notHeard counts a voice note that goes to the agent untranscribed and
// tells its sender why, in one line.
func (r *turnRun) notHeard(ctx context.Context, result string, took time.Duration, why error) {
	e, t := r.e, r.t
	e.opts.Observer.Transcribed(t.plat.Name(), result, took)
	r.log.WarnContext(ctx, "voice note not transcribed; the audio goes to the agent as it is", "result", result, "took", took, "err", why)
	e.say(ctx, t.plat, t.msg, textNotHeard+oneLine(why.Error())+".")
}

func (r *turnRun) setTranscribing(on bool) {
	r.t.mu.Lock()
	r.t.transcribing = on
	r.t.mu.Unlock()
}

// typingWhile shows the typing indicator until the returned stop is
// called: a transcription can take a while, and the reply has not started.
func (r *turnRun) typingWhile(ctx context.Context) (stop func()) {
	ty, ok := r.t.plat.(core.Typer)
	if !ok {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { r.e.typing(ctx, ty, r.t.msg.Conv, done) })
	return func() {
		close(done)
		wg.Wait()
	}
}

// quote is text shortened for the notice that shows what was heard.
func quote(text string) string {
	text = strings.Join(strings.Fields(text), " ")
	if utf8.RuneCountInString(text) > maxQuote {
		text = string([]rune(text)[:maxQuote]) + "…"
	}
	return text
}

// oneLine keeps an engine's error to one line of a notice.
func oneLine(s string) string {
	s = strings.TrimSuffix(strings.Join(strings.Fields(s), " "), ".")
	if utf8.RuneCountInString(s) > 300 {
		s = string([]rune(s)[:300]) + "…"
	}
	return s
}

// minutes writes d the way people say it: "10m", "1m30s", "45s".
func minutes(d time.Duration) string {
	if d < time.Second {
		return d.String()
	}
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// size writes n bytes in MiB, or KiB below one.
func size(n int64) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", (n+1023)>>10)
}
