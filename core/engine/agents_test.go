package engine_test

import (
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/engine"
)

// offerAgents offers the profiles test (the default), other and yolo (for
// approvers only) in every conversation.
func offerAgents(s *engine.Settings) {
	twoProfiles(s)
	s.Profiles["other"].Description = "the other agent"
	yolo := testProfile()
	yolo.ApproversOnly = true
	s.Profiles["yolo"] = yolo
	few := testProfile()
	few.PickUsers = []string{"alice"}
	s.Profiles["few"] = few
	s.Choices = func(core.ConversationKey) []string { return []string{"other", "yolo", "few"} }
	s.Platforms["fake"] = engine.PlatformSettings{AllowUsers: []string{"alice", "bob", "boss"}, Approvers: []string{"boss"}}
}

// TestAgentMenuSwitchesAndBack: /agent shows the choices with the current
// one marked and a button each; a press switches the conversation; each
// profile keeps its agent session, so switching back resumes it (real
// agent processes, real store).
func TestAgentMenuSwitchesAndBack(t *testing.T) {
	h := newHarness(t, "", offerAgents)
	h.send(alice, "first")
	h.waitTextN("tokens", 1)
	h.idle()
	idTest := h.session().AgentID("test")

	h.send(alice, "/agent")
	menu := h.waitText("Agents here")
	for _, want := range []string{"▶ test", "  other — the other agent", "  yolo (approvers only)"} {
		if !strings.Contains(menu.Post.Text, want) {
			t.Errorf("menu lacks %q:\n%s", want, menu.Post.Text)
		}
	}
	var values []string
	for _, b := range menu.Post.Buttons {
		values = append(values, b.Label+"="+b.Value)
	}
	if got := strings.Join(values, " "); got != "▶ test=agent:test other=agent:other yolo=agent:yolo few=agent:few" {
		t.Fatalf("menu buttons = %s", got)
	}

	h.plat.Press(t.Context(), core.Action{Conv: conv, From: alice, Value: "agent:other", Ref: menu.Ref})
	h.waitText("🔀 Switched to other — the other agent.")
	h.send(alice, "second")
	h.waitTextN("tokens", 2)
	h.idle()
	idOther := h.session().AgentID("other")
	if idOther == "" || idOther == idTest {
		t.Fatalf("agents = %+v; want a session of its own for other", h.session().Agents)
	}
	h.send(alice, "/status")
	h.waitText("Profile: other")

	h.send(alice, "/agent test")
	h.waitText("🔀 Switched to test.")
	h.send(alice, "third")
	h.waitText("(resumed " + idTest + ") third")
	h.waitTextN("tokens", 3)
	h.idle()
	h.send(alice, "/agent")
	h.waitTextN("▶ test", 2)
}

// TestAgentRestrictedAndStrangers: a profile for approvers only is refused
// to others; a stranger's press of a menu button is refused; a name not
// offered is answered with the choices.
func TestAgentRestrictedAndStrangers(t *testing.T) {
	h := newHarness(t, "", offerAgents)
	h.send(bob, "/agent yolo")
	h.waitText("Only an approver can switch this conversation to yolo.")
	h.plat.Press(t.Context(), core.Action{Conv: conv, From: core.User{ID: "mallory"}, Value: "agent:other"})
	h.waitText("mallory")
	h.send(alice, "/agent nosuch")
	h.waitText(`No agent "nosuch" here. Choose one of: test, other, yolo, few.`)
	h.send(bob, "/agent few")
	h.waitText("You may not switch this conversation to few: ask an approver.")
	h.send(alice, "/status")
	h.waitText("Profile: test")
	h.send(core.User{ID: "boss"}, "/agent yolo")
	h.waitText("🔀 Switched to yolo (approvers only).")
	h.send(alice, "/status")
	h.waitText("Profile: yolo")
	if n := h.count("Switched to other"); n != 0 {
		t.Errorf("a stranger's press switched the agent")
	}
}

// TestAgentRemovedByReloadFallsBack: a reload that stops offering the
// picked profile sends the conversation back to the route's default, and
// the next turn says so.
func TestAgentRemovedByReloadFallsBack(t *testing.T) {
	h := newHarness(t, "", offerAgents)
	h.send(alice, "/agent other")
	h.waitText("Switched to other")
	h.idle()
	s := settings(h.prof)
	twoProfiles(s) // other is still configured, but no longer offered
	s.Platforms["fake"] = engine.PlatformSettings{AllowUsers: []string{"alice", "bob", "boss"}, Approvers: []string{"boss"}}
	h.eng.Reload(s)
	h.send(alice, "after reload")
	h.waitText("⚠️ The agent other is no longer offered here; back to test.")
	h.waitTextN("tokens", 1)
	h.idle()
	if got := h.session(); got.Profile != "test" || got.AgentID("other") != "" {
		t.Errorf("session = %+v; want the turn run by test", got)
	}
	h.send(alice, "again")
	h.waitTextN("tokens", 2)
	if n := h.count("no longer offered"); n != 1 {
		t.Errorf("the fallback was said %d times, want once", n)
	}
	h.send(alice, "/agent")
	h.waitText("This conversation has one agent: test")
}

// TestForgetSession: /forget deletes a session that is not the active one
// (from the real store), refuses the active one, and /sessions shows each
// session's agent.
func TestForgetSession(t *testing.T) {
	h := newHarness(t, "", offerAgents)
	h.send(alice, "/agent other")
	h.waitText("Switched to other")
	h.send(alice, "in default")
	h.waitTextN("tokens", 1)
	h.idle()
	h.send(alice, "/session work")
	h.waitText("Switched to new session work.")
	h.send(alice, "/forget work")
	h.waitText("work is the active session: switch to another with /session NAME first, or start it over with /new.")
	h.send(alice, "/sessions")
	h.waitText("  default — other, 1 turn(s), last ")
	h.send(alice, "/forget default")
	h.waitText("🗑 Deleted session default")
	h.idle()
	if _, ok, err := h.st.Session(t.Context(), conv, "default"); err != nil || ok {
		t.Fatalf("session default after /forget: found %v, err %v", ok, err)
	}
	h.send(alice, "/forget default")
	h.waitText("There is no session default here.")
	h.send(alice, "/forget")
	h.waitText("Name the session to delete: /forget NAME")
}

// TestUsageCommand: after a few turns (real agent, real store) /usage shows
// this session's, this conversation's and the platform's last 24 h figures
// from result.usage; the usage footer keeps working.
func TestUsageCommand(t *testing.T) {
	h := newHarness(t, "", nil)
	h.send(alice, "costly one")
	h.waitText("12 in / 34 out tokens · $0.2500")
	h.idle()
	h.send(alice, "/session work")
	h.waitText("Switched to new session work.")
	h.send(alice, "costly two")
	h.waitTextN("tokens", 2)
	h.idle()
	h.send(alice, "three")
	h.waitTextN("tokens", 3)
	h.idle()
	h.send(alice, "/usage")
	u := h.waitText("Usage reported by the agents:")
	for _, want := range []string{
		"This session (work): 2 turn(s), 24 in / 68 out tokens, $0.2500",
		"This conversation (2 session(s)): 3 turn(s), 36 in / 102 out tokens, $0.5000",
		"Last 24 h on fake: 3 turn(s), 36 in / 102 out tokens, $0.5000",
	} {
		if !strings.Contains(u.Post.Text, want) {
			t.Errorf("/usage lacks %q:\n%s", want, u.Post.Text)
		}
	}
	if got := h.session(); got.Usage.Turns != 1 || got.Usage.CostUSD != 0.25 {
		t.Errorf("default session usage in the store = %+v", got.Usage)
	}
}

// TestLimits: a user over the turns-per-hour or cost-per-day limit gets a
// plain answer saying when they can go on, and no agent starts; another
// user is not affected.
func TestLimits(t *testing.T) {
	h := newHarness(t, "", func(s *engine.Settings) {
		s.Limits = func(core.ConversationKey) engine.Limits { return engine.Limits{TurnsPerHour: 2} }
	})
	for i, text := range []string{"one", "two"} {
		h.send(alice, text)
		h.waitTextN("tokens", i+1)
		h.idle()
	}
	h.send(alice, "three")
	h.waitText("⏳ You have used your 2 turns for this hour here. You can go on at ")
	h.send(bob, "bob's turn")
	h.waitTextN("tokens", 3)
	h.idle()
	if n := h.count("three"); n != 0 {
		t.Errorf("the limited message reached the agent")
	}

	c := newHarness(t, "", func(s *engine.Settings) {
		s.Limits = func(core.ConversationKey) engine.Limits { return engine.Limits{CostPerDayUSD: 0.4} }
	})
	for i, text := range []string{"costly a", "costly b"} {
		c.send(alice, text)
		c.waitTextN("tokens", i+1)
		c.idle()
	}
	c.send(alice, "costly c")
	c.waitText("⏳ Your turns here have cost $0.50 in the last 24 h, the limit is $0.40. You can go on at ")
	c.idle()
	if n := c.count("tokens"); n != 2 {
		t.Errorf("%d turns ran, want 2: the one over the limit must not start an agent", n)
	}
}
