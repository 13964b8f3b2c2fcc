package telegram

import (
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/core"
)

// TestQuoteFor: a group post quotes the message its ReplyTo names, only if
// that message is in the same chat; private chats and malformed or foreign
// ids never quote.
func TestQuoteFor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		chat    int64
		replyTo string
		want    int
	}{
		{-100, "-100:7", 7},
		{-100, "", 0},
		{-100, "-200:7", 0},  // another chat's message
		{-100, "-100:x", 0},  // not a message id
		{-100, "-100:-3", 0}, // not a message id
		{-100, "7", 0},       // not a Telegram message id at all
		{1001, "1001:7", 0},  // private chats never quote
	} {
		if got := quoteFor(tc.chat, core.Post{ReplyTo: tc.replyTo}); got != tc.want {
			t.Errorf("quoteFor(%d, %q) = %d; want %d", tc.chat, tc.replyTo, got, tc.want)
		}
	}
}

// Telegram's command menu is the bridge's command table, in its order.
func TestMenuCommandsAreTheCommandTable(t *testing.T) {
	t.Parallel()
	menu := menuCommands()
	if len(menu) != len(core.Commands) {
		t.Fatalf("menu has %d commands, the table %d", len(menu), len(core.Commands))
	}
	for i, c := range core.Commands {
		if menu[i].Command != c.Name || !strings.HasPrefix(menu[i].Description, c.Description) {
			t.Errorf("menu[%d] = %+v, want %s: %s", i, menu[i], c.Name, c.Description)
		}
	}
}
