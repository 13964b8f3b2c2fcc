package discord

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	discordgo "github.com/bwmarrin/discordgo"
	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge/adapters/discord/discordtest"
	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/core/engine"
	"github.com/agentbridge/agentbridge/internal/testagent"
	"github.com/agentbridge/agentbridge/store"
)

// registeredCommand is the part of a registered command the tests read.
type registeredCommand struct {
	Name     string `json:"name"`
	Type     int    `json:"type"`
	Contexts []int  `json:"contexts"`
	Options  []struct {
		Type    int    `json:"type"`
		Name    string `json:"name"`
		Options []struct {
			Type     int    `json:"type"`
			Name     string `json:"name"`
			Required bool   `json:"required"`
			Choices  []struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"choices"`
		} `json:"options"`
	} `json:"options"`
}

func TestSlashRegistration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		opts    Options
		refuse  string
		want    []string // where commands end up registered; "" = globally
		wantLog string
	}{
		{name: "per guild", opts: Options{SlashCommands: true, SlashGuilds: []string{"G1", "G2"}, SlashProfiles: []string{"claude", "codex"}}, want: []string{"G1", "G2"}},
		{name: "global", opts: Options{SlashCommands: true}, want: []string{""}},
		{name: "a refused guild is logged, the others registered", opts: Options{SlashCommands: true, SlashGuilds: []string{"G1", "G2"}},
			refuse: "G1", want: []string{"G2"}, wantLog: "Missing Access"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, tc.opts, func(f *discordtest.Server) {
				if tc.refuse != "" {
					f.RefuseGuild(tc.refuse)
				}
			})
			h.connected(t)
			waitFor(t, h.fake, "registrations", func() bool {
				n := len(h.fake.CallsTo("PUT", "/applications/"+discordtest.AppID+"/"))
				return n == max(len(tc.opts.SlashGuilds), 1)
			})
			var got []string
			for _, where := range []string{"", "G1", "G2"} {
				body, ok := h.fake.Registered(where)
				if !ok {
					continue
				}
				got = append(got, where)
				var cmds []registeredCommand
				if err := json.Unmarshal(body, &cmds); err != nil || len(cmds) != 1 {
					t.Fatalf("registration body %s: %v; want one command", body, err)
				}
				c := cmds[0]
				var subs []string
				for _, o := range c.Options {
					if o.Type != 1 {
						t.Errorf("option %s has type %d, want a subcommand (1)", o.Name, o.Type)
					}
					subs = append(subs, o.Name)
					if o.Name == "agent" {
						var choices []string
						for _, o := range o.Options {
							for _, c := range o.Choices {
								choices = append(choices, c.Name+"="+c.Value)
							}
						}
						want := map[bool]string{true: "claude=claude codex=codex", false: ""}[tc.opts.SlashProfiles != nil]
						if got := strings.Join(choices, " "); got != want {
							t.Errorf("agent choices %q, want %q", got, want)
						}
					}
					if o.Name == "session" && (len(o.Options) != 1 || o.Options[0].Name != "name" || o.Options[0].Type != 3 || o.Options[0].Required) {
						t.Errorf("session options = %+v, want one optional string \"name\"", o.Options)
					}
				}
				if c.Name != "agent" || c.Type != 1 {
					t.Errorf("command %q type %d, want chat command \"agent\"", c.Name, c.Type)
				}
				var want []string // the engine's table, in its order
				for _, c := range core.Commands {
					want = append(want, c.Name)
				}
				if d := cmp.Diff(want, subs); d != "" {
					t.Errorf("subcommands (-want +got):\n%s", d)
				}
				// Contexts are for global commands only: servers and DMs with the bot.
				if wantCtx := map[bool][]int{true: {0, 1}, false: nil}[where == ""]; !slices.Equal(c.Contexts, wantCtx) {
					t.Errorf("contexts %v, want %v", c.Contexts, wantCtx)
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("registered in (-want +got):\n%s", d)
			}
			if tc.wantLog != "" {
				waitFor(t, h.fake, "the failure in the log", func() bool { return strings.Contains(h.logs.String(), tc.wantLog) })
			}
			if !h.fake.Connected() {
				t.Error("a registration failure disconnected the adapter")
			}
		})
	}
}

func TestSlashRegistrationOff(t *testing.T) {
	t.Parallel()
	h := start(t, Options{}, func(f *discordtest.Server) {
		f.AddChannel(discordtest.Channel{ID: "C1", Type: 0, GuildID: "G1"})
	})
	h.connected(t)
	// A message handled after READY shows the adapter is past start-up.
	h.fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M1", "C1", "G1", alice, "hi", true))
	h.rec.nextMessage(t)
	if calls := h.fake.CallsTo("PUT", "/applications/"); len(calls) != 0 {
		t.Errorf("registered commands with SlashCommands off: %+v", calls)
	}
}

func TestSlashCommandBecomesTypedCommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		prefix, sub     string
		arg, guild      string
		wantText        string
		wantEphemeral   bool
		wantConvChannel string
	}{
		{name: "status is private", sub: "status", guild: "G1", wantText: "!status", wantEphemeral: true},
		{name: "whoami is private", sub: "whoami", guild: "G1", wantText: "!whoami", wantEphemeral: true},
		{name: "new is public", sub: "new", guild: "G1", wantText: "!new"},
		{name: "switching sessions is public", sub: "session", arg: "work", guild: "G1", wantText: "!session work"},
		{name: "showing the session is private", sub: "session", guild: "G1", wantText: "!session", wantEphemeral: true},
		{name: "a newline cannot add a line", sub: "session", arg: "a\n!new", guild: "G1", wantText: "!session a !new"},
		{name: "configured prefix in a DM", prefix: "?", sub: "stop", wantText: "?stop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, Options{CommandPrefix: tc.prefix}, func(f *discordtest.Server) {
				f.AddChannel(discordtest.Channel{ID: "C1", Type: 0, GuildID: "G1"})
			})
			const token = "itok-slash-secret"
			ackedFirst := make(chan bool, 1)
			h.rec.onMessage = func(core.Message) {
				r, ok := h.fake.Interaction(token)
				ackedFirst <- ok && r.Type == 5
			}
			h.connected(t)
			h.fake.Dispatch("INTERACTION_CREATE", discordtest.SlashCommand("I1", token, "C1", tc.guild, alice, tc.sub, tc.arg))
			m := h.rec.nextMessage(t)
			if !<-ackedFirst {
				t.Error("the command reached core before the interaction was deferred (type 5)")
			}
			m.Time = time.Time{}
			want := core.Message{Conv: core.ConversationKey{Platform: "discord", Workspace: tc.guild, Channel: "C1"},
				ID: "I1", From: core.User{ID: alice.ID, Name: alice.Name}, Text: tc.wantText}
			if d := cmp.Diff(want, m); d != "" {
				t.Errorf("message (-want +got):\n%s", d)
			}
			// The handler sent nothing: the response says where the answer goes.
			waitFor(t, h.fake, "the acknowledgement", func() bool {
				r, _ := h.fake.Interaction(token)
				return r.Content != ""
			})
			r, _ := h.fake.Interaction(token)
			if got := r.Flags&64 != 0; got != tc.wantEphemeral {
				t.Errorf("ephemeral = %v, want %v", got, tc.wantEphemeral)
			}
			if !strings.Contains(r.Content, "answer follows in this channel") || !strings.Contains(string(r.AllowedMentions), `"parse":[]`) {
				t.Errorf("response = %+v, want an acknowledgement without mentions", r)
			}
		})
	}
}

// slashEngine runs the engine, a real store, the adapter and a real agent
// profile against fake, allowing alice only.
func slashEngine(t *testing.T, fake *discordtest.Server) (logs *logBuffer) {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "bridge.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	logs = &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a, err := New(Options{Token: testToken, APIURL: fake.URL, CommandPrefix: "!", SlashCommands: true, SlashGuilds: []string{"G1"}}, log)
	if err != nil {
		t.Fatal(err)
	}
	prof := &agentproc.Profile{
		Name: "test", Command: os.Args[0], Args: []string{"-test.run=^$"},
		Env:     map[string]string{testagent.Env: "1", "GORACE": "atexit_sleep_ms=0"},
		Timeout: 30 * time.Second, KillGrace: 300 * time.Millisecond, Streaming: true,
	}
	eng := engine.New(st, &engine.Settings{
		Platforms:      map[string]engine.PlatformSettings{Name: {AllowUsers: []string{alice.ID}, Scope: "thread", Prefix: "!"}},
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
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	waitFor(t, fake, "connect", fake.Connected)
	return logs
}

// TestSlashCommandsThroughEngine: the engine's answer to a slash command
// becomes the command's response; access stays the engine's decision.
func TestSlashCommandsThroughEngine(t *testing.T) {
	t.Parallel()
	fake := discordtest.NewServer(testToken)
	defer fake.Close()
	fake.AddChannel(discordtest.Channel{ID: "C1", Type: 0, GuildID: "G1"})
	logs := slashEngine(t, fake)
	waitFor(t, fake, "registration in G1", func() bool { _, ok := fake.Registered("G1"); return ok })

	answered := func(token, want string) discordtest.Response {
		t.Helper()
		waitFor(t, fake, want+" in the response to "+token, func() bool {
			r, _ := fake.Interaction(token)
			return strings.Contains(r.Content, want)
		})
		r, _ := fake.Interaction(token)
		return r
	}

	// An allowed user's /agent status: the status, privately, as the response.
	sent := time.Now()
	fake.Dispatch("INTERACTION_CREATE", discordtest.SlashCommand("I1", "itok-alice-status", "C1", "G1", alice, "status", ""))
	r := answered("itok-alice-status", "Idle: no turn is running.")
	if r.Type != 5 || r.Flags&64 == 0 {
		t.Errorf("status response = %+v, want a deferred ephemeral message", r)
	}
	// Discord drops an interaction not answered within 3 s; the adapter
	// defers before core runs, so only the fake's own latency counts here.
	if cb := fake.CallsTo("POST", "/interactions/I1/"); len(cb) != 1 || cb[0].At.Sub(sent) > 3*time.Second {
		t.Errorf("callbacks = %+v, want one within 3 s of the event", cb)
	}

	// A stranger gets core's refusal, and their id, privately.
	fake.Dispatch("INTERACTION_CREATE", discordtest.SlashCommand("I2", "itok-bob-status", "C1", "G1", bob, "status", ""))
	r = answered("itok-bob-status", "not allowed")
	if !strings.Contains(r.Content, bob.ID) || strings.Contains(r.Content, "Idle") || r.Flags&64 == 0 {
		t.Errorf("stranger's response = %+v, want the private refusal only", r)
	}
	fake.Dispatch("INTERACTION_CREATE", discordtest.SlashCommand("I3", "itok-bob-whoami", "C1", "G1", bob, "whoami", ""))
	answered("itok-bob-whoami", "You are discord user 222")

	// /agent new with no turn running: public; it runs on the
	// conversation's lane at once, and the engine waits for it, so its
	// answer is the response.
	fake.Dispatch("INTERACTION_CREATE", discordtest.SlashCommand("I4", "itok-alice-new", "C1", "G1", alice, "new", ""))
	r = answered("itok-alice-new", "Fresh session started")
	if r.Flags&64 != 0 {
		t.Errorf("/agent new answered privately: %+v", r)
	}

	// A redelivered interaction runs once.
	fake.Dispatch("INTERACTION_CREATE", discordtest.SlashCommand("I4", "itok-alice-new", "C1", "G1", alice, "new", ""))

	// An expired token: the answer is posted in the channel instead, and
	// no token reaches the logs.
	fake.ExpireInteraction("itok-expired")
	fake.Dispatch("INTERACTION_CREATE", discordtest.SlashCommand("I5", "itok-expired", "C1", "G1", alice, "sessions", ""))
	waitFor(t, fake, "the session list in the channel", func() bool {
		return strings.Contains(strings.Join(fake.Contents("C1"), "\n"), "Sessions here:")
	})
	if n := strings.Count(strings.Join(fake.Contents("C1"), "\n"), "Fresh session started"); n != 0 {
		t.Errorf("/agent new answered %d more times in the channel, want it run once, answered in its response", n)
	}
	if r, _ := fake.Interaction("itok-alice-new"); !strings.Contains(r.Content, "Fresh session started") {
		t.Errorf("after the redelivery the response reads %q, want the fresh-session answer kept", r.Content)
	}
	for _, secret := range []string{testToken, "itok-expired", "itok-alice", "itok-bob"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("%q appeared in the logs", secret)
		}
	}
	if strings.Contains(strings.Join(fake.Contents("C1"), "\n"), "Idle: no turn") {
		t.Error("the status was posted in the channel too")
	}
	if !strings.Contains(logs.String(), "acknowledging a slash command failed") {
		t.Error("the failed acknowledgement was not logged")
	}
}

// TestTranslateCancelledKeepsTokensOut: a request cancelled mid-flight
// names its URL, which for interaction routes carries the token.
func TestTranslateCancelledKeepsTokensOut(t *testing.T) {
	t.Parallel()
	a, err := New(Options{Token: testToken}, nil)
	if err != nil {
		t.Fatal(err)
	}
	in := &url.Error{Op: "Patch", URL: "https://discord.com/api/v9/webhooks/1/itok-cancelled/messages/@original", Err: context.Canceled}
	got := a.translate("edit interaction response", in)
	if !errors.Is(got, context.Canceled) || strings.Contains(got.Error(), "itok-cancelled") {
		t.Errorf("translate = %v; want context.Canceled without the token", got)
	}
}

// FuzzSlashText: whatever a user types into the options, the command text
// is one line naming a bridge command.
func FuzzSlashText(f *testing.F) {
	for _, s := range [][2]string{{"session", "work"}, {"session", "a\n!new"}, {"status", ""}, {"bogus", "x"}, {"session", " \t"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, sub, arg string) {
		d := discordgo.ApplicationCommandInteractionData{Name: SlashCommand, Options: []*discordgo.ApplicationCommandInteractionDataOption{{
			Name: sub, Type: discordgo.ApplicationCommandOptionSubCommand,
			Options: []*discordgo.ApplicationCommandInteractionDataOption{{Name: "name", Type: discordgo.ApplicationCommandOptionString, Value: arg}},
		}}}
		cmd, got, ok := slashText(d)
		if !ok {
			return
		}
		if cmd != sub || strings.ContainsAny(got, "\n\r") || got != strings.TrimSpace(got) {
			t.Fatalf("slashText(%q, %q) = %q, %q", sub, arg, cmd, got)
		}
		if cmd != "session" && got != "" {
			t.Fatalf("%s took an argument %q", cmd, got)
		}
	})
}
