package main

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/adapters/discord/discordtest"
	"github.com/agentbridge/agentbridge/adapters/slack/slacktest"
	"github.com/agentbridge/agentbridge/adapters/telegram/telegramtest"
)

// The demo agent's "draw a chart" sends a PNG between two lines of text
// (issue 22); through serve each platform shows it where it was sent.
const (
	chartBefore = "Here is a bar chart"
	chartAfter  = "busiest day"
)

// isPNG reports whether data is a PNG image that decodes.
func isPNG(data []byte) bool {
	_, err := png.DecodeConfig(bytes.NewReader(data))
	return err == nil
}

// inOrder reports whether the indexes are all found and increasing.
func inOrder(idx ...int) bool {
	for i, n := range idx {
		if n < 0 || (i > 0 && n <= idx[i-1]) {
			return false
		}
	}
	return true
}

// TestServeTelegramFiles: in a private chat the chart is a photo between
// the texts around it; a file the fake refuses as too large (its limit
// lowered) becomes a line in the reply naming it, and serve goes on.
func TestServeTelegramFiles(t *testing.T) {
	const token = "987654:FILES-SECRET"
	t.Setenv("AGENTBRIDGE_DEMO_DELAY", "1ms")
	t.Setenv("AGENTBRIDGE_TEST_TG_TOKEN", token)
	fake := telegramtest.NewServer(token)
	defer fake.Close()
	cfg := writeConfig(t, fmt.Sprintf(`store: %s
profiles: {demo: builtin:demo}
default_profile: demo
telegram:
  enabled: true
  token: ${AGENTBRIDGE_TEST_TG_TOKEN}
  api_url: %s
  allow_users: ["1001"]
`, filepath.Join(t.TempDir(), "bridge.db"), fake.URL))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stderr tgLogBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve", "--config", cfg}, nil, &bytes.Buffer{}, &stderr) }()
	wait := func(what string, cond func([]telegramtest.Message) bool) []telegramtest.Message {
		t.Helper()
		timeout := time.After(60 * time.Second)
		for {
			ch := fake.Changed()
			if msgs := fake.Messages(1001); cond(msgs) {
				return msgs
			}
			select {
			case <-ch:
			case <-timeout:
				t.Fatalf("%s: messages %+v\nlog:\n%s", what, fake.Messages(1001), stderr.String())
			case err := <-done:
				t.Fatalf("serve returned early: %v\n%s", err, stderr.String())
			}
		}
	}
	text := func(s string) func(telegramtest.Message) bool {
		return func(m telegramtest.Message) bool { return m.File == nil && strings.Contains(m.Text, s) }
	}
	alice := telegramtest.User(1001, "Alice", "alice")

	fake.Push(telegramtest.PrivateMessage(1, alice, "draw a chart"))
	msgs := wait("the chart between its texts", func(msgs []telegramtest.Message) bool {
		return slices.IndexFunc(msgs, text(chartAfter)) >= 0
	})
	chart := slices.IndexFunc(msgs, func(m telegramtest.Message) bool { return m.File != nil && m.File.Name == "chart.png" })
	if !inOrder(slices.IndexFunc(msgs, text(chartBefore)), chart, slices.IndexFunc(msgs, text(chartAfter))) {
		t.Fatalf("messages %+v: want the text before, chart.png, the text after", msgs)
	}
	if f := msgs[chart].File; f.Method != "sendPhoto" || !isPNG(f.Data) {
		t.Errorf("chart.png went with %s (%d bytes, a PNG: %v); want a photo", f.Method, len(f.Data), isPNG(f.Data))
	}

	fake.SetMaxUpload(10)
	fake.Push(telegramtest.PrivateMessage(2, alice, "send the notes"))
	msgs = wait("the refused file's line", func(msgs []telegramtest.Message) bool {
		return slices.IndexFunc(msgs, text("notes.txt could not be sent")) >= 0 && slices.IndexFunc(msgs, text("a plain text file")) >= 0
	})
	line := msgs[slices.IndexFunc(msgs, text("notes.txt could not be sent"))].Text
	if !strings.Contains(line, "50 MB") {
		t.Errorf("refusal line %q; want it to name Telegram's limit", line)
	}
	if slices.IndexFunc(msgs, func(m telegramtest.Message) bool { return m.File != nil && m.File.Name == "notes.txt" }) >= 0 {
		t.Error("notes.txt was posted over the fake's limit")
	}
	// Too large is final: the file is not uploaded again.
	if n := len(fake.Calls("sendDocument")); n != 1 {
		t.Errorf("%d sendDocument calls; want 1, no retry of a file Telegram refused as too large", n)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve = %v after cancel", err)
	}
	if strings.Contains(stderr.String(), "FILES-SECRET") {
		t.Error("token in serve's log")
	}
}

// TestServeSlackFiles: the chart is uploaded into the mention's thread
// between the texts around it, with native streaming (the stream ends at
// the file and the text after it goes on) and without.
func TestServeSlackFiles(t *testing.T) {
	for _, native := range []bool{false, true} {
		t.Run(fmt.Sprintf("native_streaming=%v", native), func(t *testing.T) {
			fake := slacktest.NewServer(slacktest.Options{})
			defer fake.Close()
			t.Setenv("AGENTBRIDGE_DEMO_DELAY", "1ms")
			t.Setenv("TEST_SLACK_BOT_TOKEN", fake.Options().BotToken)
			t.Setenv("TEST_SLACK_APP_TOKEN", fake.Options().AppToken)
			cfg := writeConfig(t, fmt.Sprintf(`store: %s
profiles: {demo: builtin:demo}
default_profile: demo
presenter: {placeholder_delay: 0s}
slack:
  enabled: true
  api_url: %s
  bot_token: ${TEST_SLACK_BOT_TOKEN}
  app_token: ${TEST_SLACK_APP_TOKEN}
  allow_users: [U1]
  native_streaming: %t
`, filepath.Join(t.TempDir(), "bridge.db"), fake.APIURL(), native))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stderr := &lockedBuffer{}
			done := make(chan error, 1)
			go func() { done <- run(ctx, []string{"serve", "--config", cfg}, nil, &bytes.Buffer{}, stderr) }()
			wait := func(what string, cond func(*slacktest.State) bool) {
				t.Helper()
				wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
				defer wcancel()
				if err := fake.WaitFor(wctx, cond); err != nil {
					t.Fatalf("%s: %v\nserve stderr:\n%s", what, err, stderr.String())
				}
			}
			wait("socket mode connected", func(s *slacktest.State) bool { return s.Connected() > 0 })
			const thread = "500.000001"
			fake.SendEvent("Ev1", map[string]any{"type": "app_mention", "user": "U1", "text": "<@UBOT> draw a chart",
				"ts": thread, "channel": "C1", "event_ts": thread})
			wait("the text after the chart", func(s *slacktest.State) bool {
				m, ok := s.Message(thread, chartAfter)
				return ok && !m.Streaming
			})
			var msgs []slacktest.Message
			for _, m := range fake.Messages() {
				if m.Channel == "C1" && m.ThreadTS == thread {
					msgs = append(msgs, m)
				}
			}
			text := func(s string) func(slacktest.Message) bool {
				return func(m slacktest.Message) bool { return m.File == nil && strings.Contains(m.Text, s) }
			}
			chart := slices.IndexFunc(msgs, func(m slacktest.Message) bool { return m.File != nil && m.File.Name == "chart.png" })
			if !inOrder(slices.IndexFunc(msgs, text(chartBefore)), chart, slices.IndexFunc(msgs, text(chartAfter))) {
				t.Fatalf("thread holds %+v: want the text before, chart.png, the text after", msgs)
			}
			if !isPNG(msgs[chart].File.Data) {
				t.Errorf("chart.png holds %d bytes that are not a PNG", len(msgs[chart].File.Data))
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("serve = %v after cancel", err)
			}
		})
	}
}

// TestServeDiscordFiles: the chart is a message with chart.png attached in
// the mention's thread, between the texts around it, pinging nobody.
func TestServeDiscordFiles(t *testing.T) {
	t.Setenv("AGENTBRIDGE_DEMO_DELAY", "1ms")
	t.Setenv("AGENTBRIDGE_TEST_DISCORD_TOKEN", discordTestToken)
	fake := discordtest.NewServer(discordTestToken)
	defer fake.Close()
	fake.AddChannel(discordtest.Channel{ID: "C1", Type: 0, GuildID: "G1"})
	fake.AddChannel(discordtest.Channel{ID: "T1", Type: 11, GuildID: "G1", ParentID: "C1", OwnerID: "999"})
	stop, stderr := serveDiscord(t, fake, filepath.Join(t.TempDir(), "bridge.db"), "")
	waitDiscord(t, fake, "gateway", fake.Connected)
	fake.Dispatch("MESSAGE_CREATE", discordtest.MessageCreate("M1", "T1", "G1", discordAlice, "draw a chart", true))
	waitDiscord(t, fake, "the text after the chart", func() bool { return hasContent(fake, "T1", chartAfter) })
	msgs := fake.Messages("T1")
	text := func(s string) func(discordtest.Message) bool {
		return func(m discordtest.Message) bool { return len(m.Files) == 0 && strings.Contains(m.Content, s) }
	}
	chart := slices.IndexFunc(msgs, func(m discordtest.Message) bool { return len(m.Files) == 1 && m.Files[0].Name == "chart.png" })
	if !inOrder(slices.IndexFunc(msgs, text(chartBefore)), chart, slices.IndexFunc(msgs, text(chartAfter))) {
		t.Fatalf("thread holds %+v: want the text before, chart.png, the text after\n%s", msgs, stderr.String())
	}
	if m := msgs[chart]; !isPNG(m.Files[0].Data) || m.Files[0].ContentType != "image/png" || !strings.Contains(string(m.AllowedMentions), `"parse":[]`) {
		t.Errorf("chart.png message %+v: want a PNG, image/png, no mentions", m)
	}
	if err := stop(); err != nil {
		t.Fatalf("serve = %v after cancel", err)
	}
}
