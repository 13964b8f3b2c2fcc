package telegram

import (
	"strconv"
	"testing"

	"github.com/agentbridge/agentbridge/core"
)

// TestInboundIsBounded: past maxInbound conversations the oldest is
// forgotten, and private chats are never recorded.
func TestInboundIsBounded(t *testing.T) {
	a := &Adapter{inbound: map[string]*inboundMsg{}}
	conv := func(i int) core.ConversationKey {
		return core.ConversationKey{Platform: Name, Channel: "-100" + strconv.Itoa(i)}
	}
	a.noteInbound(core.ConversationKey{Platform: Name, Channel: "1001"}, 1001, 1)
	for i := range maxInbound + 1 {
		a.noteInbound(conv(i), -100-int64(i), i+1)
	}
	a.noteInbound(conv(5), -105, 99) // an update of a known conversation evicts nothing
	if len(a.inbound) != maxInbound {
		t.Fatalf("inbound holds %d conversations; want %d", len(a.inbound), maxInbound)
	}
	p := core.Post{Text: "x"}
	if got := a.quoteFor(conv(0), -100, p); got != 0 {
		t.Errorf("oldest conversation still quotes %d", got)
	}
	if got := a.quoteFor(conv(maxInbound), -1, p); got != maxInbound+1 {
		t.Errorf("newest conversation quotes %d; want %d", got, maxInbound+1)
	}
	if got := a.quoteFor(conv(5), -105, p); got != 99 {
		t.Errorf("updated conversation quotes %d; want 99", got)
	}
	if got := a.quoteFor(core.ConversationKey{Platform: Name, Channel: "1001"}, 1001, p); got != 0 {
		t.Errorf("a private chat quotes %d", got)
	}
}
