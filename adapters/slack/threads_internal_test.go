package slack

import (
	"fmt"
	"testing"
	"time"
)

// The thread cache stays bounded: when full, idle threads go first and
// active ones stay; when none is idle it starts afresh (issue 27 item 7:
// it grew by one entry per mention, for ever).
func TestThreadCacheEvictsIdle(t *testing.T) {
	c := newThreadCache(100, time.Hour)
	t0 := time.Unix(1_700_000_000, 0)
	for i := range 60 {
		c.touch(fmt.Sprintf("old%d", i), t0)
	}
	later := t0.Add(2 * time.Hour)
	for i := range 40 {
		c.touch(fmt.Sprintf("new%d", i), later)
	}
	c.touch("one more", later)
	if n := c.len(); n != 41 {
		t.Errorf("%d threads cached; want the 40 active and the new one", n)
	}
	if !c.has("new7", later) || c.has("old7", later) {
		t.Error("the idle threads did not go first")
	}
	for i := range 1000 {
		c.touch(fmt.Sprintf("flood%d", i), later)
		if n := c.len(); n > 100 {
			t.Fatalf("%d threads cached; want at most 100", n)
		}
	}
}
