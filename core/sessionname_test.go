package core_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/core"
)

func TestValidSessionName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"work", true},
		{"a", true},
		{"9.x_y-z", true},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
		{"", false},
		{".hidden", false},
		{"-x", false},
		{"_x", false},
		{"a b", false},
		{"a/b", false},
		{"é", false},
		{"a\x00", false},
	}
	for _, tt := range tests {
		if got := core.ValidSessionName(tt.name); got != tt.ok {
			t.Errorf("ValidSessionName(%q) = %v, want %v", tt.name, got, tt.ok)
		}
	}
}

// FuzzValidSessionName holds the rule to the pattern the engine, the
// trigger and the config each compiled before they shared it.
func FuzzValidSessionName(f *testing.F) {
	for _, s := range []string{"work", "", ".x", "a.b", strings.Repeat("z", 65), "ü"} {
		f.Add(s)
	}
	re := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
	f.Fuzz(func(t *testing.T, name string) {
		if got, want := core.ValidSessionName(name), re.MatchString(name); got != want {
			t.Fatalf("ValidSessionName(%q) = %v, the pattern says %v", name, got, want)
		}
	})
}
