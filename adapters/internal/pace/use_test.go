package pace_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentbridge/agentbridge/adapters/internal/pace"
	"github.com/agentbridge/agentbridge/core"
)

// TestUse: the share in use follows the calls taken and a hold; a set
// reports its fullest budget and keeps its 429s when a budget is
// forgotten.
func TestUse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := pace.NewBudgets(pace.Limit{N: 60, Per: time.Minute, Burst: 4})
		if in, refused := s.Use(); in != 0 || refused != 0 {
			t.Fatalf("empty set: %v, %d", in, refused)
		}
		a, b := s.Get("a"), s.Get("b")
		if in := a.InUse(); in != 0 {
			t.Errorf("a full budget is %v in use, want 0", in)
		}
		a.TryTake("x", core.PriorityFinal)
		a.TryTake("x", core.PriorityFinal)
		if in, _ := s.Use(); in < 0.49 || in > 0.51 {
			t.Errorf("2 of a burst of 4 taken: %v in use, want 0.5", in)
		}
		b.Hold(time.Now().Add(time.Second))
		b.Refused()
		if in, refused := s.Use(); in != 1 || refused != 1 {
			t.Errorf("a held budget: %v in use, %d refused; want 1, 1", in, refused)
		}
		time.Sleep(time.Minute) // both refill and the hold ends
		if in, refused := s.Use(); in != 0 || refused != 1 {
			t.Errorf("a minute later: %v in use, %d refused; want 0, 1", in, refused)
		}
		lone := pace.NewBudget(pace.Limit{N: 5, Per: 5 * time.Second, Window: true})
		for range 5 {
			lone.TryTake("x", core.PriorityFinal)
		}
		if in, refused := lone.Use(); in != 1 || refused != 0 {
			t.Errorf("a window spent: %v in use, %d refused; want 1, 0", in, refused)
		}
	})
}
