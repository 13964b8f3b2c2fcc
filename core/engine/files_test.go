package engine_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/core/engine"
	"github.com/agentbridge/agentbridge/core/platformtest"
	"github.com/agentbridge/agentbridge/internal/testagent"
)

// fileHarness is a harness whose agent works in a directory of its own
// (with the bridge's config.yaml in it, private) next to a secret file
// outside it, on a platform that takes files up to 2000 bytes.
func fileHarness(t *testing.T, obs engine.Observer) (*harness, string) {
	t.Helper()
	base := t.TempDir()
	cwd := filepath.Join(base, "work")
	secret := filepath.Join(base, "secret.txt")
	if err := os.Mkdir(cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	for path, data := range map[string]string{secret: "TOP SECRET", filepath.Join(cwd, "config.yaml"): "token: CONFIG SECRET"} {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	h := buildHarness(t, "", func(s *engine.Settings) {
		p := s.Profiles["test"]
		p.Cwd = cwd
		p.Env[testagent.SecretEnv] = secret
	}, func(p *platformtest.Platform) { p.SetMaxFileBytes(2000) }, func(o *engine.Options) {
		o.Private = []string{filepath.Join(cwd, "config.yaml")}
		o.Observer = obs
	})
	return h, cwd
}

// TestAgentFilesInTheChat: the files an agent sends come where it sent
// them, between its lines of text; every one that cannot go is a line
// saying why — a symlink out of its cwd, a ../ path, the bridge's own
// config, a file over the platform's limit, an entry without a url, a
// scheme the bridge does not take — and a link stays a link (X-FILE-1..4).
// No secret byte reaches the chat.
func TestAgentFilesInTheChat(t *testing.T) {
	obs := &counts{}
	h, _ := fileHarness(t, obs)
	h.send(alice, "files")
	h.waitText("after")
	h.idle()

	var got []string
	for _, m := range h.plat.Messages(conv) {
		if m.File != nil {
			got = append(got, "["+m.File.Meta.Name+"]")
			if strings.Contains(string(m.File.Data), "SECRET") {
				t.Errorf("file %s carries a secret", m.File.Meta.Name)
			}
			continue
		}
		got = append(got, m.Post.Text)
		if strings.Contains(m.Post.Text, "SECRET") {
			t.Errorf("message shows a secret: %q", m.Post.Text)
		}
	}
	if len(got) != 5 || got[0] != "before" || got[1] != "[chart.png]" || got[2] != "middle" || got[3] != "[notes.txt]" {
		t.Fatalf("conversation shows %q; want before, [chart.png], middle, [notes.txt], then the rest", got)
	}
	files := h.plat.Files(conv)
	if string(files[0].Data) != string(testagent.PNG) || files[0].Meta.MIME != "image/png" || files[0].Meta.Kind != "image" {
		t.Errorf("chart.png arrived as %+v", files[0].Meta)
	}
	if string(files[1].Data) != "the notes\n" {
		t.Errorf("notes.txt arrived as %q", files[1].Data)
	}
	rest := got[4]
	for _, want := range []string{
		"📎 escape.txt refused: a file:// URL must name a file in the agent's working directory",
		"📎 secret.txt refused: a file:// URL must name a file in the agent's working directory",
		"📎 config.yaml refused: the bridge's own files",
		"📎 big.bin is 3 KB, over Fake's 2 KB limit",
		"📎 nourl.txt refused: url is missing",
		"report.pdf",
		"https://example.com/report.pdf",
		`📎 x.txt refused: the scheme "ftp" is not one the bridge takes`,
		"after",
	} {
		if !strings.Contains(rest, want) {
			t.Errorf("the reply's end lacks %q:\n%s", want, rest)
		}
	}
	if i, j := strings.Index(rest, "escape.txt"), strings.Index(rest, "after"); i > j {
		t.Errorf("refusals come after the text that followed them:\n%s", rest)
	}
	for result, n := range map[string]int{"file:sent": 2, "file:outside": 3, "file:too_large": 1, "file:malformed": 1, "file:link": 1, "file:scheme": 1} {
		if got := obs.get(result); got != n {
			t.Errorf("observer counted %s %d times, want %d", result, got, n)
		}
	}
}

// TestAgentFileFlood: an agent that sends 20 files in one event gets 10
// (the default per turn) and a line for each of the others; the turn
// goes on.
func TestAgentFileFlood(t *testing.T) {
	h, _ := fileHarness(t, nil)
	h.send(alice, "files-flood:20")
	h.waitText("FLOOD-SENT")
	h.idle()
	files := h.plat.Files(conv)
	var names []string
	for _, f := range files {
		names = append(names, f.Meta.Name)
	}
	if len(files) != 10 || !slices.Equal(names[:2], []string{"f1.txt", "f2.txt"}) || string(files[0].Data) != "file 1" {
		t.Fatalf("files %q, want f1.txt … f10.txt", names)
	}
	if n := h.count("over the limit of 10 files per turn"); n != 1 {
		t.Errorf("%d messages name the per-turn limit; messages %q", n, h.plat.Texts(conv))
	}
	last := h.plat.Texts(conv)
	if text := last[len(last)-1]; strings.Count(text, "not sent: over the limit of 10 files per turn") != 10 || !strings.Contains(text, "FLOOD-SENT") {
		t.Errorf("the reply after the files: %q", text)
	}
}
