// Package pause holds the waiting that retry and reconnect loops share: a
// sleep that ends early with its context, and jitter so that many bridges,
// or many conversations, do not retry in step.
package pause

import (
	"context"
	"math/rand/v2"
	"time"
)

// Sleep waits d, or until ctx ends; then it returns the context's cause.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Jitter spreads d uniformly over [0.75d, 1.25d].
func Jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return d*3/4 + rand.N(d/2+1)
}
