package discord

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/discord/discordtest"
	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/core/engine"
	"github.com/agentbridge/agentbridge/internal/testagent"
	"github.com/agentbridge/agentbridge/store"
)

// runEngine runs the engine (allowing alice), a real store, the adapter
// and a real agent process against fake until the test ends, logging to
// logW when set. tweaks change the agent profile. It returns once the gateway is connected.
func runEngine(t *testing.T, fake *discordtest.Server, logW io.Writer, tweaks ...func(*agentproc.Profile)) *engine.Engine {
	t.Helper()
	return runEngineWith(t, fake, logW, Options{}, tweaks...)
}

// runEngineWith is runEngine with the adapter's options (its token and
// API URL are the fake's).
func runEngineWith(t *testing.T, fake *discordtest.Server, logW io.Writer, opts Options, tweaks ...func(*agentproc.Profile)) *engine.Engine {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "bridge.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts.Token, opts.APIURL = testToken, fake.URL
	a, err := New(opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	prof := &agentproc.Profile{
		Name: "test", Command: os.Args[0], Args: []string{"-test.run=^$"},
		Env:     map[string]string{testagent.Env: "1", "GORACE": "atexit_sleep_ms=0"},
		Timeout: 30 * time.Second, KillGrace: 300 * time.Millisecond, Streaming: true,
	}
	for _, tw := range tweaks {
		tw(prof)
	}
	log := slog.New(slog.DiscardHandler)
	if logW != nil {
		log = slog.New(slog.NewTextHandler(logW, nil))
	}
	eng := engine.New(st, &engine.Settings{
		Platforms:      map[string]engine.PlatformSettings{Name: {AllowUsers: []string{alice.ID}, Scope: "thread"}},
		Profiles:       map[string]*agentproc.Profile{"test": prof},
		DefaultProfile: "test",
	}, engine.Options{Log: log})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, eng.Handler(a)) }()
	t.Cleanup(func() {
		eng.Shutdown(context.Background(), time.Second)
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
		st.Close()
	})
	waitFor(t, fake, "connect", fake.Connected)
	return eng
}

// Messages fired back to back into one channel are answered in delivery
// order: the gateway reader hands them to the engine plainly, and the
// engine's intake keeps their order.
func TestEngineBackToBackMessagesInOrder(t *testing.T) {
	t.Parallel()
	fake := discordtest.NewServer(testToken)
	t.Cleanup(fake.Close) // after the engine's cleanup (registered later, run first): its turns finish against a live fake
	fake.AddChannel(discordtest.Channel{ID: "C1", Type: 0, GuildID: "G1"})
	runEngine(t, fake, nil)

	for i := range 5 {
		fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate(fmt.Sprintf("M%d", i+1), "C1", "G1", alice, fmt.Sprintf("order-%d", i), true))
	}
	var got []int
	waitFor(t, fake, "five replies", func() bool {
		got = got[:0]
		for _, c := range fake.Contents("C1") {
			for i := range 5 {
				if strings.Contains(c, fmt.Sprintf("order-%d", i)) {
					got = append(got, i)
				}
			}
		}
		return len(got) == 5
	})
	if want := []int{0, 1, 2, 3, 4}; !slices.Equal(got, want) {
		t.Errorf("replies in order %v, want %v", got, want)
	}
}
