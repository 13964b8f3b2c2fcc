package discord

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/discord/discordtest"
	"github.com/agentbridge/agentbridge/core/agentproc"
)

// Issue 27, item 7: an allowed member whose server nickname is a Markdown
// link denies her own permission request; Discord shows "❌ Denied by …"
// with the name as typed, never as a masked link.
func TestEngineDisplayNameIsNeverALink(t *testing.T) {
	t.Parallel()
	fake := discordtest.NewServer(testToken)
	t.Cleanup(fake.Close) // after the engine's cleanup (registered later, run first): its turns finish against a live fake
	fake.AddChannel(discordtest.Channel{ID: "C1", Type: 0, GuildID: "G1"})
	eng := runEngine(t, fake, nil, func(p *agentproc.Profile) {
		p.Permission, p.PermissionTimeout = true, 20*time.Second
	})
	mallory := discordtest.User{ID: alice.ID, Name: "[CLICK](https://evil.example/x)"}
	fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M1", "C1", "G1", mallory, "perm", true))
	var prompt discordtest.Message
	waitFor(t, fake, "the prompt", func() bool {
		for _, m := range fake.Messages("C1") {
			if strings.Contains(m.Content, "Permission needed") && len(m.Components) > 2 {
				prompt = m
				return true
			}
		}
		return false
	})
	var rows []struct {
		Components []struct {
			Label    string `json:"label"`
			CustomID string `json:"custom_id"`
		} `json:"components"`
	}
	if err := json.Unmarshal(prompt.Components, &rows); err != nil {
		t.Fatalf("components %s: %v", prompt.Components, err)
	}
	deny := ""
	for _, r := range rows {
		for _, b := range r.Components {
			if b.Label == "Deny" {
				deny = b.CustomID
			}
		}
	}
	fake.Dispatch("INTERACTION_CREATE", discordtest.ButtonPress("I1", "itok", "C1", "G1", prompt.ID, mallory, deny))
	var done string
	waitFor(t, fake, "the outcome", func() bool {
		for _, m := range fake.Messages("C1") {
			if m.ID == prompt.ID && strings.Contains(m.Content, "Denied by") {
				done = m.Content
				return true
			}
		}
		return false
	})
	if strings.Contains(done, "[CLICK](") {
		t.Errorf("the name is a masked link on Discord: %q", done)
	}
	if !strings.Contains(done, `❌ Denied by \[CLICK\]`) || !strings.Contains(done, `Requested for \[CLICK\]`) {
		t.Errorf("prompt after the answer = %q; want the name escaped as text", done)
	}
	// The reply is delivered before the fake closes.
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	if err := eng.Idle(ctx); err != nil {
		t.Fatal(err)
	}
}
