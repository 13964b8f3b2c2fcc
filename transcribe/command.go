package transcribe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
)

// FilePlaceholder in a Command's argv is replaced by the audio file's path.
const FilePlaceholder = "{{FILE}}"

// Command is a local program that transcribes: Argv is run as is, no
// shell, with FilePlaceholder in any argument replaced by the audio file's
// path, and its stdout is the transcript. It runs in a process group of
// its own, killed whole when the caller's context ends, and gets only the
// infra environment an agent gets (PATH, HOME, LANG, …): no bridge secret.
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
	argv := make([]string, len(c.Argv))
	for i, a := range c.Argv {
		argv[i] = strings.ReplaceAll(a, FilePlaceholder, path)
	}
	// A command that prints past MaxOutput is stopped at once, not at the
	// timeout.
	run, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	cmd := exec.CommandContext(run, argv[0], argv[1:]...)
	cmd.Env = c.Environ
	if cmd.Env == nil {
		cmd.Env = agentproc.InfraEnv(os.Environ())
	}
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
	return spoken(strings.ToValidUTF8(string(stdout.b), "?"))
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
