package engine

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// idleError is the cause of a turn stopped for silence.
type idleError struct{ after time.Duration }

func (e *idleError) Error() string { return fmt.Sprintf("no event from the agent for %s", e.after) }

// idleWatch stops a turn whose agent has been silent for d (Settings.
// IdleTimeout), except while one of its permission prompts waits for a
// person: the silence is then the person's, and the permission timeout
// bounds it. A zero d watches nothing; every method is then a no-op.
type idleWatch struct {
	d    time.Duration
	stop context.CancelCauseFunc

	mu      sync.Mutex
	timer   *time.Timer
	prompts int // permission prompts open
}

func watchIdle(d time.Duration, stop context.CancelCauseFunc) *idleWatch {
	w := &idleWatch{d: d, stop: stop}
	if d > 0 {
		w.mu.Lock()
		w.timer = time.AfterFunc(d, w.fire)
		w.mu.Unlock()
	}
	return w
}

func (w *idleWatch) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.prompts == 0 {
		w.stop(&idleError{after: w.d})
	} // else: re-armed when the prompt closes
}

// active notes an event from the agent. It runs for every partial, so a
// watch that watches nothing returns without locking.
func (w *idleWatch) active() {
	if w.d <= 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timer.Reset(w.d)
}

// prompt notes a permission prompt opening (open) or closing; the silence
// is counted again from its close.
func (w *idleWatch) prompt(open bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if open {
		w.prompts++
	} else {
		w.prompts--
	}
	if w.timer != nil {
		w.timer.Reset(w.d)
	}
}

// close stops watching.
func (w *idleWatch) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
	}
}
