// Package lane runs jobs one at a time, in order, per key (a conversation),
// with a bounded queue per key (and, optionally, in all). An idle key costs
// nothing: its goroutine exits when its queue is empty and its entry is
// deleted.
package lane

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// ErrFull is returned by Enqueue when the key's queue is at its depth.
var ErrFull = errors.New("queue full")

// ErrClosed is returned by Enqueue after Close.
var ErrClosed = errors.New("lanes closed")

// Job is one unit of work. Run gets a context that is cancelled, with a
// cause, by Stop, CancelAll or the base context.
type Job struct {
	ID  string
	Run func(ctx context.Context)
}

// Running describes the job a lane is running.
type Running struct {
	ID      string
	Started time.Time
}

// Lanes serializes jobs per key. It is safe for concurrent use.
type Lanes[K comparable] struct {
	base  context.Context
	depth int
	total int // bound on queued jobs over all keys; 0 = none

	mu     sync.Mutex
	queued int // over all keys
	lanes  map[K]*lane
	closed bool
	wg     sync.WaitGroup
	idle   chan struct{} // closed when the last lane goes idle; nil while none is active
}

type lane struct {
	queue   []Job
	running Running
	cancel  context.CancelCauseFunc // of the running job; nil between jobs
}

// New returns Lanes whose jobs run under base, each key holding at most
// depth queued jobs besides the one running.
func New[K comparable](base context.Context, depth int) *Lanes[K] {
	return &Lanes[K]{base: base, depth: depth, lanes: map[K]*lane{}}
}

// Bounded is New with a bound on the jobs queued over all keys as well, so
// many busy keys together cannot grow the queues without limit.
func Bounded[K comparable](base context.Context, depth, total int) *Lanes[K] {
	l := New[K](base, depth)
	l.total = total
	return l
}

// Enqueue adds job to k's lane. It returns 0 when the job starts at once, or
// its 1-based position in the queue behind the running job.
func (l *Lanes[K]) Enqueue(k K, job Job) (position int, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, ErrClosed
	}
	if l.total > 0 && l.queued >= l.total {
		return 0, ErrFull
	}
	ln, active := l.lanes[k]
	if !active {
		ln = &lane{}
		l.lanes[k] = ln
		if l.idle == nil {
			l.idle = make(chan struct{})
		}
		ln.queue = append(ln.queue, job)
		l.queued++
		l.wg.Go(func() { l.drain(k, ln) })
		return 0, nil
	}
	if len(ln.queue) >= l.depth {
		return 0, ErrFull
	}
	ln.queue = append(ln.queue, job)
	l.queued++
	// A running job is not in the queue, so the new one is at len(queue);
	// until the lane's goroutine has taken the next job off the queue, that
	// job is still there and runs before this one.
	if ln.cancel == nil {
		return len(ln.queue) - 1, nil
	}
	return len(ln.queue), nil
}

func (l *Lanes[K]) drain(k K, ln *lane) {
	for {
		l.mu.Lock()
		if len(ln.queue) == 0 {
			delete(l.lanes, k)
			if len(l.lanes) == 0 && l.idle != nil {
				close(l.idle)
				l.idle = nil
			}
			l.mu.Unlock()
			return
		}
		job := ln.queue[0]
		ln.queue[0] = Job{} // let the closure be collected
		ln.queue = ln.queue[1:]
		l.queued--
		ctx, cancel := context.WithCancelCause(l.base)
		ln.cancel = cancel
		ln.running = Running{ID: job.ID, Started: time.Now()}
		l.mu.Unlock()

		job.Run(ctx)
		cancel(nil)

		l.mu.Lock()
		ln.cancel = nil
		ln.running = Running{}
		l.mu.Unlock()
	}
}

// Status reports k's running job (ok is false when none) and queue length.
func (l *Lanes[K]) Status(k K) (r Running, ok bool, queued int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ln := l.lanes[k]
	if ln == nil || ln.cancel == nil {
		if ln != nil {
			return Running{}, false, len(ln.queue)
		}
		return Running{}, false, 0
	}
	return ln.running, true, len(ln.queue)
}

// Stop cancels k's running job with cause and, if dropQueued, removes its
// queued jobs and returns them so the caller can tell their senders. It
// reports whether a job was running.
func (l *Lanes[K]) Stop(k K, cause error, dropQueued bool) (stopped bool, dropped []Job) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ln := l.lanes[k]
	if ln == nil {
		return false, nil
	}
	if dropQueued {
		dropped, ln.queue = ln.queue, nil
		l.queued -= len(dropped)
	}
	if ln.cancel != nil {
		ln.cancel(cause)
		stopped = true
	}
	return stopped, dropped
}

// Front moves k's queued job with id ahead of the others, behind only the
// leading jobs for which behind holds (nil: none), so it runs next or right
// after them; it reports whether the job was queued.
func (l *Lanes[K]) Front(k K, id string, behind func(Job) bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	ln := l.lanes[k]
	if ln == nil {
		return false
	}
	i := slices.IndexFunc(ln.queue, func(j Job) bool { return j.ID == id })
	if i < 0 {
		return false
	}
	at := 0
	for at < i && behind != nil && behind(ln.queue[at]) {
		at++
	}
	j := ln.queue[i]
	copy(ln.queue[at+1:i+1], ln.queue[at:i])
	ln.queue[at] = j
	return true
}

// Next returns the id of the job k runs next, if any is queued.
func (l *Lanes[K]) Next(k K) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ln := l.lanes[k]
	if ln == nil || len(ln.queue) == 0 {
		return "", false
	}
	return ln.queue[0].ID, true
}

// StopRunning cancels k's running job with cause when its id is id, and
// reports whether it did: a stop meant for one job never hits the next.
func (l *Lanes[K]) StopRunning(k K, id string, cause error) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	ln := l.lanes[k]
	if ln == nil || ln.cancel == nil || ln.running.ID != id {
		return false
	}
	ln.cancel(cause)
	return true
}

// TakeWhile removes and returns the jobs at the front of k's queue for
// which ok holds, up to the first for which it does not: the jobs that
// would run next, taken to be run together by the caller.
func (l *Lanes[K]) TakeWhile(k K, ok func(Job) bool) []Job {
	l.mu.Lock()
	defer l.mu.Unlock()
	ln := l.lanes[k]
	if ln == nil {
		return nil
	}
	n := 0
	for n < len(ln.queue) && ok(ln.queue[n]) {
		n++
	}
	taken := append([]Job(nil), ln.queue[:n]...)
	ln.queue = ln.queue[n:]
	l.queued -= n
	return taken
}

// Active reports how many keys have a running or queued job.
func (l *Lanes[K]) Active() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lanes)
}

// Close makes later Enqueue calls fail with ErrClosed; jobs already
// accepted still run.
func (l *Lanes[K]) Close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
}

// CancelAll cancels every running job with cause and drops every queued job,
// returning the dropped ones.
func (l *Lanes[K]) CancelAll(cause error) (dropped []Job) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ln := range l.lanes {
		dropped = append(dropped, ln.queue...)
		l.queued -= len(ln.queue)
		ln.queue = nil
		if ln.cancel != nil {
			ln.cancel(cause)
		}
	}
	return dropped
}

// Idle waits until no lane has work, or ctx ends (returning its error).
func (l *Lanes[K]) Idle(ctx context.Context) error {
	l.mu.Lock()
	ch := l.idle
	l.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Wait blocks until every lane goroutine has returned.
func (l *Lanes[K]) Wait() { l.wg.Wait() }
