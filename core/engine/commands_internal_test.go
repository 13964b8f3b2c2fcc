package engine

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/lane"
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

// TestStatusShowsAcceptedTurnsAsStarting: a message accepted to run at once
// is "starting", not "idle", until its turn begins — while the lane's
// goroutine has yet to take it (a new lane, or between two jobs) or the turn
// to register. /status right after a message could answer "Idle" with the
// message queued.
func TestStatusShowsAcceptedTurnsAsStarting(t *testing.T) {
	// The bubble's clock stands still: the running time is exact.
	synctest.Test(t, func(t *testing.T) {
		tr := &turn{profileName: "p", sessionName: "s"}
		started := time.Now().Add(-time.Minute)
		tests := []struct {
			name    string
			r       lane.Running
			running bool
			queued  int
			t       *turn
			line    string
			waiting int
		}{
			{"idle", lane.Running{}, false, 0, nil, "Idle: no turn is running.", 0},
			{"running turn", lane.Running{ID: "t1", Started: started}, true, 2, tr, "▶ Running for 1m0s (profile p, session s).", 2},
			{"turn taken, not registered", lane.Running{ID: "t1", Started: started}, true, 1, nil, "▶ Starting a turn.", 1},
			{"new lane, job not taken", lane.Running{}, false, 1, nil, "▶ Starting the next message.", 0},
			{"between jobs", lane.Running{}, false, 3, nil, "▶ Starting the next message.", 2},
			{"lane command", lane.Running{ID: laneCommandJob + "x", Started: started}, true, 1, nil, "Idle: no turn is running.", 1},
		}
		for _, tt := range tests {
			line, waiting := activity(tt.r, tt.running, tt.queued, tt.t)
			if line != tt.line || waiting != tt.waiting {
				t.Errorf("%s: activity = %q, %d; want %q, %d", tt.name, line, waiting, tt.line, tt.waiting)
			}
		}
	})
}

// TestCommandHandlers: every entry of the command table has a handler and
// every handler an entry, so no bridge command can reach the agent for want
// of one, and no handler outlives its command.
func TestCommandHandlers(t *testing.T) {
	for _, c := range core.Commands {
		if commandHandlers[c.Name] == nil {
			t.Errorf("command %q has no handler", c.Name)
		}
	}
	for name := range commandHandlers {
		if _, ok := core.LookupCommand(name); !ok || name != strings.ToLower(name) {
			t.Errorf("handler %q has no entry in core.Commands", name)
		}
	}
}
