package agentproc

import (
	"context"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseAgentUser(t *testing.T) {
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody here:", err)
	}
	for _, spec := range []string{"nobody", nobody.Uid} {
		u, err := parseAgentUser(spec)
		if err != nil || u.Name != "nobody" || u.Home != nobody.HomeDir || strings.Join([]string{itoa(u.UID), itoa(u.GID)}, ":") != nobody.Uid+":"+nobody.Gid {
			t.Errorf("%q: %+v, %v; want nobody's account", spec, u, err)
		}
	}
	if u, err := parseAgentUser("4242:4343"); err != nil || u.UID != 4242 || u.GID != 4343 || u.Groups != nil {
		t.Errorf("4242:4343: %+v, %v", u, err)
	}
	for spec, want := range map[string]string{
		"":                  "must name a user",
		"no-such-user-here": `no user named "no-such-user-here" on this system`,
		"1:x":               `"1:x" is not uid:gid`,
		"4294967295:0":      "is not uid:gid",
		"4242":              "no account with uid 4242 on this system (give uid:gid",
	} {
		if _, err := parseAgentUser(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", spec, err, want)
		}
	}

	// A bridge that is not root cannot start an agent as anyone else, and
	// is told so when the profile is read, with the line.
	geteuid = func() int { return 1000 }
	t.Cleanup(func() { geteuid = os.Geteuid })
	_, err = ParseProfile([]byte("command: a\nuser: nobody\n"), "p.yaml")
	if err == nil || !strings.Contains(err.Error(), "p.yaml:2: user: agentbridge runs as uid 1000, not root, so it cannot start the agent as nobody (uid "+nobody.Uid+"); run agentbridge as root, or leave user: out") {
		t.Errorf("not root: %v", err)
	}
	if p, err := ParseProfile([]byte("command: a\nuser: 1000:1000\n"), "p.yaml"); err != nil || p.User.UID != 1000 {
		t.Errorf("its own uid: %v", err)
	}
}

func itoa(n uint32) string { return strconv.FormatUint(uint64(n), 10) }

// TestAgentRunsAsUser attacks what issue 27's first item leaves an agent of
// a root bridge: reading any file. With user: nobody, the agent runs as
// nobody with nobody's HOME, cannot read a 0600 file of the bridge's, and
// can read what the bridge gave it with Own (a turn's attachments). The same
// agent without user: reads the file, so the test can fail.
func TestAgentRunsAsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("starting an agent as another user takes root")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody here:", err)
	}
	dir, err := os.MkdirTemp("", "agentbridge-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { // anyone may look in; the file's mode decides
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(secret, []byte("token-of-the-bridge"), 0o600); err != nil {
		t.Fatal(err)
	}
	given := filepath.Join(dir, "turn") // an attachment's directory: the bridge's alone
	if err := os.Mkdir(given, 0o700); err != nil {
		t.Fatal(err)
	}
	attachment := filepath.Join(given, "01-photo.txt")
	if err := os.WriteFile(attachment, []byte("the-attachment"), 0o600); err != nil {
		t.Fatal(err)
	}

	const script = `read -r turn; ` +
		`if s=$(cat "$SECRET" 2>/dev/null); then s="read:$s"; else s=denied; fi; ` +
		`a=$(cat "$ATTACHMENT" 2>/dev/null) || a=denied; ` +
		`printf '{"type":"result","text":"uid=%s home=%s user=%s secret=%s attachment=%s"}\n' "$(id -u)" "$HOME" "$USER" "$s" "$a"`
	profile := func(yaml string) *Profile {
		t.Helper()
		p, err := ParseProfile([]byte(yaml+"command: /bin/sh\nargs: [-c, '"+strings.ReplaceAll(script, "'", "''")+"']\ncwd: "+dir+"\nenv:\n  SECRET: "+secret+"\n  ATTACHMENT: "+attachment+"\n"), filepath.Join(dir, "p.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	if o := run(t, ctx, profile(""), Turn{Message: "hi"}, Options{}); !strings.Contains(o.Reply, "uid=0 ") || !strings.Contains(o.Reply, "secret=read:token-of-the-bridge") {
		t.Fatalf("as root the agent did not read the file (%q, stderr %q): the test proves nothing", o.Reply, o.Stderr)
	}
	p := profile("user: nobody\n")
	for _, path := range []string{given, attachment} {
		if err := p.Own(path); err != nil {
			t.Fatal(err)
		}
	}
	o := run(t, ctx, p, Turn{Message: "hi"}, Options{})
	want := "uid=" + nobody.Uid + " home=" + nobody.HomeDir + " user=nobody secret=denied attachment=the-attachment"
	if o.Reply != want {
		t.Errorf("as nobody the agent saw %q (stderr %q), want %q", o.Reply, o.Stderr, want)
	}

	// A working directory only root may enter: the diagnosis names the
	// user, not a command that is "not executable".
	closed := filepath.Join(dir, "closed")
	if err := os.Mkdir(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	p.Cwd = closed
	o = run(t, ctx, p, Turn{Message: "hi"}, Options{})
	if want := `agent command "/bin/sh" could not start as user nobody (permission denied): that user must be able to enter "` + closed + `" and run the command`; o.ExitCode != 127 || o.Diagnosis != want {
		t.Errorf("closed cwd: exit %d, diagnosis %q; want 127 and %q", o.ExitCode, o.Diagnosis, want)
	}
}
