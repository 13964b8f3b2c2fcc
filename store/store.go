// Package store persists what agentbridge must remember across restarts —
// sessions, the active session of each conversation, seen message ids,
// permission grants, the journal of turns in flight and adapter cursors — in
// one bbolt file. Store implements core.Store.
//
// The file carries a schema marker ("agentbridge/1") in its meta bucket and
// every record is versioned JSON, so later versions can migrate both. Open
// refuses files that are locked by another process, not ours, damaged, or
// written by a newer version, with errors that wrap ErrLocked, ErrForeign,
// ErrCorrupt and ErrNewerSchema.
package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/agentbridge/agentbridge/core"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Errors Open returns, wrapped, for files it cannot use.
var (
	// ErrLocked: another process (or another Store in this one) holds the
	// file open.
	ErrLocked = errors.New("in use by another process")
	// ErrForeign: the file is not an agentbridge store (not bbolt, or a
	// bbolt file without our schema marker).
	ErrForeign = errors.New("not an agentbridge store")
	// ErrCorrupt: the file is an agentbridge store (or a bbolt file) that is
	// damaged or truncated. Methods return it too if damage shows up later.
	ErrCorrupt = errors.New("store file is corrupt")
	// ErrNewerSchema: a newer agentbridge wrote the file; this one would
	// misread it.
	ErrNewerSchema = errors.New("store schema is newer than this program")
)

// pruneEvery is how many MarkSeen calls pass between prunes of expired ids.
const pruneEvery = 1024

// defaultLockTimeout bounds the wait for the file lock.
const defaultLockTimeout = time.Second

// Options tune Open. The zero value is ready to use.
type Options struct {
	// LockTimeout is how long Open waits for another process to release
	// the file; 0 means one second. Open never waits forever.
	LockTimeout time.Duration
	// Now returns the current time; tests inject a clock to drive TTLs.
	// nil means time.Now.
	Now func() time.Time
	// Log receives notes about migrations, pruning and damage; nil
	// discards them.
	Log *slog.Logger
}

// Store is a core.Store kept in a bbolt file. It is safe for concurrent
// use: bbolt runs one writer at a time and readers alongside.
type Store struct {
	db         *bolt.DB
	path       string
	now        func() time.Time
	log        *slog.Logger
	pruneEvery uint64        // MarkSeen calls between prunes; a field so tests can shorten it
	marks      atomic.Uint64 // MarkSeen calls so far
	commits    *committer    // shared write transactions (batch)
}

var _ core.Store = (*Store)(nil)

// Open opens the store file at path, creating it (mode 0600) if it does not
// exist or is empty (an empty file is logged as a warning). It waits at most opts.LockTimeout for the file lock.
// On open it runs pending schema migrations, reads every page once to find
// damage early, and prunes expired seen ids, all in one transaction.
func Open(path string, opts Options) (*Store, error) {
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = defaultLockTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	empty, err := checkHeader(path)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	db, err := openBolt(path, opts.LockTimeout)
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("store %s is %w", path, ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	s := &Store{db: db, path: path, now: opts.Now, log: opts.Log, pruneEvery: pruneEvery}
	s.commits = &committer{db: db, corrupt: s.corrupted}
	if err := s.setup(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if empty {
		// Truncated by a full disk, a bad copy or a `> file`: whatever it
		// held (sessions, grants, cursors) is gone, and the operator should
		// hear of it rather than find the bridge quietly forgetful.
		s.log.Warn("store file was empty (0 bytes): starting with no sessions; restore it from a backup if it held any", "path", path)
	}
	return s, nil
}

// openBolt opens the bbolt file, turning bbolt's panics and faults on a
// damaged file into ErrCorrupt. checkHeader has already rejected what it
// can see cheaply; this catches the rest (for example a garbage freelist).
func openBolt(path string, timeout time.Duration) (db *bolt.DB, err error) {
	var file *os.File
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			// bbolt panicked before returning its DB and still holds the
			// file and its lock; release them. The mapping stays (bbolt
			// keeps its address private) until the process exits.
			if file != nil {
				_ = file.Close()
			}
			db, err = nil, fmt.Errorf("%w: %v", ErrCorrupt, r)
		}
	}()
	db, err = bolt.Open(path, 0o600, &bolt.Options{
		Timeout: timeout,
		OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
			f, err := os.OpenFile(name, flag, perm)
			file = f
			return f, err
		},
	})
	switch {
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrVersionMismatch):
		return nil, fmt.Errorf("%w: %w", ErrForeign, err)
	case errors.Is(err, berrors.ErrChecksum):
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return db, err
}

// setup migrates the schema, walks the file and prunes expired seen ids.
func (s *Store) setup() error {
	return s.update(context.Background(), "set up", func(tx *bolt.Tx) error {
		from, err := migrate(tx)
		if err != nil {
			return err
		}
		if from != schemaVersion() {
			s.log.Info("store schema migrated", "path", s.path, "from", from, "to", schemaVersion())
		}
		keys, err := walk(tx)
		if err != nil {
			return err
		}
		pruned, err := s.prune(tx)
		if err != nil {
			return err
		}
		s.log.Debug("store opened", "path", s.path, "keys", keys, "pruned", pruned)
		return nil
	})
}

// Close releases the file. Calls after Close fail; a second Close is a
// no-op.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close store %s: %w", s.path, err)
	}
	return nil
}

// view runs fn in a read transaction.
func (s *Store) view(ctx context.Context, op string, fn func(*bolt.Tx) error) error {
	return s.run(ctx, op, s.db.View, fn)
}

// update runs fn in a write transaction.
func (s *Store) update(ctx context.Context, op string, fn func(*bolt.Tx) error) error {
	return s.run(ctx, op, s.db.Update, fn)
}

// batch runs fn in a write transaction shared with concurrent callers
// (group commit), so many conversations pay for one fsync instead of one
// each. fn must be idempotent: it runs again alone if another fn in its
// group fails.
func (s *Store) batch(ctx context.Context, op string, fn func(*bolt.Tx) error) error {
	return s.run(ctx, op, s.commits.do, fn)
}

// run checks ctx, then runs fn in a transaction. bbolt reads the file
// through a memory mapping and trusts its pages: a damaged page makes it
// panic or fault. Faults become panics here, and panics become ErrCorrupt;
// bbolt rolls the transaction back as the panic passes.
func (s *Store) run(ctx context.Context, op string, tx func(func(*bolt.Tx) error) error, fn func(*bolt.Tx) error) (err error) {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store %s: %w", op, err)
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("store %s: %w", op, s.corrupted(r))
		}
	}()
	if err := tx(fn); err != nil {
		return fmt.Errorf("store %s: %w", op, err)
	}
	return nil
}

// corrupted logs a panic or fault met inside a transaction (bbolt trusts
// the file's pages, so damage surfaces that way) and returns the error
// callers get.
func (s *Store) corrupted(r any) error {
	s.log.Error("store file damaged", "path", s.path, "panic", r, "stack", string(debug.Stack()))
	return fmt.Errorf("%w: %v", ErrCorrupt, r)
}
