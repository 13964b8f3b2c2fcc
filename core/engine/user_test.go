package engine_test

import (
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/core/engine"
)

// TestAttachmentsGivenToTheProfilesUser: a profile with user: runs its
// agent as that account (issue 27, item 1), and the turn's attachments,
// which the bridge keeps 0600 in a 0700 directory of its own, are given to
// it, so the agent can still read them.
func TestAttachmentsGivenToTheProfilesUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("starting an agent as another user takes root")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody here:", err)
	}
	// The engine's temporary directory is under the test's, which only
	// root may enter; /tmp, the real one, is open to all.
	if err := os.Chmod(filepath.Dir(t.TempDir()), 0o711); err != nil {
		t.Fatal(err)
	}
	const script = `read -r turn; ` +
		`f=$(printf '%s' "$turn" | sed -n 's|.*"url":"file://\([^"]*\)".*|\1|p'); ` +
		`body=$(cat "$f" 2>&1); ` +
		`printf '{"type":"result","text":"uid=%s read=%s"}\n' "$(id -u)" "$body"`
	prof, err := agentproc.ParseProfile([]byte("command: /bin/sh\nargs: [-c, '"+strings.ReplaceAll(script, "'", "''")+"']\ncwd: /\nuser: nobody\n"), filepath.Join(t.TempDir(), "p.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, "", func(s *engine.Settings) { s.Profiles["test"] = prof })
	h.plat.AddFile("url", []byte("file body"))
	h.plat.Deliver(t.Context(), core.Message{Conv: conv, ID: "att", From: alice, Text: "see file",
		Attachments: []core.Attachment{{Kind: "file", Name: "notes.txt", Source: "url"}}})
	m := h.waitText("uid=")
	if want := "uid=" + nobody.Uid + " read=file body"; !strings.Contains(m.Post.Text, want) {
		t.Errorf("the agent said %q, want %q", m.Post.Text, want)
	}
}
