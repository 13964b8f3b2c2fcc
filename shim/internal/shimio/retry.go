package shimio

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// RetryEnv names the variable, in the CLI's environment, that bounds how
// long a shim lets its CLI retry a model API it cannot reach before it
// ends the turn with an error: whole seconds, 0 for no bound. Some CLIs
// have no retry knob of their own (codex's built-in provider waits "for
// network" forever; gemini retries ten times with up to 30 s between).
const RetryEnv = "AGENTBRIDGE_API_RETRY_SECS"

// DefaultRetryLimit is the bound when RetryEnv is unset or empty.
const DefaultRetryLimit = 45 * time.Second

// RetryLimit reads RetryEnv from environ; 0 means no bound. A value that
// is not a whole number of seconds gets the default.
func RetryLimit(environ []string) time.Duration {
	v := ""
	for _, kv := range environ {
		if s, ok := strings.CutPrefix(kv, RetryEnv+"="); ok {
			v = s
		}
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return DefaultRetryLimit
	}
	return time.Duration(n) * time.Second
}

// retryWatch ends a turn whose CLI is retrying and has heard nothing from
// its model API for longer than limit.
type retryWatch struct {
	em    *Emitter
	bin   string
	limit time.Duration
	stop  func()

	mu     sync.Mutex
	since  time.Time // the CLI's start or its last Progress
	timer  *time.Timer
	last   string // the latest retry message
	closed bool
}

// Retrying tells the shim that the CLI is retrying its model API (msg is
// what it said). Once the CLI has heard nothing from its API for the bound
// (RetryLimit) since it started or since its last Progress, and is
// retrying, the turn ends with an error and the CLI is stopped. Counting
// from the last progress, not the first retry, matters for an API that
// accepts and never answers: the first retry then comes only when the
// CLI's own request timeout runs out (gemini: 60 s).
func (p *Proc) Retrying(msg string) {
	if p == nil {
		return
	}
	w := &p.retry
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last = strings.TrimSpace(msg)
	if w.closed || w.limit <= 0 || w.timer != nil {
		return
	}
	w.timer = time.AfterFunc(max(w.limit-time.Since(w.since), 0), w.fire)
}

// Progress tells the shim that the CLI got something from its model API:
// the retry bound starts again at the next retry.
func (p *Proc) Progress() {
	if p == nil {
		return
	}
	w := &p.retry
	w.mu.Lock()
	defer w.mu.Unlock()
	w.since = time.Now()
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
}

func (w *retryWatch) fire() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	last := lastLines(w.last, 1, 300)
	w.mu.Unlock()
	if w.em.Ended() {
		return // the CLI got there after all
	}
	msg := fmt.Sprintf("%s could not reach its model API for %v", w.bin, w.limit)
	if last != "" {
		msg += " (" + last + ")"
	}
	msg += "; check the network and the API's URL on the bridge's host (" + RetryEnv + " sets this bound)"
	_ = w.em.Error(msg, nil)
	w.stop()
}

// done stops the watch once the CLI has exited.
func (w *retryWatch) done() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.timer != nil {
		w.timer.Stop()
	}
}

// lineWriter calls fn with each complete line written to it.
type lineWriter struct {
	fn  func(string)
	buf []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.fn(string(l.buf[:i]))
		l.buf = l.buf[i+1:]
	}
	if len(l.buf) > 64<<10 { // a line that never ends: drop what cannot be a retry message
		l.buf = l.buf[:0]
	}
	return len(p), nil
}

// withDefaults adds each KEY=VALUE of defaults whose KEY environ does not
// set to a non-empty value.
func withDefaults(environ, defaults []string) []string {
	if len(defaults) == 0 {
		return environ
	}
	set := map[string]bool{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && v != "" {
			set[k] = true
		}
	}
	out := append([]string(nil), environ...)
	for _, kv := range defaults {
		if k, _, _ := strings.Cut(kv, "="); !set[k] {
			out = append(out, kv)
		}
	}
	return out
}
