package schedule

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/engine"
	"github.com/agentbridge/agentbridge/internal/cronexpr"
	"github.com/agentbridge/agentbridge/store"
)

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// Cron fields are wall-clock times of the entry's zone, across both clock
// changes: the skipped 02:30 runs at 03:30, the repeated 01:30 once.
func TestNextWallClock(t *testing.T) {
	ny := zone(t, "America/New_York")
	berlin := zone(t, "Europe/Berlin")
	tests := []struct {
		name string
		expr string
		loc  *time.Location
		from time.Time
		want []time.Time // successive runs, in UTC
	}{
		{"winter and summer in Berlin", "0 9 * * *", berlin, time.Date(2026, 3, 27, 12, 0, 0, 0, time.UTC), []time.Time{
			time.Date(2026, 3, 28, 8, 0, 0, 0, time.UTC), // CET, UTC+1
			time.Date(2026, 3, 29, 7, 0, 0, 0, time.UTC), // CEST from that night, UTC+2
			time.Date(2026, 3, 30, 7, 0, 0, 0, time.UTC),
		}},
		{"spring forward: the skipped 02:30 runs at 03:30", "30 2 * * *", ny, time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC), []time.Time{
			time.Date(2026, 3, 8, 7, 30, 0, 0, time.UTC), // 03:30 EDT
			time.Date(2026, 3, 9, 6, 30, 0, 0, time.UTC),
		}},
		{"after spring forward", "30 2 * * *", ny, time.Date(2026, 3, 8, 7, 31, 0, 0, time.UTC), []time.Time{
			time.Date(2026, 3, 9, 6, 30, 0, 0, time.UTC), // 02:30 EDT
		}},
		{"fall back repeats 01:30 once", "30 1 * * *", ny, time.Date(2026, 10, 31, 12, 0, 0, 0, time.UTC), []time.Time{
			time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC), // 01:30 EDT, the first
			time.Date(2026, 11, 2, 6, 30, 0, 0, time.UTC), // 01:30 EST the next day
		}},
		{"every quarter hour through the repeated hour", "*/30 1-2 * * *", ny, time.Date(2026, 11, 1, 4, 50, 0, 0, time.UTC), []time.Time{
			time.Date(2026, 11, 1, 5, 0, 0, 0, time.UTC),  // 01:00 EDT
			time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC), // 01:30 EDT
			time.Date(2026, 11, 1, 7, 0, 0, 0, time.UTC),  // 02:00 EST; 01:00 and 01:30 EST are not run again
		}},
		{"seconds field", "15 0 9 * * *", time.UTC, time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC), []time.Time{
			time.Date(2026, 1, 1, 9, 0, 15, 0, time.UTC),
			time.Date(2026, 1, 2, 9, 0, 15, 0, time.UTC),
		}},
		{"@every is real time", "@every 90m", ny, time.Date(2026, 11, 1, 4, 0, 0, 0, time.UTC), []time.Time{
			time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC),
			time.Date(2026, 11, 1, 7, 0, 0, 0, time.UTC),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sched, err := cronexpr.Parse(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			at := tc.from
			for i, want := range tc.want {
				at = next(sched, tc.loc, at)
				if !at.Equal(want) {
					t.Fatalf("run %d = %v (%v), want %v", i+1, at.UTC(), at.In(tc.loc), want)
				}
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	for _, expr := range []string{"", "* * * *", "61 * * * *", "0 9 * * mon-xyz", "CRON_TZ=UTC 0 9 * * *", "1 2 3 4 5 6 7"} {
		if _, err := cronexpr.Parse(expr); err == nil {
			t.Errorf("cronexpr.Parse(%q) succeeded; want an error", expr)
		}
	}
}

// recorder is the engine's part the scheduler uses: it notes each
// submission and when it came.
type recorder struct {
	mu   sync.Mutex
	runs []run
}

type run struct {
	at  time.Time
	sub engine.Submission
}

func (r *recorder) Submit(_ context.Context, s engine.Submission) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs = append(r.runs, run{time.Now(), s})
	return "turn", nil
}

func (r *recorder) take() []run {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.runs
	r.runs = nil
	return out
}

// bridge is one run of the scheduler over a store file, as serve runs it.
type bridge struct {
	st     *store.Store
	s      *Scheduler
	rec    *recorder
	cancel context.CancelFunc
	done   chan struct{}
}

func start(t *testing.T, path string, entries []Entry) *bridge {
	t.Helper()
	st, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := &bridge{st: st, s: New(entries, st, nil), rec: &recorder{}, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	go func() {
		defer close(b.done)
		b.s.Run(ctx, b.rec)
	}()
	synctest.Wait()
	return b
}

func (b *bridge) stop() {
	b.cancel()
	<-b.done
	b.st.Close()
}

// sleepUntil moves the bubble's clock to at and lets the scheduler act.
func sleepUntil(at time.Time) {
	time.Sleep(time.Until(at))
	synctest.Wait()
}

func wantRuns(t *testing.T, got []run, want ...time.Time) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d runs at %v; want %d at %v", len(got), got, len(want), want)
	}
	for i := range got {
		if !got[i].at.Equal(want[i]) {
			t.Errorf("run %d at %v, want %v", i+1, got[i].at.UTC(), want[i].UTC())
		}
	}
}

var conv = core.ConversationKey{Platform: "slack", Workspace: "T1", Channel: "C1"}

// The scheduler fires in its zone across a clock change, with the entry's
// conversation, message, profile and session.
func TestSchedulerFires(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	synctest.Test(t, func(t *testing.T) {
		sleepUntil(time.Date(2026, 3, 27, 12, 0, 0, 0, time.UTC))
		b := start(t, path, []Entry{{Name: "morning", Conv: conv, Cron: "0 9 * * *", Location: zone(t, "Europe/Berlin"),
			Message: "summarize CI", Profile: "demo", Session: "ci", CatchUp: time.Hour}})
		defer b.stop()
		sleepUntil(time.Date(2026, 3, 30, 12, 0, 0, 0, time.UTC))
		runs := b.rec.take()
		wantRuns(t, runs,
			time.Date(2026, 3, 28, 8, 0, 0, 0, time.UTC),
			time.Date(2026, 3, 29, 7, 0, 0, 0, time.UTC),
			time.Date(2026, 3, 30, 7, 0, 0, 0, time.UTC))
		got := runs[0].sub
		want := engine.Submission{Conv: conv, Text: "summarize CI", Profile: "demo", Session: "ci", Origin: engine.OriginSchedule, Name: "morning"}
		if got.Conv != want.Conv || got.Text != want.Text || got.Profile != want.Profile || got.Session != want.Session || got.Origin != want.Origin || got.Name != want.Name {
			t.Errorf("submission %+v, want %+v", got, want)
		}
		up := b.s.Upcoming(core.ConversationKey{Platform: "slack", Workspace: "T1", Channel: "C1", Thread: "123.456"})
		if len(up) != 1 || !up[0].Next.Equal(time.Date(2026, 3, 31, 7, 0, 0, 0, time.UTC)) || !up[0].Last.Equal(runs[2].at) || up[0].TimeZone != "Europe/Berlin" {
			t.Errorf("Upcoming = %+v; want morning next 2026-03-31 07:00 UTC, last %v", up, runs[2].at)
		}
		if other := b.s.Upcoming(core.ConversationKey{Platform: "slack", Workspace: "T1", Channel: "C2"}); len(other) != 0 {
			t.Errorf("Upcoming in another channel = %+v; want none", other)
		}
	})
}

// A run missed while the bridge was down is caught up once at start-up
// when it is within the window; an older one is skipped, recorded and
// shown, and neither runs twice across restarts.
func TestSchedulerMissedRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	entries := []Entry{{Name: "daily", Conv: conv, Cron: "0 9 * * *", Location: time.UTC, Message: "m", CatchUp: time.Hour}}
	synctest.Test(t, func(t *testing.T) {
		sleepUntil(time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC))
		b := start(t, path, entries)
		sleepUntil(time.Date(2026, 5, 1, 9, 0, 1, 0, time.UTC))
		wantRuns(t, b.rec.take(), time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC))
		b.stop()

		// Down over the 2nd's run; back 30 minutes later: one catch-up.
		sleepUntil(time.Date(2026, 5, 2, 9, 30, 0, 0, time.UTC))
		b = start(t, path, entries)
		wantRuns(t, b.rec.take(), time.Date(2026, 5, 2, 9, 30, 0, 0, time.UTC))
		b.stop()

		// A restart right after: the caught-up run is not run again.
		sleepUntil(time.Date(2026, 5, 2, 9, 40, 0, 0, time.UTC))
		b = start(t, path, entries)
		wantRuns(t, b.rec.take())
		b.stop()

		// Down over the 3rd's run; back three hours later: skipped.
		sleepUntil(time.Date(2026, 5, 3, 12, 0, 0, 0, time.UTC))
		b = start(t, path, entries)
		wantRuns(t, b.rec.take())
		up := b.s.Upcoming(conv)
		if len(up) != 1 || !up[0].Skipped.Equal(time.Date(2026, 5, 3, 9, 0, 0, 0, time.UTC)) {
			t.Errorf("Upcoming after a skip = %+v; want the 3rd's 09:00 skipped", up)
		}
		b.stop()

		// The skip is remembered, not caught up by a later start; the
		// next run happens as usual and clears it.
		sleepUntil(time.Date(2026, 5, 3, 12, 10, 0, 0, time.UTC))
		b = start(t, path, entries)
		if up := b.s.Upcoming(conv); len(up) != 1 || up[0].Skipped.IsZero() {
			t.Errorf("Upcoming after restart = %+v; want the skip still shown", up)
		}
		sleepUntil(time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC))
		wantRuns(t, b.rec.take(), time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC))
		if up := b.s.Upcoming(conv); len(up) != 1 || !up[0].Skipped.IsZero() {
			t.Errorf("Upcoming after a run = %+v; want no skip", up)
		}
		b.stop()

		// catch_up 0 never catches up.
		sleepUntil(time.Date(2026, 5, 5, 9, 1, 0, 0, time.UTC))
		b = start(t, path, []Entry{{Name: "daily", Conv: conv, Cron: "0 9 * * *", Location: time.UTC, Message: "m"}})
		wantRuns(t, b.rec.take())
		b.stop()
	})
}

// A new schedule is not "missed" before it existed; one added while the
// bridge was down counts from when it was first seen.
func TestSchedulerNewEntryNotCaughtUp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	synctest.Test(t, func(t *testing.T) {
		sleepUntil(time.Date(2026, 5, 1, 9, 30, 0, 0, time.UTC))
		b := start(t, path, []Entry{{Name: "daily", Conv: conv, Cron: "0 9 * * *", Location: time.UTC, Message: "m", CatchUp: 24 * time.Hour}})
		wantRuns(t, b.rec.take())
		b.stop()
	})
}

// A reload applies at once: a changed expression runs at its new time,
// a removed entry no longer runs, an added one does; none catches up.
func TestSchedulerReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	synctest.Test(t, func(t *testing.T) {
		sleepUntil(time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC))
		b := start(t, path, []Entry{
			{Name: "a", Conv: conv, Cron: "0 9 * * *", Location: time.UTC, Message: "a"},
			{Name: "b", Conv: conv, Cron: "0 10 * * *", Location: time.UTC, Message: "b"},
		})
		defer b.stop()
		b.s.Reload([]Entry{
			{Name: "a", Conv: conv, Cron: "30 8 * * *", Location: time.UTC, Message: "a2"},
			{Name: "c", Conv: conv, Cron: "0 11 * * *", Location: time.UTC, Message: "c"},
		})
		synctest.Wait()
		sleepUntil(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
		runs := b.rec.take()
		wantRuns(t, runs, time.Date(2026, 5, 1, 8, 30, 0, 0, time.UTC), time.Date(2026, 5, 1, 11, 0, 0, 0, time.UTC))
		if runs[0].sub.Text != "a2" || runs[1].sub.Name != "c" {
			t.Errorf("runs %+v; want a's new message, then c", runs)
		}
	})
}

// Any expression either fails to parse or yields runs that move forward
// in every zone, across clock changes.
func FuzzParseNext(f *testing.F) {
	for _, seed := range []string{"0 9 * * 1-5", "*/15 1-3 * * *", "30 2 * * *", "15 0 9 * * *", "@every 90m", "@yearly", "0 0 31 2 *", "61 * * * *"} {
		f.Add(seed)
	}
	zones := []string{"UTC", "America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Asia/Kolkata"}
	f.Fuzz(func(t *testing.T, expr string) {
		sched, err := cronexpr.Parse(expr)
		if err != nil {
			return
		}
		for _, z := range zones {
			loc := zone(t, z)
			at := time.Date(2026, 3, 7, 0, 0, 0, 0, time.UTC)
			for range 5 {
				n := next(sched, loc, at)
				if n.IsZero() {
					break
				}
				if !n.After(at) {
					t.Fatalf("%q in %s: next(%v) = %v, not after it", expr, z, at, n)
				}
				at = n
			}
		}
	})
}
