package platformtest_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/platformtest"
)

// The in-memory fake keeps the contract it stands in for (it has no rate
// budget of its own: tests inject the refusals they need).
func TestFakeKeepsThePlatformContract(t *testing.T) {
	p := platformtest.New("fake", platformtest.DefaultLimits)
	conv := core.ConversationKey{Platform: "fake", Channel: "C1"}
	platformtest.TestPlatform(t, p, platformtest.Hooks{
		Conv:     conv,
		Shown:    shown(p),
		Requests: func() int { return len(p.Calls()) },
		Missing:  core.MessageRef{Conv: conv, ID: "never-sent"},
		RateLimitSend: func(d time.Duration) {
			p.RateLimit(platformtest.OpSend, d, 1)
		},
		Unbudgeted: true,
	})
}

func shown(p *platformtest.Platform) func(core.MessageRef) (string, bool) {
	return func(ref core.MessageRef) (string, bool) {
		for _, m := range p.Messages(ref.Conv) {
			if m.Ref == ref {
				return m.Post.Text, true
			}
		}
		return "", false
	}
}

// The fake's SendFile records the file with its bytes, in the
// conversation's order, and refuses a file over MaxFileBytes.
func TestFakeSendFile(t *testing.T) {
	lim := platformtest.DefaultLimits
	lim.MaxFileBytes = 8
	p := platformtest.New("fake", lim)
	conv := core.ConversationKey{Platform: "fake", Channel: "C1"}
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("12345678"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(t.Context(), conv, core.Post{Text: "before"}); err != nil {
		t.Fatal(err)
	}
	ref, err := p.SendFile(t.Context(), conv, core.File{Name: "a.txt", Path: path, Caption: "cap"})
	if err != nil {
		t.Fatal(err)
	}
	msgs := p.Messages(conv)
	if len(msgs) != 2 || msgs[1].File == nil || msgs[1].Ref != ref || string(msgs[1].File.Data) != "12345678" || msgs[1].Post.Text != "cap" {
		t.Fatalf("messages %+v, want the text then the file with its bytes and caption", msgs)
	}
	if err := os.WriteFile(path, []byte("123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := p.SendFile(t.Context(), conv, core.File{Name: "b.txt", Path: path}); err == nil {
		t.Error("a file over MaxFileBytes was taken")
	}
	if n := len(p.Files(conv)); n != 1 {
		t.Errorf("%d files recorded, want 1", n)
	}
}
