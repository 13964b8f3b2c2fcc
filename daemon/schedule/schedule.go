// Package schedule runs the config's scheduled turns: at each entry's cron
// times, in its time zone, it submits the entry's message to the engine as
// an ordinary turn in the entry's conversation. A run missed while the
// bridge was down is caught up once at start-up when it is recent (within
// the entry's catch-up window), and otherwise skipped, logged and shown by
// /schedules; each entry's last run lives in the store, so no run happens
// twice.
package schedule

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/engine"
	"github.com/agentbridge/agentbridge/internal/cronexpr"
)

// Entry is one scheduled turn.
type Entry struct {
	Name     string
	Conv     core.ConversationKey
	Cron     string
	Location *time.Location // nil means UTC
	Message  string
	Profile  string // "" uses the conversation's route
	Session  string // "" uses the conversation's active session
	// CatchUp is how old a missed run may be and still run once at
	// start-up; 0 never catches up.
	CatchUp time.Duration
}

// State keeps each schedule's last run (or the moment it was first seen)
// and the latest run it skipped; *store.Store implements it.
type State interface {
	ScheduleRun(ctx context.Context, name string) (last, skipped time.Time, ok bool, err error)
	SetScheduleRun(ctx context.Context, name string, last, skipped time.Time) error
}

// Submitter starts turns; *engine.Engine implements it.
type Submitter interface {
	Submit(ctx context.Context, s engine.Submission) (string, error)
}

// Scheduler fires entries. It implements engine.Schedules for /schedules.
type Scheduler struct {
	state State
	log   *slog.Logger

	mu      sync.Mutex
	entries []*entry
	wake    chan struct{} // a reload happened
}

type entry struct {
	Entry
	sched   cron.Schedule
	next    time.Time
	last    time.Time
	skipped time.Time
	loaded  bool   // last and skipped read from the state
	result  string // how the last run this process fired ended; "" while it runs or before one
}

// New returns a scheduler of entries, which must have been validated
// (config does): an entry whose expression does not parse is left out and
// logged.
func New(entries []Entry, state State, log *slog.Logger) *Scheduler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Scheduler{state: state, log: log, wake: make(chan struct{}, 1)}
	s.entries = s.build(entries, nil)
	return s
}

// build makes the entries, keeping what old knew of those of the same
// name (their run times).
func (s *Scheduler) build(entries []Entry, old []*entry) []*entry {
	var out []*entry
	for _, en := range entries {
		sched, err := cronexpr.Parse(en.Cron)
		if err != nil {
			s.log.Error("schedule left out", "schedule", en.Name, "err", err)
			continue
		}
		if en.Location == nil {
			en.Location = time.UTC
		}
		e := &entry{Entry: en, sched: sched}
		if i := slices.IndexFunc(old, func(o *entry) bool { return o.Name == en.Name }); i >= 0 {
			e.last, e.skipped, e.loaded, e.result = old[i].last, old[i].skipped, old[i].loaded, old[i].result
		}
		out = append(out, e)
	}
	return out
}

// Reload replaces the entries (a SIGHUP). An entry that keeps its name
// keeps its last run; each entry's next run is reckoned from now. A
// reload never catches up: that happens only at start-up.
func (s *Scheduler) Reload(entries []Entry) {
	s.mu.Lock()
	s.entries = s.build(entries, s.entries)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Upcoming implements engine.Schedules: the entries that post in conv's
// channel (an entry without a workspace matches any), soonest first.
func (s *Scheduler) Upcoming(conv core.ConversationKey) []engine.Upcoming {
	return s.list(func(c core.ConversationKey) bool {
		return c.Platform == conv.Platform && c.Channel == conv.Channel && (c.Workspace == "" || c.Workspace == conv.Workspace)
	})
}

// All returns every entry, soonest first (the operator console).
func (s *Scheduler) All() []engine.Upcoming {
	return s.list(func(core.ConversationKey) bool { return true })
}

func (s *Scheduler) list(match func(core.ConversationKey) bool) []engine.Upcoming {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []engine.Upcoming
	for _, e := range s.entries {
		c := e.Conv
		if !match(c) {
			continue
		}
		due := e.next
		if due.IsZero() {
			due = next(e.sched, e.Location, now)
		}
		out = append(out, engine.Upcoming{
			Name: e.Name, Cron: e.Cron, TimeZone: e.Location.String(), Conv: c, Thread: c.Thread,
			Next: due.In(e.Location), Last: e.last, Skipped: e.skipped, Result: e.result,
		})
	}
	slices.SortStableFunc(out, func(a, b engine.Upcoming) int { return a.Next.Compare(b.Next) })
	return out
}

// Run fires the entries until ctx ends. It first settles each entry's
// missed runs: one catch-up run when the latest was due within the
// entry's catch-up window, else a logged skip.
func (s *Scheduler) Run(ctx context.Context, sub Submitter) {
	first := true
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := time.Now()
		s.mu.Lock()
		entries := slices.Clone(s.entries)
		s.mu.Unlock()
		var soonest time.Time
		for _, e := range entries {
			s.step(ctx, sub, e, now, first)
			s.mu.Lock()
			next := e.next
			s.mu.Unlock()
			if soonest.IsZero() || next.Before(soonest) {
				soonest = next
			}
		}
		first = false
		wait := time.Hour // nothing scheduled: only a reload wakes us
		if !soonest.IsZero() {
			wait = time.Until(soonest)
		}
		timer.Reset(max(wait, 0))
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
			// Reset at the top suffices: since Go 1.23 a stopped or reset
			// timer delivers no stale value.
		case <-timer.C:
		}
	}
}

// step brings one entry up to now: it loads its state the first time,
// settles missed runs at start-up, fires it when due, and reckons its next
// run.
func (s *Scheduler) step(ctx context.Context, sub Submitter, e *entry, now time.Time, startup bool) {
	s.mu.Lock()
	loaded, next := e.loaded, e.next
	s.mu.Unlock()
	log := s.log.With("schedule", e.Name)
	if !loaded {
		last, skipped, ok, err := s.state.ScheduleRun(ctx, e.Name)
		if err != nil {
			log.Error("could not read the schedule's last run; it runs from now on", "err", err)
		}
		if !ok {
			// First seen: runs missed from now on count as missed.
			last = now
			s.save(ctx, log, e.Name, last, time.Time{})
		}
		s.mu.Lock()
		e.last, e.skipped, e.loaded = last, skipped, true
		s.mu.Unlock()
		if ok && startup {
			if s.settle(ctx, sub, e, now, log) {
				return
			}
		}
	}
	if next.IsZero() {
		s.setNext(e, now)
		return
	}
	if next.After(now) {
		return
	}
	// Due (perhaps late, after a suspend): one run, however many were due.
	s.fire(ctx, sub, e, now, next, log)
}

// settle handles the runs e missed while the bridge was down. It reports
// whether it ran e.
func (s *Scheduler) settle(ctx context.Context, sub Submitter, e *entry, now time.Time, log *slog.Logger) bool {
	s.mu.Lock()
	since := e.last
	if e.skipped.After(since) {
		since = e.skipped
	}
	s.mu.Unlock()
	missed := Missed(e.sched, e.Location, since, now)
	if missed.IsZero() {
		return false
	}
	if e.CatchUp > 0 && now.Sub(missed) <= e.CatchUp {
		log.Info("catching up a run missed while the bridge was down", "due", missed, "catch_up", e.CatchUp)
		s.fire(ctx, sub, e, now, missed, log)
		return true
	}
	log.Warn("skipped a run missed while the bridge was down: older than the catch-up window", "due", missed, "catch_up", e.CatchUp)
	s.mu.Lock()
	e.skipped = missed
	last := e.last
	s.mu.Unlock()
	s.save(ctx, log, e.Name, last, missed)
	return false
}

// Missed returns the latest run of sched due after since and at or before
// now, or zero when none was due.
func Missed(sched cron.Schedule, loc *time.Location, since, now time.Time) time.Time {
	t := next(sched, loc, since)
	if t.IsZero() || t.After(now) {
		return time.Time{}
	}
	// Bounded: an every-second schedule down for days still settles in
	// well under a second; beyond the bound the run found is old anyway.
	for range 1_000_000 {
		n := next(sched, loc, t)
		if n.IsZero() || n.After(now) {
			break
		}
		t = n
	}
	return t
}

// next returns sched's first run after t in loc. Cron fields are wall-clock
// times, so they are matched against the zone's wall clock: a time the
// spring change skips (02:30 on the night clocks go 02:00 → 03:00) runs
// when the clock resumes (03:30), and a time the autumn change repeats
// runs once, at its first occurrence. @every intervals are real time.
func next(sched cron.Schedule, loc *time.Location, t time.Time) time.Time {
	if _, ok := sched.(*cron.SpecSchedule); !ok {
		return sched.Next(t)
	}
	w := wall(t.In(loc))
	for range 1000 {
		w = sched.Next(w)
		if w.IsZero() {
			return w
		}
		r := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), 0, loc)
		if !wall(r).Equal(w) {
			// w is in the gap the spring change skips, and Date gave the
			// same instant read in the old offset: move it past the gap.
			_, before := r.Zone()
			_, after := r.Add(3 * time.Hour).Zone()
			r = r.Add(time.Duration(after-before) * time.Second)
		}
		// A wall time the autumn change repeats maps to its first
		// occurrence, which may be before t: it already ran.
		if r.After(t) {
			return r
		}
	}
	return time.Time{}
}

// wall is t's wall clock read as UTC, where no day has a clock change.
func wall(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// fire submits e's message as a turn (due is when it was due) and records
// the run first, so a crash after it cannot run it again.
func (s *Scheduler) fire(ctx context.Context, sub Submitter, e *entry, now, due time.Time, log *slog.Logger) {
	s.mu.Lock()
	e.last, e.skipped, e.result = now, time.Time{}, ""
	s.mu.Unlock()
	s.save(ctx, log, e.Name, now, time.Time{})
	s.setNext(e, now)
	id, err := sub.Submit(ctx, engine.Submission{
		Conv: e.Conv, Text: e.Message, Profile: e.Profile, Session: e.Session,
		Origin: engine.OriginSchedule, Name: e.Name,
		Done: func(r engine.Result) {
			s.mu.Lock()
			e.result = r.Status
			if r.Error != "" {
				e.result += ": " + r.Error
			}
			s.mu.Unlock()
		},
	})
	if err != nil {
		log.Error("scheduled turn not started", "due", due, "err", err)
		return
	}
	log.Info("scheduled turn submitted", "due", due, "turn", id, "conv", e.Conv)
}

func (s *Scheduler) setNext(e *entry, now time.Time) {
	next := next(e.sched, e.Location, now)
	s.mu.Lock()
	e.next = next
	s.mu.Unlock()
}

func (s *Scheduler) save(ctx context.Context, log *slog.Logger, name string, last, skipped time.Time) {
	if err := s.state.SetScheduleRun(ctx, name, last, skipped); err != nil {
		log.Error("could not record the schedule's run", "err", err)
	}
}
