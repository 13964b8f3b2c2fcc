package engine

import (
	"context"
	"errors"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/pause"
)

// Bounds for one-off platform writes (notices, prompts, prompt outcomes),
// which have no presenter to retry them.
const (
	writeTries   = 4
	writeBackoff = time.Second
	writeMaxWait = 30 * time.Second
)

// retry runs a one-off platform write, waiting out rate limits (as long as
// the platform asks, up to writeMaxWait) and retrying other failures with
// backoff, writeTries times at most. ErrNotModified counts as success. It
// is where failed one-off writes are retried (the presenter retries
// replies): adapters pace calls to their budgets but hand a refusal back
// instead of retrying it, so no write is retried twice over.
func retry(ctx context.Context, write func() error) error {
	backoff := writeBackoff
	var err error
	for try := 1; ; try++ {
		err = write()
		if err == nil || errors.Is(err, core.ErrNotModified) {
			return nil
		}
		if try == writeTries || errors.Is(err, core.ErrNotFound) || errors.Is(err, core.ErrMessageTooLong) {
			return err
		}
		wait := backoff
		if ra, ok := core.RetryAfter(err); ok {
			wait = min(ra, writeMaxWait)
		} else {
			backoff *= 2
		}
		if pause.Sleep(ctx, wait) != nil {
			return err
		}
	}
}
