package transcribe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
)

// Placeholders in a Command's argv.
const (
	// FilePlaceholder is replaced by the voice note's path, the file as
	// the platform sent it (OGG/Opus, WebM, MP4, …).
	FilePlaceholder = "{{FILE}}"
	// WAVPlaceholder is replaced by the path of the note made 16 kHz mono
	// 16-bit WAV by ffmpeg first: what offline recognisers (pocketsphinx,
	// whisper.cpp) read.
	WAVPlaceholder = "{{WAV}}"
)

// Command is a local program that transcribes: Argv is run as is, no
// shell, with FilePlaceholder or WAVPlaceholder in any argument replaced by
// a path, and its stdout is the transcript (plain text, or JSON lines
// whose "text" or "t" holds it, as pocketsphinx 5 prints). It runs in a
// process group of its own, killed whole when the caller's context ends,
// and gets only the infra environment an agent gets (PATH, HOME, LANG, …):
// no bridge secret.
type Command struct {
	Argv []string
	// Environ is the environment it gets; nil is the infra set of the
	// bridge's (agentproc.InfraEnv).
	Environ []string
}

var _ core.Transcriber = (*Command)(nil)

// Transcribe implements core.Transcriber.
func (c *Command) Transcribe(ctx context.Context, path string, _ core.Attachment) (string, error) {
	if len(c.Argv) == 0 {
		return "", errors.New("no command")
	}
	env := c.Environ
	if env == nil {
		env = agentproc.InfraEnv(os.Environ())
	}
	wav := ""
	if slices.ContainsFunc(c.Argv, func(a string) bool { return strings.Contains(a, WAVPlaceholder) }) {
		dir, err := os.MkdirTemp("", "agentbridge-wav-")
		if err != nil {
			return "", fmt.Errorf("convert to WAV: %w", err)
		}
		defer os.RemoveAll(dir)
		wav = filepath.Join(dir, "note.wav")
		if _, err := run(ctx, []string{"ffmpeg", "-nostdin", "-loglevel", "error", "-i", path, "-ar", "16000", "-ac", "1", "-c:a", "pcm_s16le", "-f", "wav", wav}, env); err != nil {
			return "", fmt.Errorf("convert to WAV: %w", err)
		}
	}
	argv := make([]string, len(c.Argv))
	for i, a := range c.Argv {
		argv[i] = strings.NewReplacer(FilePlaceholder, path, WAVPlaceholder, wav).Replace(a)
	}
	out, err := run(ctx, argv, env)
	if err != nil {
		return "", err
	}
	return spoken(fromJSONLines(strings.ToValidUTF8(out, "?")))
}

// run runs argv in a process group of its own and returns its stdout,
// bounded by MaxOutput; the group is killed when ctx ends.
func run(ctx context.Context, argv []string, env []string) (string, error) {
	// A command that prints past MaxOutput is stopped at once, not at the
	// timeout.
	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	cmd := exec.CommandContext(runCtx, argv[0], argv[1:]...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// The whole group: a wrapper's children (ffmpeg, the recogniser)
		// go with it.
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	// A grandchild that escaped the group must not hold Wait forever on
	// its stdout.
	cmd.WaitDelay = 2 * time.Second
	stdout := &limitedBuffer{max: MaxOutput, full: func() { stop(errTooMuch) }}
	stderr := &limitedBuffer{max: 4 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	switch {
	case ctx.Err() != nil:
		return "", fmt.Errorf("command %s: %w", argv[0], context.Cause(ctx))
	case stdout.over:
		return "", fmt.Errorf("command %s %w", argv[0], errTooMuch)
	case err != nil:
		return "", fmt.Errorf("command %s: %w%s", argv[0], err, tail(stderr.b))
	}
	return string(stdout.b), nil
}

// fromJSONLines is out's text when every line of it is a JSON object with
// a "text" or "t" string (pocketsphinx 5's `single`, whisper.cpp's JSON),
// joined; otherwise out as it is.
func fromJSONLines(out string) string {
	var words []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var v struct {
			Text *string `json:"text"`
			T    *string `json:"t"`
		}
		switch line = strings.TrimSpace(line); {
		case line == "":
			continue
		case !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &v) != nil:
			return out
		case v.Text != nil:
			words = append(words, *v.Text)
		case v.T != nil:
			words = append(words, *v.T)
		default:
			return out
		}
	}
	if len(words) == 0 {
		return out
	}
	return strings.Join(words, " ")
}

// tail is ": " and the last line of a command's stderr, or "".
func tail(stderr []byte) string {
	lines := strings.Split(strings.TrimSpace(string(stderr)), "\n")
	last := oneLine(lines[len(lines)-1], 200)
	if last == "" {
		return ""
	}
	return ": " + last
}
