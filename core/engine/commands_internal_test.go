package engine

import (
	"strings"
	"testing"
)

func TestParseCommand(t *testing.T) {
	tests := []struct {
		text, prefix, cmd, arg string
		ok                     bool
	}{
		{"/new", "/", "new", "", true},
		{"  /STOP  ", "/", "stop", "", true},
		{"/session work", "/", "session", "work", true},
		{"/new@my_bot", "/", "new", "", true},
		{"!status", "!", "status", "", true},
		{"/status", "!", "", "", false},      // another platform's prefix
		{"/compact now", "/", "", "", false}, // the agent's own command passes through
		{"hello /new", "/", "", "", false},
		{"/", "/", "", "", false},
	}
	for _, tt := range tests {
		cmd, arg, ok := parseCommand(tt.text, tt.prefix)
		if cmd != tt.cmd || arg != tt.arg || ok != tt.ok {
			t.Errorf("parseCommand(%q, %q) = %q, %q, %v; want %q, %q, %v", tt.text, tt.prefix, cmd, arg, ok, tt.cmd, tt.arg, tt.ok)
		}
	}
}

func FuzzParseCommand(f *testing.F) {
	for _, seed := range []string{"/new", "/session a b", "!stop", "/x@y z", "", "/\x00"} {
		f.Add(seed, "/")
	}
	f.Fuzz(func(t *testing.T, text, prefix string) {
		cmd, arg, ok := parseCommand(text, prefix)
		if !ok {
			if cmd != "" || arg != "" {
				t.Fatalf("not a command but got %q %q", cmd, arg)
			}
			return
		}
		if _, known := commands[cmd]; !known {
			t.Fatalf("unknown command %q accepted", cmd)
		}
		if !strings.HasPrefix(strings.TrimSpace(text), prefix) || strings.TrimSpace(arg) != arg {
			t.Fatalf("parseCommand(%q, %q) = %q, %q", text, prefix, cmd, arg)
		}
	})
}
