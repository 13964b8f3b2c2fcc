// Package transcribe holds the engines that turn a voice note into text
// (core.Transcriber): an OpenAI-compatible transcription endpoint (OpenAI,
// Groq, a whisper.cpp server) and a local command. Neither has a timeout
// of its own: the caller bounds each call with its context.
package transcribe

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxOutput bounds what an engine may answer (a response body, a command's
// stdout): ten minutes of speech is some 10 KB of text, so more is a
// broken or hostile engine, not a transcript.
const MaxOutput = 1 << 20

// errTooMuch is an answer past MaxOutput.
var errTooMuch = fmt.Errorf("answered more than %d bytes", MaxOutput)

// limitedBuffer keeps at most max bytes and notes more; full, when set,
// is called the first time more comes.
type limitedBuffer struct {
	b    []byte
	max  int
	over bool
	full func()
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - len(l.b); len(p) > room {
		l.b = append(l.b, p[:max(room, 0)]...)
		if !l.over && l.full != nil {
			l.full()
		}
		l.over = true
		return len(p), nil // keep the writer (a child's pipe) draining
	}
	l.b = append(l.b, p...)
	return len(p), nil
}

// oneLine makes s fit one line of an error: control characters go,
// whitespace runs become one space, and it ends after n runes.
func oneLine(s string, n int) string {
	s = strings.ToValidUTF8(s, "?")
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	if utf8.RuneCountInString(s) > n {
		s = string([]rune(s)[:n]) + "…"
	}
	return s
}

// ErrNoSpeech is an engine's empty transcript: it heard no words.
var ErrNoSpeech = errors.New("no speech was recognised")
