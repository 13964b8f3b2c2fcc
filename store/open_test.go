package store

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/core"
	bolt "go.etcd.io/bbolt"
)

func TestOpenLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentbridge.db")
	first, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// bbolt's flock is per open file, so a second Open in this process
	// contends exactly as another process would.
	const timeout = 200 * time.Millisecond
	start := time.Now()
	_, err = Open(path, Options{LockTimeout: timeout})
	waited := time.Since(start)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
	if want := fmt.Sprintf("store %s is in use by another process", path); err.Error() != want {
		t.Errorf("error text = %q, want %q", err, want)
	}
	// A hang guard, not a speed target: the wait must end near the timeout.
	if waited > timeout+10*time.Second {
		t.Errorf("second Open waited %v for a %v lock timeout", waited, timeout)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	openAt(t, path, Options{LockTimeout: timeout})
}

// makeStore creates a closed store at path holding n sessions, so that its
// bbolt tree spans many pages.
func makeStore(t *testing.T, path string, n int) {
	t.Helper()
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		for i := range n {
			sess := core.Session{Name: fmt.Sprintf("session-%05d", i), Agents: map[string]string{"p": strings.Repeat("x", 100)}}
			if err := putSession(tx, convA, sess); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// withBolt runs fn in a write transaction on a raw bbolt file at path.
func withBolt(t *testing.T, path string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// activeMeta returns the meta bbolt would use and the page size.
func activeMeta(t *testing.T, data []byte) (boltMeta, int64) {
	t.Helper()
	m0 := parseMeta(data)
	ps := int64(m0.pageSize)
	m1 := parseMeta(data[ps:])
	if m1.valid() && m1.txid > m0.txid {
		return m1, ps
	}
	return m0, ps
}

func editFile(t *testing.T, path string, fn func(data []byte) []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, fn(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func setSchema(marker string) func(tx *bolt.Tx) error {
	return func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		if marker == "" {
			return b.Delete(keySchema)
		}
		return b.Put(keySchema, []byte(marker))
	}
}

func TestOpenRejectsBadFiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	garbage := make([]byte, 64<<10)
	for i := range garbage {
		garbage[i] = byte(rng.Uint32())
	}
	write := func(data []byte) func(t *testing.T, path string) {
		return func(t *testing.T, path string) {
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, path string)
		want  error
	}{
		{"garbage", write(garbage), ErrForeign},
		{"short text", write([]byte("hello\n")), ErrForeign},
		{"sqlite", write(append([]byte("SQLite format 3\x00"), make([]byte, 8192)...)), ErrForeign},
		{"directory", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}, ErrForeign},
		{"bbolt, foreign buckets", func(t *testing.T, path string) {
			withBolt(t, path, func(tx *bolt.Tx) error {
				_, err := tx.CreateBucket([]byte("widgets"))
				return err
			})
		}, ErrForeign},
		{"bbolt, other app's marker", func(t *testing.T, path string) {
			withBolt(t, path, setSchema("otherapp/3"))
		}, ErrForeign},
		{"bbolt, meta bucket without marker", func(t *testing.T, path string) {
			withBolt(t, path, setSchema(""))
		}, ErrForeign},
		{"store, malformed marker", func(t *testing.T, path string) {
			makeStore(t, path, 0)
			withBolt(t, path, setSchema("agentbridge/01"))
		}, ErrForeign},
		{"store, newer schema", func(t *testing.T, path string) {
			makeStore(t, path, 0)
			withBolt(t, path, setSchema(schemaMarker(schemaVersion()+1)))
		}, ErrNewerSchema},
		{"store, bucket missing", func(t *testing.T, path string) {
			makeStore(t, path, 0)
			withBolt(t, path, func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketJournal) })
		}, ErrCorrupt},
		{"store truncated to 100 bytes", func(t *testing.T, path string) {
			makeStore(t, path, 0)
			if err := os.Truncate(path, 100); err != nil {
				t.Fatal(err)
			}
		}, ErrCorrupt},
		{"store truncated to one page", func(t *testing.T, path string) {
			makeStore(t, path, 0)
			if err := os.Truncate(path, int64(os.Getpagesize())); err != nil {
				t.Fatal(err)
			}
		}, ErrCorrupt},
		{"store truncated to half", func(t *testing.T, path string) {
			makeStore(t, path, 2000)
			editFile(t, path, func(data []byte) []byte {
				m, ps := activeMeta(t, data)
				return data[:int64(m.pgid)*ps/2]
			})
		}, ErrCorrupt},
		{"store missing its last page", func(t *testing.T, path string) {
			makeStore(t, path, 2000)
			editFile(t, path, func(data []byte) []byte {
				m, ps := activeMeta(t, data)
				return data[:int64(m.pgid-1)*ps]
			})
		}, ErrCorrupt},
		{"both meta pages damaged", func(t *testing.T, path string) {
			makeStore(t, path, 0)
			editFile(t, path, func(data []byte) []byte {
				ps := int(parseMeta(data).pageSize)
				data[pageHeaderSize+48] ^= 0xff // txid of meta 0
				data[ps+pageHeaderSize+48] ^= 0xff
				return data
			})
		}, ErrCorrupt},
		{"data pages overwritten", func(t *testing.T, path string) {
			makeStore(t, path, 2000)
			editFile(t, path, func(data []byte) []byte {
				m, ps := activeMeta(t, data)
				// Keep meta, root and freelist pages, which the header
				// check reads; everything bbolt reaches later is noise.
				for id := uint64(2); id < m.pgid; id++ {
					if id == m.root || id == m.freelist {
						continue
					}
					copy(data[int64(id)*ps:int64(id+1)*ps], garbage)
				}
				return data
			})
		}, ErrCorrupt},
		{"root page overwritten", func(t *testing.T, path string) {
			makeStore(t, path, 0)
			editFile(t, path, func(data []byte) []byte {
				m, ps := activeMeta(t, data)
				copy(data[int64(m.root)*ps:int64(m.root+1)*ps], garbage)
				return data
			})
		}, ErrCorrupt},
		{"freelist page overwritten", func(t *testing.T, path string) {
			makeStore(t, path, 0)
			editFile(t, path, func(data []byte) []byte {
				m, ps := activeMeta(t, data)
				copy(data[int64(m.freelist)*ps:int64(m.freelist+1)*ps], garbage)
				return data
			})
		}, ErrCorrupt},
		{"freelist page overwritten, type kept", func(t *testing.T, path string) {
			makeStore(t, path, 0)
			editFile(t, path, func(data []byte) []byte {
				m, ps := activeMeta(t, data)
				p := data[int64(m.freelist)*ps : int64(m.freelist+1)*ps]
				copy(p[pageHeaderSize:], garbage)
				// A count of 0xFFFF makes bbolt read the real count from
				// the first element, which is garbage: bbolt panics
				// inside bolt.Open, past the header check.
				p[10], p[11] = 0xff, 0xff
				return data
			})
		}, ErrCorrupt},
		{"bbolt magic, other format version", func(t *testing.T, path string) {
			makeStore(t, path, 0)
			editFile(t, path, func(data []byte) []byte {
				ps := int(parseMeta(data).pageSize)
				data[pageHeaderSize+4] = 9 // version of meta 0
				data[ps+pageHeaderSize+4] = 9
				return data
			})
		}, ErrForeign},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "agentbridge.db")
			tt.setup(t, path)
			before, _ := os.ReadFile(path)
			// Twice: a failed Open must release the file lock, or the
			// second attempt would report ErrLocked.
			for range 2 {
				s, err := Open(path, Options{LockTimeout: 100 * time.Millisecond})
				if err == nil {
					s.Close()
					t.Fatalf("Open succeeded, want %v", tt.want)
				}
				if !errors.Is(err, tt.want) {
					t.Fatalf("Open = %v, want %v", err, tt.want)
				}
				if !strings.Contains(err.Error(), path) {
					t.Errorf("error %q does not name the file", err)
				}
			}
			after, _ := os.ReadFile(path)
			if !bytes.Equal(before, after) {
				t.Error("a failed Open modified the file")
			}
		})
	}
}

func TestOpenAcceptsFilesWithoutData(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, path string)
		warns bool // a 0-byte file may be a store that lost its data: say so
	}{
		{"missing", func(*testing.T, string) {}, false},
		{"empty", func(t *testing.T, path string) {
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, true},
		// What a crash between bbolt's init and our first transaction
		// leaves behind.
		{"bbolt without buckets", func(t *testing.T, path string) {
			withBolt(t, path, func(*bolt.Tx) error { return nil })
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "agentbridge.db")
			tt.setup(t, path)
			var logs bytes.Buffer
			s := openAt(t, path, Options{Log: slog.New(slog.NewTextHandler(&logs, nil))})
			warned := strings.Contains(logs.String(), "level=WARN") && strings.Contains(logs.String(), "empty (0 bytes)") && strings.Contains(logs.String(), path)
			if warned != tt.warns {
				t.Errorf("warned about an empty file: %v, want %v; log:\n%s", warned, tt.warns, logs.String())
			}
			if err := s.SetCursor(t.Context(), "c", "v"); err != nil {
				t.Fatal(err)
			}
			if v, err := s.Cursor(t.Context(), "c"); err != nil || v != "v" {
				t.Errorf("Cursor = %q, %v; want \"v\"", v, err)
			}
		})
	}
}

func TestOpenWithOneMetaDamaged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentbridge.db")
	makeStore(t, path, 3)
	editFile(t, path, func(data []byte) []byte {
		m, ps := activeMeta(t, data)
		off := int64(m.txid%2)*ps + pageHeaderSize + 48
		data[off] ^= 0xff // the newest meta; bbolt falls back to the other
		return data
	})
	s := openAt(t, path, Options{})
	if _, err := s.Sessions(t.Context(), convA); err != nil {
		t.Errorf("Sessions after falling back to the older meta: %v", err)
	}
}

func TestOpenMissingDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "such", "dir", "agentbridge.db")
	if _, err := Open(path, Options{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open in a missing directory = %v, want ErrNotExist", err)
	}
}
