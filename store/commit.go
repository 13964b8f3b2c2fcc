package store

import (
	"errors"
	"runtime/debug"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// committer runs write functions in shared transactions by group commit: a
// call that finds no transaction in progress starts one at once, and calls
// that arrive while one runs share the next. A lone write pays for one
// commit and no waiting; under load one commit (two fsyncs) serves every
// write that arrived during the previous one. bbolt's own Batch instead
// holds every write for a fixed delay, which a lone turn pays in full.
type committer struct {
	db *bolt.DB
	// corrupt turns a panic in a transaction into an error (damaged file).
	corrupt func(r any) error

	mu      sync.Mutex
	running bool   // a group is being committed
	next    *group // the group collecting writes, if any
}

// group is one shared transaction's worth of writes.
type group struct {
	fns   []func(*bolt.Tx) error
	errs  []error
	start chan struct{} // closed when the group may run
	done  chan struct{} // closed when errs is final
}

// fnError is a function's own error inside a shared transaction, told
// apart from the commit's.
type fnError struct{ err error }

func (f *fnError) Error() string { return f.err.Error() }

// do runs fn in a write transaction shared with concurrent callers and
// returns fn's error or the commit's. fn must be idempotent: if another
// function in its group fails, the transaction is rolled back and each
// function runs again in a transaction of its own.
func (c *committer) do(fn func(*bolt.Tx) error) error {
	c.mu.Lock()
	g := c.next
	if g == nil {
		g = &group{start: make(chan struct{}), done: make(chan struct{})}
		c.next = g
		if !c.running {
			c.running = true
			close(g.start)
		}
	}
	i := len(g.fns)
	g.fns = append(g.fns, fn)
	c.mu.Unlock()

	if i > 0 { // the group's first caller commits it
		<-g.done
		return g.errs[i]
	}
	<-g.start
	c.mu.Lock()
	c.next = nil // later callers form the next group
	c.mu.Unlock()
	c.commit(g)
	c.mu.Lock()
	if n := c.next; n != nil {
		close(n.start) // its first caller commits it
	} else {
		c.running = false
	}
	c.mu.Unlock()
	return g.errs[0]
}

// commit runs g's functions in one transaction, or one transaction each
// when the shared one fails, and always closes g.done.
func (c *committer) commit(g *group) {
	defer close(g.done)
	g.errs = make([]error, len(g.fns))
	err := c.safely(func(tx *bolt.Tx) error {
		for _, fn := range g.fns {
			if err := fn(tx); err != nil {
				return &fnError{err}
			}
		}
		return nil
	})
	var f *fnError
	switch {
	case err == nil:
	case len(g.fns) == 1 && errors.As(err, &f):
		g.errs[0] = f.err
	case len(g.fns) == 1:
		g.errs[0] = err
	default:
		for i, fn := range g.fns {
			g.errs[i] = c.safely(fn)
		}
	}
}

// safely runs fn in a write transaction; a panic or memory fault (a damaged
// file) becomes an error, so no caller waiting on the group hangs.
func (c *committer) safely(fn func(*bolt.Tx) error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = c.corrupt(r)
		}
	}()
	return c.db.Update(fn)
}
