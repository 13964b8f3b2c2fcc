package discord

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/discord/discordtest"
)

// Issue 23: a message queued behind a running turn gets a notice with the
// button "⏭ Stop and answer this now". Bob's press is refused in an
// ephemeral response and nothing changes; Alice's press stops her running
// turn (its reply ends "⏹ Interrupted by a newer message.") and her queued
// message is answered next; the button leaves the notice.
func TestEngineSkipButton(t *testing.T) {
	t.Parallel()
	fake := discordtest.NewServer(testToken)
	t.Cleanup(fake.Close) // after the engine's cleanup (registered later, run first): its turns finish against a live fake
	fake.AddChannel(discordtest.Channel{ID: "C1", Type: 0, GuildID: "G1"})
	eng := runEngine(t, fake, nil)
	gate := filepath.Join(t.TempDir(), "gate")
	t.Cleanup(func() { os.WriteFile(gate, nil, 0o600) })
	fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M1", "C1", "G1", alice, "gate:"+gate, true))
	has := func(want string) (discordtest.Message, bool) {
		for _, m := range fake.Messages("C1") {
			if strings.Contains(m.Content, want) {
				return m, true
			}
		}
		return discordtest.Message{}, false
	}
	waitFor(t, fake, "the held turn", func() bool { _, ok := has("gated"); return ok })
	fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M2", "C1", "G1", alice, "second", true))
	var notice discordtest.Message
	waitFor(t, fake, "the queued notice", func() bool {
		m, ok := has("Queued")
		notice = m
		return ok && len(m.Components) > 0
	})
	var rows []struct {
		Components []struct {
			Label    string `json:"label"`
			CustomID string `json:"custom_id"`
		} `json:"components"`
	}
	if err := json.Unmarshal(notice.Components, &rows); err != nil || len(rows) != 1 || len(rows[0].Components) != 1 || rows[0].Components[0].Label != "⏭ Stop and answer this now" {
		t.Fatalf("notice components %s (%v); want ⏭", notice.Components, err)
	}
	skip := rows[0].Components[0].CustomID
	fake.Dispatch("INTERACTION_CREATE", discordtest.ButtonPress("I1", "itok1", "C1", "G1", notice.ID, bob, skip))
	// A press is answered privately by an ephemeral follow-up.
	waitFor(t, fake, "Bob's refusal", func() bool { return len(fake.CallsTo("POST", "/webhooks/"+discordtest.AppID+"/itok1")) == 1 })
	if fu := fake.CallsTo("POST", "/webhooks/"+discordtest.AppID+"/itok1")[0].Body; !strings.Contains(fu, `"flags":64`) || !strings.Contains(fu, "Only the person whose message is being answered") {
		t.Errorf("Bob's press answered %s; want the refusal, ephemeral", fu)
	}
	fake.Dispatch("INTERACTION_CREATE", discordtest.ButtonPress("I2", "itok2", "C1", "G1", notice.ID, alice, skip))
	waitFor(t, fake, "the interrupted reply", func() bool { _, ok := has("⏹ Interrupted by a newer message."); return ok })
	if m, _ := has("⏹ Interrupted by a newer message."); strings.Contains(m.Content, "released") {
		t.Errorf("the interrupted reply %q ran to its end", m.Content)
	}
	waitFor(t, fake, "the queued message's reply", func() bool { _, ok := has("(resumed sess-"); return ok })
	waitFor(t, fake, "the button gone", func() bool {
		for _, m := range fake.Messages("C1") {
			if m.ID == notice.ID {
				return len(m.Components) == 0 || string(m.Components) == "[]" || string(m.Components) == "null"
			}
		}
		return false
	})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if err := eng.Idle(ctx); err != nil {
		t.Fatal(err)
	}
}
