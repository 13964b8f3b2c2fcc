package store

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// heldCommitter returns s's committer with a first write in progress that
// waits for release, and a function that blocks until n more writes have
// joined the group behind it. While the first commits, the writes behind it
// collect into one group, deterministically.
func heldCommitter(t *testing.T, s *Store) (c *committer, waitQueued func(n int), release func(), first <-chan error) {
	t.Helper()
	c = s.commits
	entered, hold := make(chan struct{}), make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- c.do(func(tx *bolt.Tx) error {
			close(entered)
			<-hold
			return tx.Bucket(bucketMeta).Put([]byte("t-first"), []byte("1"))
		})
	}()
	<-entered
	waitQueued = func(n int) {
		for {
			c.mu.Lock()
			queued := 0
			if c.next != nil {
				queued = len(c.next.fns)
			}
			c.mu.Unlock()
			if queued == n {
				return
			}
			// Writers are goroutines about to take c.mu; let them.
			runtime.Gosched()
		}
	}
	return c, waitQueued, func() { close(hold) }, errc
}

func put(key string) func(*bolt.Tx) error {
	return func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put([]byte(key), []byte("v")) }
}

func has(t *testing.T, s *Store, key string) bool {
	t.Helper()
	var ok bool
	if err := s.db.View(func(tx *bolt.Tx) error {
		ok = tx.Bucket(bucketMeta).Get([]byte(key)) != nil
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return ok
}

// TestGroupCommitSharesOneTransaction: writes that arrive while a commit is
// in progress all commit together in the next transaction, once it ends.
func TestGroupCommitSharesOneTransaction(t *testing.T) {
	s := openTemp(t, Options{})
	c, waitQueued, release, first := heldCommitter(t, s)
	const n = 50
	var mu sync.Mutex
	txs := map[*bolt.Tx]int{}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			errs[i] = c.do(func(tx *bolt.Tx) error {
				mu.Lock()
				txs[tx]++
				mu.Unlock()
				return put(fmt.Sprintf("t-%d", i))(tx)
			})
		})
	}
	waitQueued(n)
	release()
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for i, err := range errs {
		if err != nil {
			t.Errorf("write %d: %v", i, err)
		}
		if !has(t, s, fmt.Sprintf("t-%d", i)) {
			t.Errorf("write %d is not in the file", i)
		}
	}
	if len(txs) != 1 {
		t.Errorf("%d writes queued behind a commit used %d transactions, want 1", n, len(txs))
	}
}

// TestGroupCommitIsolatesFailures: one failing write in a group gets its
// own error; the others are committed (re-run alone) and succeed.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	s := openTemp(t, Options{})
	c, waitQueued, release, first := heldCommitter(t, s)
	boom := errors.New("boom")
	fns := []func(*bolt.Tx) error{
		put("t-a"),
		func(tx *bolt.Tx) error { _ = put("t-b")(tx); return boom },
		put("t-c"),
	}
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		waitQueued(i) // in this order, so the failure is in the middle
		wg.Go(func() { errs[i] = c.do(fn) })
	}
	waitQueued(len(fns))
	release()
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if errs[0] != nil || errs[2] != nil || !errors.Is(errs[1], boom) {
		t.Fatalf("errors = %v; want nil, boom, nil", errs)
	}
	if !has(t, s, "t-a") || !has(t, s, "t-c") || has(t, s, "t-b") {
		t.Errorf("file has a=%v b=%v c=%v; want a and c only", has(t, s, "t-a"), has(t, s, "t-b"), has(t, s, "t-c"))
	}
}

// TestGroupCommitPanicIsAnErrorForItsCaller: a write that panics (what a
// damaged page does inside bbolt) returns ErrCorrupt to its caller; the
// others in its group still commit and nobody waits forever.
func TestGroupCommitPanicIsAnErrorForItsCaller(t *testing.T) {
	s := openTemp(t, Options{})
	c, waitQueued, release, first := heldCommitter(t, s)
	fns := []func(*bolt.Tx) error{put("t-a"), func(*bolt.Tx) error { panic("bad page") }}
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		waitQueued(i)
		wg.Go(func() { errs[i] = c.do(fn) })
	}
	waitQueued(len(fns))
	release()
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if errs[0] != nil || !errors.Is(errs[1], ErrCorrupt) {
		t.Fatalf("errors = %v; want nil, ErrCorrupt", errs)
	}
	if !has(t, s, "t-a") {
		t.Error("the healthy write was not committed")
	}
	// The committer is free again: a lone write goes through.
	if err := c.do(put("t-after")); err != nil || !has(t, s, "t-after") {
		t.Fatalf("write after the panic: %v", err)
	}
}
