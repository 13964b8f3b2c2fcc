package discordtest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestReadyBeforeAnythingOnceConnected checks the order a bot sees after
// identify when a test acts as soon as Connected reports true: READY first,
// then the test's op 7. discordgo's Open reads that first event holding its
// session lock, and an op 7 there deadlocks it, so the fake must never let
// anything overtake READY. The race it guards against was narrow, hence the
// rounds.
func TestReadyBeforeAnythingOnceConnected(t *testing.T) {
	const token = "tok"
	s := NewServer(token)
	defer s.Close()
	gw := "ws" + strings.TrimPrefix(s.URL, "http") + "/gw/"
	for round := range 200 {
		ws, _, err := websocket.DefaultDialer.Dial(gw, nil)
		if err != nil {
			t.Fatal(err)
		}
		ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		var hello struct{ Op int }
		if err := ws.ReadJSON(&hello); err != nil || hello.Op != 10 {
			t.Fatalf("round %d: hello = %+v, %v; want op 10", round, hello, err)
		}
		if err := ws.WriteJSON(map[string]any{"op": 2, "d": map[string]any{"token": "Bot " + token, "intents": 0}}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		ok := s.Wait(ctx, s.Connected)
		cancel()
		if !ok {
			t.Fatalf("round %d: never connected", round)
		}
		s.Reconnect()
		var got []string
		for range 2 {
			var m struct {
				Op int
				T  string
			}
			if err := ws.ReadJSON(&m); err != nil {
				t.Fatalf("round %d: read: %v", round, err)
			}
			got = append(got, m.T)
			if m.Op == 7 {
				got[len(got)-1] = "op 7"
			}
		}
		ws.Close()
		if got[0] != "READY" || got[1] != "op 7" {
			t.Fatalf("round %d: bot read %q, want [READY op 7]", round, got)
		}
	}
}
