package lane

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// gate is a job that records its start and blocks until released.
type gate struct {
	started chan struct{}
	release chan struct{}
	cause   error
}

func newGate() *gate { return &gate{started: make(chan struct{}), release: make(chan struct{})} }

func (g *gate) job(id string, log *[]string, mu *sync.Mutex) Job {
	return Job{ID: id, Run: func(ctx context.Context) {
		mu.Lock()
		*log = append(*log, id)
		mu.Unlock()
		close(g.started)
		select {
		case <-g.release:
		case <-ctx.Done():
			g.cause = context.Cause(ctx)
		}
	}}
}

func TestOrderAndQueuePositions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New[string](t.Context(), 2)
		var mu sync.Mutex
		var ran []string
		g1, g2, g3 := newGate(), newGate(), newGate()
		mustPos := func(want int, job Job) {
			t.Helper()
			pos, err := l.Enqueue("c", job)
			if err != nil || pos != want {
				t.Fatalf("Enqueue(%s) = %d, %v; want %d, nil", job.ID, pos, err, want)
			}
		}
		mustPos(0, g1.job("1", &ran, &mu))
		<-g1.started
		mustPos(1, g2.job("2", &ran, &mu))
		mustPos(2, g3.job("3", &ran, &mu))
		if _, err := l.Enqueue("c", Job{ID: "4", Run: func(context.Context) {}}); !errors.Is(err, ErrFull) {
			t.Fatalf("Enqueue beyond depth = %v, want ErrFull", err)
		}
		// Another conversation is not blocked by this one.
		other := newGate()
		mustOther, err := l.Enqueue("d", other.job("d1", &ran, &mu))
		if err != nil || mustOther != 0 {
			t.Fatalf("other lane: %d, %v", mustOther, err)
		}
		<-other.started
		close(other.release)

		r, ok, queued := l.Status("c")
		if !ok || r.ID != "1" || queued != 2 {
			t.Fatalf("Status = %+v %v %d, want running 1 with 2 queued", r, ok, queued)
		}
		close(g1.release)
		<-g2.started
		close(g2.release)
		<-g3.started
		close(g3.release)
		if err := l.Idle(t.Context()); err != nil {
			t.Fatal(err)
		}
		if l.Active() != 0 {
			t.Fatalf("Active = %d after idle, want 0 (idle lanes cost nothing)", l.Active())
		}
		l.Wait()
		mu.Lock()
		defer mu.Unlock()
		if diff := cmp.Diff([]string{"1", "d1", "2", "3"}, ran); diff != "" {
			t.Errorf("run order (-want +got):\n%s", diff)
		}
	})
}

func TestStopCancelsWithCauseAndDropsQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New[string](t.Context(), 5)
		var mu sync.Mutex
		var ran []string
		g := newGate()
		l.Enqueue("c", g.job("1", &ran, &mu))
		<-g.started
		l.Enqueue("c", Job{ID: "2", Run: func(context.Context) { t.Error("dropped job ran") }})
		errStop := errors.New("stopped by user")
		stopped, dropped := l.Stop("c", errStop, true)
		if !stopped || len(dropped) != 1 || dropped[0].ID != "2" {
			t.Fatalf("Stop = %v, %v; want true and job 2 dropped", stopped, dropped)
		}
		l.Wait()
		if !errors.Is(g.cause, errStop) {
			t.Errorf("job saw cause %v, want %v", g.cause, errStop)
		}
		if stopped, _ := l.Stop("c", errStop, true); stopped {
			t.Error("Stop on an idle lane reported a running job")
		}
	})
}

func TestCloseAndCancelAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New[int](t.Context(), 1)
		var mu sync.Mutex
		var ran []string
		g := newGate()
		l.Enqueue(1, g.job("1", &ran, &mu))
		<-g.started
		l.Enqueue(1, Job{ID: "q"})
		l.Close()
		if _, err := l.Enqueue(2, Job{}); !errors.Is(err, ErrClosed) {
			t.Fatalf("Enqueue after Close = %v, want ErrClosed", err)
		}
		cause := errors.New("shutdown")
		dropped := l.CancelAll(cause)
		if len(dropped) != 1 || dropped[0].ID != "q" {
			t.Fatalf("CancelAll dropped %v, want [q]", dropped)
		}
		l.Wait()
		if !errors.Is(g.cause, cause) {
			t.Errorf("cause = %v, want %v", g.cause, cause)
		}
	})
}

// The position of a job enqueued right behind the lane's first one is 1
// whether or not the lane's goroutine has taken the first off the queue yet.
func TestPositionBeforeFirstJobStarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New[string](context.Background(), 10)
		var mu sync.Mutex
		var log []string
		g1, g2 := newGate(), newGate()
		if pos, err := l.Enqueue("a", g1.job("1", &log, &mu)); pos != 0 || err != nil {
			t.Fatalf("first: position %d, %v", pos, err)
		}
		// No synctest.Wait: the first job has not started.
		if pos, err := l.Enqueue("a", g2.job("2", &log, &mu)); pos != 1 || err != nil {
			t.Fatalf("second before the first started: position %d, %v; want 1", pos, err)
		}
		<-g1.started
		g3 := newGate()
		if pos, err := l.Enqueue("a", g3.job("3", &log, &mu)); pos != 2 || err != nil {
			t.Fatalf("third while the first runs: position %d, %v; want 2", pos, err)
		}
		close(g1.release)
		close(g2.release)
		close(g3.release)
		l.Close()
		l.Wait()
	})
}

// Bounded refuses jobs past its total over all keys, new keys included,
// and takes them again once queued jobs have run.
func TestBoundedTotal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := Bounded[string](t.Context(), 10, 2)
		release := make(chan struct{})
		block := Job{Run: func(context.Context) { <-release }}
		for _, k := range []string{"a", "b"} {
			if _, err := l.Enqueue(k, block); err != nil {
				t.Fatalf("Enqueue(%s) = %v", k, err)
			}
		}
		synctest.Wait() // both running: nothing is queued
		for _, k := range []string{"a", "b"} {
			if _, err := l.Enqueue(k, block); err != nil {
				t.Fatalf("Enqueue(%s) behind the running job = %v", k, err)
			}
		}
		if _, err := l.Enqueue("c", block); !errors.Is(err, ErrFull) {
			t.Fatalf("a third queued job over the total of 2 = %v, want ErrFull", err)
		}
		if _, err := l.Enqueue("a", block); !errors.Is(err, ErrFull) {
			t.Fatalf("Enqueue(a) over the total = %v, want ErrFull", err)
		}
		close(release)
		if err := l.Idle(t.Context()); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Enqueue("c", Job{Run: func(context.Context) {}}); err != nil {
			t.Fatalf("Enqueue after the queues ran = %v", err)
		}
		l.Close()
		l.Wait()
	})
}

// TestFrontAndTakeWhile: a queued job moved to the front runs next; the
// jobs taken off the front do not run, and the rest keep their order.
func TestFrontAndTakeWhile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New[string](t.Context(), 10)
		var mu sync.Mutex
		var ran []string
		first := newGate()
		if _, err := l.Enqueue("c", first.job("1", &ran, &mu)); err != nil {
			t.Fatal(err)
		}
		<-first.started
		for _, id := range []string{"2", "3", "4", "5"} {
			if _, err := l.Enqueue("c", Job{ID: id, Run: func(context.Context) { mu.Lock(); ran = append(ran, id); mu.Unlock() }}); err != nil {
				t.Fatal(err)
			}
		}
		if !l.Front("c", "4", nil) {
			t.Fatal("Front(4) = false, want true: it is queued")
		}
		if l.Front("c", "9", nil) || l.Front("other", "4", nil) {
			t.Fatal("Front of a job not queued reported true")
		}
		// 5 goes behind 4, which it lets stay ahead: 4 5 2 3.
		if !l.Front("c", "5", func(j Job) bool { return j.ID == "4" }) {
			t.Fatal("Front(5) = false, want true: it is queued")
		}
		if l.StopRunning("c", "2", errors.New("not running")) {
			t.Fatal("StopRunning stopped a job that is not running")
		}
		taken := l.TakeWhile("c", func(j Job) bool { return j.ID != "2" })
		var ids []string
		for _, j := range taken {
			ids = append(ids, j.ID)
		}
		if diff := cmp.Diff([]string{"4", "5"}, ids); diff != "" {
			t.Fatalf("TakeWhile took (-want +got):\n%s", diff)
		}
		if _, _, queued := l.Status("c"); queued != 2 {
			t.Fatalf("queued = %d after taking two of four, want 2", queued)
		}
		stop := errors.New("stopped")
		if !l.StopRunning("c", "1", stop) {
			t.Fatal("StopRunning(1) = false, want true: it runs")
		}
		l.Wait()
		if !errors.Is(first.cause, stop) {
			t.Fatalf("running job's cause = %v, want %v", first.cause, stop)
		}
		if diff := cmp.Diff([]string{"1", "2", "3"}, ran); diff != "" {
			t.Fatalf("ran (-want +got):\n%s", diff)
		}
	})
}
