package demo

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
	"unicode/utf8"
)

// Bounds on the memory file, so a long chat cannot grow it without limit.
const (
	maxHistory   = 50   // turns kept
	maxEntryText = 2000 // bytes kept of each side of a turn
	maxIDLen     = 64
	maxStateFile = 1 << 20
)

// stateVersion is written into every memory file so its shape can change.
const stateVersion = 1

// session is the demo agent's memory of one session, stored as
// <stateDir>/<ID>.json.
type session struct {
	Version int     `json:"version"`
	ID      string  `json:"id"`
	Name    string  `json:"name,omitempty"` // the user's name, once told
	Turns   int     `json:"turns"`          // turns answered, including ones dropped from History
	History []entry `json:"history"`
}

// entry is one remembered turn.
type entry struct {
	Turn  int       `json:"turn"`
	User  string    `json:"user"`
	Agent string    `json:"agent"`
	Time  time.Time `json:"time"`
}

// openSession loads the memory for id, or starts a new session. notes are
// short remarks for the thinking line (a refused id, unreadable memory).
// With stateDir empty it returns a stateless session without an id.
func openSession(stateDir, id string) (*session, []string) {
	s := &session{Version: stateVersion}
	if stateDir == "" {
		return s, nil
	}
	var notes []string
	switch {
	case id == "":
		s.ID = newID()
		notes = append(notes, "new session")
		return s, notes
	case !safeID(id):
		// Never a path from an unchecked id; start over under a fresh one.
		s.ID = newID()
		notes = append(notes, "the session id I was given is not one of mine, so this is a new session")
		return s, notes
	}
	s.ID = id
	loaded, err := load(stateDir, id)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		notes = append(notes, "I have no memory of this session yet")
	case err != nil:
		notes = append(notes, "my memory of this session is unreadable, so I start afresh")
	default:
		s = loaded
		s.ID = id
	}
	return s, notes
}

// load reads one memory file.
func load(stateDir, id string) (*session, error) {
	f, err := os.Open(filepath.Join(stateDir, id+".json"))
	if err != nil {
		return nil, fmt.Errorf("demo: load session: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxStateFile+1))
	if err != nil {
		return nil, fmt.Errorf("demo: load session: %w", err)
	}
	if len(b) > maxStateFile {
		return nil, fmt.Errorf("demo: load session: file over %d bytes", maxStateFile)
	}
	var s session
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("demo: load session: %w", err)
	}
	if s.Version != stateVersion {
		return nil, fmt.Errorf("demo: load session: version %d, want %d", s.Version, stateVersion)
	}
	return &s, nil
}

// record appends a turn to the history, keeping the last maxHistory.
func (s *session) record(user, agent string, at time.Time) {
	s.Turns++
	s.History = append(s.History, entry{
		Turn:  s.Turns,
		User:  truncate(user, maxEntryText),
		Agent: truncate(agent, maxEntryText),
		Time:  at.UTC(),
	})
	if n := len(s.History); n > maxHistory {
		s.History = append([]entry(nil), s.History[n-maxHistory:]...)
	}
}

// save writes the memory file atomically: a temporary file in the same
// directory, synced, then renamed over the old one, so a stopped agent never
// leaves half a file.
func (s *session) save(stateDir string) (err error) {
	if !safeID(s.ID) {
		return fmt.Errorf("demo: save session: unsafe id %q", s.ID)
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return fmt.Errorf("demo: save session: %w", err)
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("demo: save session: %w", err)
	}
	tmp, err := os.CreateTemp(stateDir, "."+s.ID+".*.tmp")
	if err != nil {
		return fmt.Errorf("demo: save session: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("demo: save session: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("demo: save session: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("demo: save session: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(stateDir, s.ID+".json")); err != nil {
		return fmt.Errorf("demo: save session: %w", err)
	}
	return nil
}

// newID mints a session id like demo-1a2b3c4d5e6f. The agent can resume
// with it because its memory is stored under it (P-SID-3).
func newID() string {
	var b [6]byte
	rand.Read(b[:]) // never fails (crypto/rand documents it)
	return "demo-" + hex.EncodeToString(b[:])
}

// safeID reports whether id is safe as a file name: 1..64 of [A-Za-z0-9_-].
func safeID(id string) bool {
	if id == "" || len(id) > maxIDLen {
		return false
	}
	for _, c := range []byte(id) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
