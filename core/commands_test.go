package core_test

import (
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/core"
)

// Every command in the table is usable on every surface built from it:
// Discord takes 1-32 lowercase characters and 1-100 character
// descriptions, Telegram 1-32 of a-z, 0-9 and _.
func TestCommandTableFitsEveryPlatform(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range core.Commands {
		if seen[c.Name] {
			t.Errorf("command %q listed twice", c.Name)
		}
		seen[c.Name] = true
		if len(c.Name) == 0 || len(c.Name) > 32 || strings.Trim(c.Name, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
			t.Errorf("command name %q does not fit Telegram's and Discord's rules", c.Name)
		}
		if n := len([]rune(c.Description)); n == 0 || n > 100 {
			t.Errorf("%s: description of %d characters (1-100)", c.Name, n)
		}
		if (c.Arg == "") != (c.ArgDescription == "") {
			t.Errorf("%s: an argument needs a description and only an argument has one", c.Name)
		}
		if got, ok := core.LookupCommand(strings.ToUpper(c.Name)); !ok || got.Name != c.Name {
			t.Errorf("LookupCommand(%q) = %v, %v", strings.ToUpper(c.Name), got, ok)
		}
	}
	if _, ok := core.LookupCommand("compact"); ok {
		t.Error("an agent's own command is taken for a bridge command")
	}
}

func TestCommandPrivate(t *testing.T) {
	for _, tt := range []struct {
		cmd, arg string
		private  bool
	}{
		{"new", "", false}, {"stop", "", false}, {"session", "work", false},
		{"session", "", true}, {"help", "", true}, {"whoami", "", true}, {"status", "", true},
	} {
		c, ok := core.LookupCommand(tt.cmd)
		if !ok {
			t.Fatalf("no command %q", tt.cmd)
		}
		if got := c.Private(tt.arg); got != tt.private {
			t.Errorf("%s %q: Private = %v, want %v", tt.cmd, tt.arg, got, tt.private)
		}
	}
}

// FuzzBareCommand checks that only a whole-message command (a command
// word, and one argument where it takes one) counts.
func FuzzBareCommand(f *testing.F) {
	for _, s := range []string{"new", "help me with Go", "session work", "stop now", "", "NEW"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		cmd, arg, ok := core.BareCommand(text)
		fields := strings.Fields(text)
		if !ok {
			if cmd != "" || arg != "" {
				t.Fatalf("BareCommand(%q) = %q, %q, false", text, cmd, arg)
			}
			return
		}
		c, known := core.LookupCommand(cmd)
		if !known || len(fields) == 0 || len(fields) > 2 || !strings.EqualFold(fields[0], cmd) {
			t.Fatalf("BareCommand(%q) = %q: not a whole command", text, cmd)
		}
		if (len(fields) == 2) != (arg != "") || (arg != "" && (c.Arg == "" || arg != fields[1])) {
			t.Fatalf("BareCommand(%q) = %q, %q", text, cmd, arg)
		}
	})
}
