package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// clock is an injectable time source for TTL tests.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// openAt opens the store at path and closes it when the test ends.
func openAt(t testing.TB, path string, opts Options) *Store {
	t.Helper()
	s, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open(%q): %v", path, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func openTemp(t testing.TB, opts Options) *Store {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), "agentbridge.db"), opts)
}

// count returns the number of keys in bucket.
func count(t testing.TB, s *Store, bucket []byte) int {
	t.Helper()
	n := 0
	err := s.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bucket).Stats().KeyN
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

var (
	convA = core.ConversationKey{Platform: "slack", Workspace: "T1", Channel: "C1", Thread: "171.2"}
	convB = core.ConversationKey{Platform: "telegram", Channel: "-100"}
	t0    = time.Date(2026, 2, 3, 4, 5, 6, 7, time.UTC)
)

// fill writes one of everything and returns what the reads must return.
func fill(t *testing.T, s *Store) {
	t.Helper()
	ctx := t.Context()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.SetActiveSession(ctx, convA, "work"))
	must(s.PutSession(ctx, convA, core.Session{Name: "work", Agents: map[string]string{"claude": "ag-1"}, Profile: "claude", Turns: 3, UpdatedAt: t0}))
	must(s.PutSession(ctx, convA, core.Session{Name: "default", Profile: "claude"}))
	must(s.Grant(ctx, convA, "work", "alice", "Bash"))
	must(s.JournalPut(ctx, core.JournalEntry{TurnID: "t1", Conv: convA, MessageID: "m1", Reply: core.Shown{Ref: core.MessageRef{Conv: convA, ID: "r1"}}, StartedAt: t0}))
	must(s.SetCursor(ctx, "telegram/bot1", "4242"))
	if seen, err := s.MarkSeen(ctx, "slack", "m1", time.Hour); err != nil || seen {
		t.Fatalf("first MarkSeen = %v, %v; want false, nil", seen, err)
	}
}

// snapshot reads back what fill wrote.
type snapshot struct {
	Active     string
	Work       core.Session
	WorkOK     bool
	Sessions   []core.Session
	GrantBash  bool
	GrantOther bool
	Journal    []core.JournalEntry
	Cursor     string
	Seen       bool
}

func read(t *testing.T, s *Store) snapshot {
	t.Helper()
	ctx := t.Context()
	var snap snapshot
	var err error
	must := func(e error) {
		t.Helper()
		if e != nil {
			t.Fatal(e)
		}
	}
	snap.Active, err = s.ActiveSession(ctx, convA)
	must(err)
	snap.Work, snap.WorkOK, err = s.Session(ctx, convA, "work")
	must(err)
	snap.Sessions, err = s.Sessions(ctx, convA)
	must(err)
	snap.GrantBash, err = s.Granted(ctx, convA, "work", "alice", "Bash")
	must(err)
	snap.GrantOther, err = s.Granted(ctx, convA, "work", "alice", "Edit")
	must(err)
	snap.Journal, err = s.Journal(ctx)
	must(err)
	snap.Cursor, err = s.Cursor(ctx, "telegram/bot1")
	must(err)
	snap.Seen, err = s.MarkSeen(ctx, "slack", "m1", time.Hour)
	must(err)
	return snap
}

var wantSnapshot = snapshot{
	Active: "work",
	Work:   core.Session{Name: "work", Agents: map[string]string{"claude": "ag-1"}, Profile: "claude", Turns: 3, UpdatedAt: t0},
	WorkOK: true,
	Sessions: []core.Session{
		{Name: "default", Profile: "claude"},
		{Name: "work", Agents: map[string]string{"claude": "ag-1"}, Profile: "claude", Turns: 3, UpdatedAt: t0},
	},
	GrantBash: true,
	Journal:   []core.JournalEntry{{TurnID: "t1", Conv: convA, MessageID: "m1", Reply: core.Shown{Ref: core.MessageRef{Conv: convA, ID: "r1"}}, StartedAt: t0}},
	Cursor:    "4242",
	Seen:      true,
}

func TestRoundTrip(t *testing.T) {
	s := openTemp(t, Options{})
	fill(t, s)
	if diff := cmp.Diff(wantSnapshot, read(t, s)); diff != "" {
		t.Errorf("read back (-want +got):\n%s", diff)
	}
}

func TestSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentbridge.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path, Options{})
	if diff := cmp.Diff(wantSnapshot, read(t, s)); diff != "" {
		t.Errorf("after reopen (-want +got):\n%s", diff)
	}
}

func TestEmptyStoreReads(t *testing.T) {
	s := openTemp(t, Options{})
	ctx := t.Context()
	var got snapshot
	var err error
	if got.Active, err = s.ActiveSession(ctx, convA); err != nil {
		t.Fatal(err)
	}
	if got.Work, got.WorkOK, err = s.Session(ctx, convA, "work"); err != nil {
		t.Fatal(err)
	}
	if got.Sessions, err = s.Sessions(ctx, convA); err != nil {
		t.Fatal(err)
	}
	if got.GrantBash, err = s.Granted(ctx, convA, "work", "alice", "Bash"); err != nil {
		t.Fatal(err)
	}
	if got.Journal, err = s.Journal(ctx); err != nil {
		t.Fatal(err)
	}
	if got.Cursor, err = s.Cursor(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(snapshot{}, got); diff != "" {
		t.Errorf("empty store (-want +got):\n%s", diff)
	}
}

func TestSetActiveSessionOverwriteAndClear(t *testing.T) {
	s := openTemp(t, Options{})
	ctx := t.Context()
	var got []string
	for _, name := range []string{"a", "b", ""} {
		if err := s.SetActiveSession(ctx, convA, name); err != nil {
			t.Fatal(err)
		}
		n, err := s.ActiveSession(ctx, convA)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, n)
	}
	if diff := cmp.Diff([]string{"a", "b", ""}, got); diff != "" {
		t.Errorf("active after each set (-want +got):\n%s", diff)
	}
}

func TestSessionsOrderedByName(t *testing.T) {
	s := openTemp(t, Options{})
	ctx := t.Context()
	names := []string{"work", "b", "default", "B", "aa", "a", "ü", "a b"}
	for i, n := range names {
		if err := s.PutSession(ctx, convA, core.Session{Name: n, Turns: i}); err != nil {
			t.Fatal(err)
		}
	}
	// Sessions of neighbouring conversations must not leak in.
	other := convA
	other.Thread = "171.22"
	if err := s.PutSession(ctx, other, core.Session{Name: "zz"}); err != nil {
		t.Fatal(err)
	}
	parent := convA
	parent.Thread = ""
	if err := s.PutSession(ctx, parent, core.Session{Name: "0"}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Sessions(ctx, convA)
	if err != nil {
		t.Fatal(err)
	}
	var gotNames []string
	for _, g := range got {
		gotNames = append(gotNames, g.Name)
	}
	want := []string{"B", "a", "a b", "aa", "b", "default", "work", "ü"}
	if diff := cmp.Diff(want, gotNames); diff != "" {
		t.Errorf("session names (-want +got):\n%s", diff)
	}
}

func TestPutSessionReplaces(t *testing.T) {
	s := openTemp(t, Options{})
	ctx := t.Context()
	for turns := range 3 {
		if err := s.PutSession(ctx, convA, core.Session{Name: "default", Agents: map[string]string{"p": "x"}, Turns: turns}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Sessions(ctx, convA)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]core.Session{{Name: "default", Agents: map[string]string{"p": "x"}, Turns: 2}}, got); diff != "" {
		t.Errorf("sessions (-want +got):\n%s", diff)
	}
}

func TestResetSession(t *testing.T) {
	s := openTemp(t, Options{})
	ctx := t.Context()
	grants := []struct {
		conv          core.ConversationKey
		session, tool string
	}{
		{convA, "work", "Bash"},
		{convA, "work", "Edit"},
		{convA, "workx", "Bash"},   // session name with "work" as prefix
		{convA, "wor", "kBash"},    // same concatenation, other split
		{convA, "default", "Bash"}, // another session of the conversation
		{convB, "work", "Bash"},    // same session name elsewhere
	}
	for _, g := range grants {
		if err := s.Grant(ctx, g.conv, g.session, "alice", g.tool); err != nil {
			t.Fatal(err)
		}
	}
	before := core.Session{Name: "work", Agents: map[string]string{"p": "ag-1"}, Profile: "p", Turns: 7, UpdatedAt: t0}
	if err := s.PutSession(ctx, convA, before); err != nil {
		t.Fatal(err)
	}
	if err := s.PutSession(ctx, convB, before); err != nil {
		t.Fatal(err)
	}
	if err := s.ResetSession(ctx, convA, "work"); err != nil {
		t.Fatal(err)
	}

	var got []bool
	for _, g := range grants {
		ok, err := s.Granted(ctx, g.conv, g.session, "alice", g.tool)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ok)
	}
	if diff := cmp.Diff([]bool{false, false, true, true, true, true}, got); diff != "" {
		t.Errorf("grants after reset, in table order (-want +got):\n%s", diff)
	}
	wantA := before
	wantA.Agents = nil
	for _, c := range []struct {
		conv core.ConversationKey
		want core.Session
	}{{convA, wantA}, {convB, before}} {
		sess, ok, err := s.Session(ctx, c.conv, "work")
		if err != nil || !ok {
			t.Fatalf("Session(%v) = ok %v, err %v", c.conv, ok, err)
		}
		if diff := cmp.Diff(c.want, sess); diff != "" {
			t.Errorf("session of %v after reset (-want +got):\n%s", c.conv, diff)
		}
	}

	// Resetting a session that does not exist is not an error and does
	// not create it.
	if err := s.ResetSession(ctx, convA, "ghost"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Session(ctx, convA, "ghost"); ok {
		t.Error("ResetSession created a session")
	}
}

func TestKeyCollisions(t *testing.T) {
	s := openTemp(t, Options{})
	ctx := t.Context()
	// Each pair joins to the same text under a naive ":" or "" join.
	convs := []core.ConversationKey{
		{Platform: "a:b", Workspace: "c", Channel: "d"},
		{Platform: "a", Workspace: "b:c", Channel: "d"},
		{Platform: "ab", Workspace: "", Channel: "cd"},
		{Platform: "a", Workspace: "b", Channel: "cd"},
		{Platform: "a", Workspace: "b", Channel: "c", Thread: "d"},
		{Platform: "a", Workspace: "b", Channel: "c\x01d"},
		{Platform: "a", Workspace: "b", Channel: "c", Thread: ""},
	}
	for i, c := range convs {
		if err := s.SetActiveSession(ctx, c, fmt.Sprint("s", i)); err != nil {
			t.Fatal(err)
		}
		if err := s.PutSession(ctx, c, core.Session{Name: "n", Turns: i}); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range convs {
		name, err := s.ActiveSession(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprint("s", i); name != want {
			t.Errorf("ActiveSession(%#v) = %q, want %q", c, name, want)
		}
		got, err := s.Sessions(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]core.Session{{Name: "n", Turns: i}}, got); diff != "" {
			t.Errorf("Sessions(%#v) (-want +got):\n%s", c, diff)
		}
	}

	// Grants: (session "a:b", tool "c") vs (session "a", tool "b:c"), and
	// (user "u:v", tool "w") vs (user "u", tool "v:w").
	if err := s.Grant(ctx, convA, "a:b", "u:v", "w"); err != nil {
		t.Fatal(err)
	}
	for _, g := range [][3]string{{"a", "b:c", "u:v"}, {"a:b", "u", "v:w"}, {"a:b", "", "u:vw"}} {
		if ok, err := s.Granted(ctx, convA, g[0], g[1], g[2]); err != nil || ok {
			t.Errorf("Granted%q = %v, %v; want false", g, ok, err)
		}
	}
	if ok, err := s.Granted(ctx, convA, "a:b", "u:v", "w"); err != nil || !ok {
		t.Errorf("Granted(a:b, u:v, w) = %v, %v; want true", ok, err)
	}

	// Seen ids: platform "slack" id "1" vs platform "slack1" id "".
	if seen, _ := s.MarkSeen(ctx, "slack", "1", time.Hour); seen {
		t.Error("first MarkSeen(slack, 1) reported seen")
	}
	if seen, _ := s.MarkSeen(ctx, "slack1", "", time.Hour); seen {
		t.Error("MarkSeen(slack1, \"\") collided with (slack, 1)")
	}
}

func TestMarkSeenConcurrent(t *testing.T) {
	s := openTemp(t, Options{})
	ctx := t.Context()
	const workers = 32
	for _, id := range []string{"m1", "m2", "m3"} {
		start := make(chan struct{})
		var wg sync.WaitGroup
		results := make(chan bool, workers)
		for range workers {
			wg.Go(func() {
				<-start
				seen, err := s.MarkSeen(ctx, "discord", id, time.Hour)
				if err != nil {
					t.Error(err)
				}
				results <- seen
			})
		}
		close(start)
		wg.Wait()
		close(results)
		unseen := 0
		for seen := range results {
			if !seen {
				unseen++
			}
		}
		if unseen != 1 {
			t.Errorf("id %s: %d of %d calls reported unseen, want exactly 1", id, unseen, workers)
		}
	}
}

func TestMarkSeenTTL(t *testing.T) {
	clk := newClock()
	s := openTemp(t, Options{Now: clk.Now})
	ctx := t.Context()
	const ttl = 10 * time.Minute
	steps := []struct {
		advance time.Duration
		want    bool
	}{
		{0, false},                // first sight
		{ttl - time.Second, true}, // still within ttl
		{time.Second, false},      // exactly ttl old: expired, recorded anew
		{ttl / 2, true},           // within the new record's ttl
		{ttl, false},              // expired again
	}
	var got, want []bool
	for _, st := range steps {
		clk.Advance(st.advance)
		seen, err := s.MarkSeen(ctx, "slack", "m1", ttl)
		if err != nil {
			t.Fatal(err)
		}
		got, want = append(got, seen), append(want, st.want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("seen per step (-want +got):\n%s", diff)
	}
}

func TestMarkSeenPrunes(t *testing.T) {
	clk := newClock()
	path := filepath.Join(t.TempDir(), "agentbridge.db")
	s, err := Open(path, Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	s.pruneEvery = 10
	for i := range 25 {
		if _, err := s.MarkSeen(ctx, "slack", fmt.Sprint("old", i), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(t, s, bucketSeen); n != 25 {
		t.Fatalf("seen bucket holds %d ids before expiry, want 25", n)
	}
	clk.Advance(2 * time.Minute)
	// Calls 26..30: the 30th prunes the 25 old ids.
	for i := range 5 {
		if _, err := s.MarkSeen(ctx, "slack", fmt.Sprint("new", i), time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(t, s, bucketSeen); n != 5 {
		t.Errorf("seen bucket holds %d ids after prune, want 5", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Open prunes too.
	clk.Advance(2 * time.Hour)
	s = openAt(t, path, Options{Now: clk.Now})
	if n := count(t, s, bucketSeen); n != 0 {
		t.Errorf("seen bucket holds %d ids after reopen past ttl, want 0", n)
	}
}

func TestJournal(t *testing.T) {
	s := openTemp(t, Options{})
	ctx := t.Context()
	entry := func(id string, at time.Time) core.JournalEntry {
		return core.JournalEntry{TurnID: id, Conv: convB, MessageID: "m-" + id, StartedAt: at}
	}
	// Inserted out of order; "b" and "a" tie on time; "z" has the zero time.
	for _, e := range []core.JournalEntry{
		entry("c", t0.Add(time.Second)),
		entry("b", t0),
		entry("a", t0),
		entry("z", time.Time{}),
		entry("d", t0.Add(-time.Nanosecond)),
	} {
		if err := s.JournalPut(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	// Update "c": reply posted and start time moved; it must not duplicate.
	upd := entry("c", t0.Add(-time.Hour))
	upd.Reply = core.Shown{Ref: core.MessageRef{Conv: convB, ID: "r-c"}, Text: "half an answer", Plain: true}
	upd.Placeholder = true
	upd.Prompts = []core.Shown{{Ref: core.MessageRef{Conv: convB, ID: "p-1"}, Text: "Permission needed: Bash"}}
	upd.Agent = core.ProcessRef{PID: 4242, StartTicks: 123456, BootID: "b0"}
	// What a queued turn needs to run after a restart.
	upd.Message = &core.Message{Conv: convB, ID: "m-c", From: core.User{ID: "u1", Name: "Ann"}, Text: "hello", Addressed: true,
		Time: t0.Add(-2 * time.Hour), Attachments: []core.Attachment{{Kind: "image", Name: "a.png", MIME: "image/png", Size: 3, Source: "handle"}}}
	upd.Key = core.ConversationKey{Platform: convB.Platform, Channel: convB.Channel}
	upd.Notice = core.MessageRef{Conv: convB, ID: "n-c"}
	upd.Running = true
	upd.Remote = core.RemoteRef{Runtime: "kubectl", Name: "ab-slack-0123456789abcdef-00ff00ff00ff00ff", Namespace: "agents"}
	if err := s.JournalPut(ctx, upd); err != nil {
		t.Fatal(err)
	}
	if err := s.JournalDelete(ctx, "d"); err != nil {
		t.Fatal(err)
	}
	if err := s.JournalDelete(ctx, "never"); err != nil {
		t.Fatalf("JournalDelete of unknown turn: %v", err)
	}
	got, err := s.Journal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []core.JournalEntry{entry("z", time.Time{}), upd, entry("a", t0), entry("b", t0)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("journal (-want +got):\n%s", diff)
	}
}

// A retry is kept under its token, replaced by a later put (a press marks
// it used), and dropped once core.RetryKeep has passed: by Retry at once,
// from the file by the next RetryPut.
func TestRetries(t *testing.T) {
	clk := newClock()
	s := openTemp(t, Options{Now: clk.Now})
	ctx := t.Context()
	r := core.Retry{Message: core.Message{Conv: convA, ID: "m1", From: core.User{ID: "u1"}, Text: "again"},
		Key: convA, Notice: core.Shown{Ref: core.MessageRef{Conv: convA, ID: "n1"}, Text: "interrupted", Plain: true}, At: clk.Now()}
	if err := s.RetryPut(ctx, "tok1", r); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.Retry(ctx, "other"); ok || err != nil {
		t.Errorf("Retry(unknown) = %v, %v; want none", ok, err)
	}
	r.Used = true
	if err := s.RetryPut(ctx, "tok1", r); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.Retry(ctx, "tok1")
	if err != nil || !ok {
		t.Fatalf("Retry = %v, %v", ok, err)
	}
	if diff := cmp.Diff(r, got); diff != "" {
		t.Errorf("retry (-want +got):\n%s", diff)
	}
	clk.Advance(core.RetryKeep + time.Second)
	if _, ok, _ := s.Retry(ctx, "tok1"); ok {
		t.Error("a retry older than RetryKeep can still be pressed")
	}
	if err := s.RetryPut(ctx, "tok2", core.Retry{At: clk.Now()}); err != nil {
		t.Fatal(err)
	}
	if n := count(t, s, bucketRetries); n != 1 {
		t.Errorf("retries bucket holds %d records after a prune, want 1", n)
	}
}

func TestCursorOverwrite(t *testing.T) {
	s := openTemp(t, Options{})
	ctx := t.Context()
	for _, v := range []string{"1", "2", ""} {
		if err := s.SetCursor(ctx, "tg", v); err != nil {
			t.Fatal(err)
		}
		got, err := s.Cursor(ctx, "tg")
		if err != nil {
			t.Fatal(err)
		}
		if got != v {
			t.Errorf("Cursor after SetCursor(%q) = %q", v, got)
		}
	}
	if err := s.SetCursor(ctx, "", "x"); err == nil {
		t.Error("SetCursor with an empty name succeeded")
	}
}

func TestCanceledContext(t *testing.T) {
	s := openTemp(t, Options{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	calls := map[string]func() error{
		"ActiveSession":    func() error { _, err := s.ActiveSession(ctx, convA); return err },
		"SetActiveSession": func() error { return s.SetActiveSession(ctx, convA, "x") },
		"Session":          func() error { _, _, err := s.Session(ctx, convA, "x"); return err },
		"PutSession":       func() error { return s.PutSession(ctx, convA, core.Session{Name: "x"}) },
		"Sessions":         func() error { _, err := s.Sessions(ctx, convA); return err },
		"ResetSession":     func() error { return s.ResetSession(ctx, convA, "x") },
		"MarkSeen":         func() error { _, err := s.MarkSeen(ctx, "p", "m", time.Hour); return err },
		"Grant":            func() error { return s.Grant(ctx, convA, "x", "u", "t") },
		"Granted":          func() error { _, err := s.Granted(ctx, convA, "x", "u", "t"); return err },
		"JournalPut":       func() error { return s.JournalPut(ctx, core.JournalEntry{TurnID: "t"}) },
		"JournalDelete":    func() error { return s.JournalDelete(ctx, "t") },
		"Journal":          func() error { _, err := s.Journal(ctx); return err },
		"Cursor":           func() error { _, err := s.Cursor(ctx, "c"); return err },
		"SetCursor":        func() error { return s.SetCursor(ctx, "c", "v") },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with canceled ctx = %v, want context.Canceled", name, err)
		}
	}
	// Nothing was written.
	if diff := cmp.Diff(snapshot{}, func() snapshot {
		var snap snapshot
		snap.Active, _ = s.ActiveSession(t.Context(), convA)
		snap.Sessions, _ = s.Sessions(t.Context(), convA)
		snap.Journal, _ = s.Journal(t.Context())
		return snap
	}()); diff != "" {
		t.Errorf("canceled calls wrote (-want +got):\n%s", diff)
	}
}

func TestCloseTwiceAndUseAfterClose(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := s.SetCursor(t.Context(), "c", "v"); err == nil {
		t.Error("SetCursor after Close succeeded")
	}
}

func TestDamagedRecords(t *testing.T) {
	s := openTemp(t, Options{})
	ctx := t.Context()
	put := func(bucket, key, value []byte) {
		t.Helper()
		err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucket).Put(key, value) })
		if err != nil {
			t.Fatal(err)
		}
	}
	put(bucketSessions, sessionKey(convA, "garbage"), []byte("{not json"))
	put(bucketSessions, sessionKey(convA, "future"), []byte(`{"v":3,"name":"future"}`))
	for _, name := range []string{"garbage", "future"} {
		if _, _, err := s.Session(ctx, convA, name); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Session(%q) = %v, want ErrCorrupt", name, err)
		}
	}
	if _, err := s.Sessions(ctx, convA); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Sessions = %v, want ErrCorrupt", err)
	}

	// A damaged seen record is a cache entry: MarkSeen replaces it.
	put(bucketSeen, seenKey("slack", "m1"), []byte("?"))
	if seen, err := s.MarkSeen(ctx, "slack", "m1", time.Hour); err != nil || seen {
		t.Errorf("MarkSeen over damaged record = %v, %v; want false, nil", seen, err)
	}
	if seen, err := s.MarkSeen(ctx, "slack", "m1", time.Hour); err != nil || !seen {
		t.Errorf("MarkSeen after repair = %v, %v; want true, nil", seen, err)
	}
}

func TestSchemaMarkerWritten(t *testing.T) {
	s := openTemp(t, Options{})
	var marker string
	err := s.db.View(func(tx *bolt.Tx) error {
		marker = string(tx.Bucket(bucketMeta).Get(keySchema))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "agentbridge/6"; marker != want {
		t.Errorf("schema marker = %q, want %q", marker, want)
	}
	if !strings.HasPrefix(marker, schemaPrefix) {
		t.Errorf("marker %q lacks prefix %q", marker, schemaPrefix)
	}
}

// DeleteSession removes one session and its grants, and nothing of another
// session or conversation, even one whose name has it as a prefix.
func TestDeleteSession(t *testing.T) {
	s := openTemp(t, Options{})
	ctx := t.Context()
	for _, c := range []core.ConversationKey{convA, convB} {
		for _, name := range []string{"work", "workx"} {
			if err := s.PutSession(ctx, c, core.Session{Name: name, Turns: 1}); err != nil {
				t.Fatal(err)
			}
			if err := s.Grant(ctx, c, name, "alice", "Bash"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if found, err := s.DeleteSession(ctx, convA, "work"); err != nil || !found {
		t.Fatalf("DeleteSession = %v, %v; want found", found, err)
	}
	if found, err := s.DeleteSession(ctx, convA, "work"); err != nil || found {
		t.Fatalf("second DeleteSession = %v, %v; want not found", found, err)
	}
	list, err := s.Sessions(ctx, convA)
	if err != nil || len(list) != 1 || list[0].Name != "workx" {
		t.Fatalf("sessions of A = %+v, %v; want only workx", list, err)
	}
	for _, g := range []struct {
		conv core.ConversationKey
		name string
		want bool
	}{{convA, "work", false}, {convA, "workx", true}, {convB, "work", true}} {
		if ok, err := s.Granted(ctx, g.conv, g.name, "alice", "Bash"); err != nil || ok != g.want {
			t.Errorf("grant of %v %s = %v, %v; want %v", g.conv, g.name, ok, err, g.want)
		}
	}
	if _, ok, _ := s.Session(ctx, convB, "work"); !ok {
		t.Error("the other conversation's session was deleted")
	}
}

// Usage: a session's summed usage round-trips in its record; usage events
// come back oldest first from a time on, and events older than the window
// are dropped when a newer one is recorded.
func TestUsage(t *testing.T) {
	s := openTemp(t, Options{})
	ctx := t.Context()
	sess := core.Session{Name: "work", Turns: 2, Usage: core.Usage{Turns: 2, InputTokens: 30, OutputTokens: 7, CostUSD: 0.25}}
	if err := s.PutSession(ctx, convA, sess); err != nil {
		t.Fatal(err)
	}
	if got, _, err := s.Session(ctx, convA, "work"); err != nil || got.Usage != sess.Usage {
		t.Fatalf("session usage = %+v, %v; want %+v", got.Usage, err, sess.Usage)
	}
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	one := core.Usage{Turns: 1, InputTokens: 10, OutputTokens: 2, CostUSD: 0.5}
	for i, at := range []time.Duration{0, time.Hour, time.Hour, 2 * time.Hour} {
		ev := core.UsageEvent{At: base.Add(at), Platform: "telegram", User: fmt.Sprint("u", i), Profile: "claude", Usage: one}
		if err := s.RecordUsage(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.UsageSince(ctx, base.Add(time.Hour))
	if err != nil || len(got) != 3 || got[0].User != "u1" || got[1].User != "u2" || got[2].User != "u3" || got[0].Usage != one || got[0].Platform != "telegram" || got[0].Profile != "claude" {
		t.Fatalf("UsageSince = %+v, %v; want u1, u2, u3", got, err)
	}
	if !got[0].At.Equal(base.Add(time.Hour)) {
		t.Errorf("event time = %v, want %v", got[0].At, base.Add(time.Hour))
	}
	// Past the window the first three are dropped.
	if err := s.RecordUsage(ctx, core.UsageEvent{At: base.Add(core.UsageWindow + time.Hour + time.Minute), Platform: "slack", Usage: one}); err != nil {
		t.Fatal(err)
	}
	all, err := s.UsageSince(ctx, time.Time{})
	if err != nil || len(all) != 2 || all[0].User != "u3" || all[1].Platform != "slack" {
		t.Fatalf("after the window: %+v, %v; want u3 and the new one", all, err)
	}
}
