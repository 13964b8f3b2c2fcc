package engine

import (
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/core"
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
		{"new", "/", "", "", false}, // a bare word is a command only when addressed
	}
	for _, tt := range tests {
		c, arg, ok := parseCommand(core.Message{Text: tt.text}, tt.prefix)
		cmd := c.Name
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
		c, arg, ok := parseCommand(core.Message{Text: text}, prefix)
		cmd := c.Name
		if !ok {
			if cmd != "" || arg != "" {
				t.Fatalf("not a command but got %q %q", cmd, arg)
			}
			return
		}
		if _, known := core.LookupCommand(cmd); !known {
			t.Fatalf("unknown command %q accepted", cmd)
		}
		if !strings.HasPrefix(strings.TrimSpace(text), prefix) || strings.TrimSpace(arg) != arg {
			t.Fatalf("parseCommand(%q, %q) = %q, %q", text, prefix, cmd, arg)
		}
	})
}

// A message addressed to the bot by name ("@bot new", a slash command's
// text) is a command without the prefix, on every platform; "@bot help me"
// is a question for the agent.
func TestParseCommandAddressed(t *testing.T) {
	tests := []struct {
		text, cmd, arg string
		ok             bool
	}{
		{"new", "new", "", true},
		{"  Session work ", "session", "work", true},
		{"!new", "new", "", true},
		{"help me with Go", "", "", false},
		{"stop now", "", "", false}, // stop takes no argument
		{"session a b", "", "", false},
		{"", "", "", false},
	}
	for _, tt := range tests {
		c, arg, ok := parseCommand(core.Message{Text: tt.text, Addressed: true}, "!")
		if c.Name != tt.cmd || arg != tt.arg || ok != tt.ok {
			t.Errorf("parseCommand(addressed %q) = %q, %q, %v; want %q, %q, %v", tt.text, c.Name, arg, ok, tt.cmd, tt.arg, tt.ok)
		}
	}
}
