// This file: spec/protocol.md, "stdout: events" (Size, D-LINE-1) — reading
// the agent's stdout line by line with bounded memory.

package agentproc

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"

	"github.com/agentbridge/agentbridge/internal/lines"
)

// MaxLineBytes is the longest stdout line accepted, without its newline
// (D-LINE-1). A longer line is skipped with a warning.
const MaxLineBytes = 8 << 20

// read reads stdout line by line with bounded memory (package lines): a
// line longer than MaxLineBytes is skipped, not buffered (D-LINE-1).
func (a *assembler) read(rd io.Reader) {
	tooLong := func(n int) {
		a.log.LogAttrs(context.Background(), slog.LevelWarn, "stdout line too long; skipped", slog.String("rule", "D-LINE-1"),
			slog.Int("bytes", n), slog.Int("max", MaxLineBytes))
	}
	// The handler never fails, so the reading ends with a read error;
	// io.EOF is the normal one.
	err := lines.Read(rd, MaxLineBytes, func(l []byte) error { a.handle(l); return nil }, tooLong)
	if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, os.ErrClosed) {
		a.log.LogAttrs(context.Background(), slog.LevelWarn, "reading agent stdout failed", slog.Any("err", err))
	}
}
