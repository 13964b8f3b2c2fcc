package store

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// commitBehind runs fns through s's committer while a first write is in
// progress and holds it: fns join the next group one by one, in order, and
// only then is the first write released. So they share one group,
// deterministically. It returns each fn's error.
func commitBehind(t *testing.T, s *Store, fns ...func(*bolt.Tx) error) []error {
	t.Helper()
	c := s.commits
	entered, hold := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- c.do(func(tx *bolt.Tx) error {
			close(entered)
			<-hold
			return tx.Bucket(bucketMeta).Put([]byte("t-first"), []byte("1"))
		})
	}()
	<-entered
	queued := func(n int) {
		for {
			c.mu.Lock()
			k := 0
			if c.next != nil {
				k = len(c.next.fns)
			}
			c.mu.Unlock()
			if k == n {
				return
			}
			runtime.Gosched() // the writer is about to take c.mu
		}
	}
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		queued(i)
		wg.Go(func() { errs[i] = c.do(fn) })
	}
	queued(len(fns))
	close(hold)
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatalf("the held write: %v", err)
	}
	return errs
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
	const n = 50
	var mu sync.Mutex
	txs := map[*bolt.Tx]int{}
	fns := make([]func(*bolt.Tx) error, n)
	for i := range fns {
		fns[i] = func(tx *bolt.Tx) error {
			mu.Lock()
			txs[tx]++
			mu.Unlock()
			return put(fmt.Sprintf("t-%d", i))(tx)
		}
	}
	errs := commitBehind(t, s, fns...)
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
	boom := errors.New("boom")
	fns := []func(*bolt.Tx) error{
		put("t-a"),
		func(tx *bolt.Tx) error { _ = put("t-b")(tx); return boom },
		put("t-c"),
	}
	errs := commitBehind(t, s, fns...) // in this order: the failure is in the middle
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
	fns := []func(*bolt.Tx) error{put("t-a"), func(*bolt.Tx) error { panic("bad page") }}
	errs := commitBehind(t, s, fns...)
	if errs[0] != nil || !errors.Is(errs[1], ErrCorrupt) {
		t.Fatalf("errors = %v; want nil, ErrCorrupt", errs)
	}
	if !has(t, s, "t-a") {
		t.Error("the healthy write was not committed")
	}
	// The committer is free again: a lone write goes through.
	if err := s.commits.do(put("t-after")); err != nil || !has(t, s, "t-after") {
		t.Fatalf("write after the panic: %v", err)
	}
}
