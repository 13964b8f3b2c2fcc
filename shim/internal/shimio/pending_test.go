package shimio

import (
	"maps"
	"testing"
)

// TestPending: an answer takes its request once; what is left is taken
// together when the bridge closes, and nothing after.
func TestPending(t *testing.T) {
	var p Pending[string]
	if _, ok := p.Take("1"); ok {
		t.Fatal("took a request from an empty table")
	}
	p.Put("1", "a")
	p.Put("2", "b")
	p.Put("3", "c")
	if v, ok := p.Take("2"); !ok || v != "b" {
		t.Fatalf("Take(2) = %q, %v; want b, true", v, ok)
	}
	if _, ok := p.Take("2"); ok {
		t.Fatal("an answered request was taken twice")
	}
	if all := p.TakeAll(); !maps.Equal(all, map[string]string{"1": "a", "3": "c"}) {
		t.Fatalf("TakeAll = %v, want 1:a 3:c", all)
	}
	if all := p.TakeAll(); len(all) != 0 {
		t.Fatalf("second TakeAll = %v, want nothing", all)
	}
	p.Put("4", "d")
	if v, ok := p.Take("4"); !ok || v != "d" {
		t.Fatalf("after TakeAll, Take(4) = %q, %v; want d, true", v, ok)
	}
}
