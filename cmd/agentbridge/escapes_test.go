package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// The escapes an agent prints to take over the terminal it is shown on
// (issue 27, item 6): OSC 52 writes the clipboard, OSC 0 the window title,
// and \r ESC [K erases the line so far, hiding what came before it. The C1
// forms (U+009B CSI, U+009D OSC) pass JSON raw.
const (
	escClipboard = "\x1b]52;c;cm0gLXJmIH4=\x07"
	escTitle     = "\x1b]0;pwned\x07"
	escHide      = "\r\x1b[K"
)

// escapesAgent streams text with those escapes, asks permission with them in
// the tool's name, description and input, and fails with them in its error.
func escapesAgent(in *bufio.Reader, emit func(any)) int {
	type obj = map[string]any
	emit(obj{"type": "partial", "text": "clip" + escClipboard + " title" + escTitle + "\n"})
	emit(obj{"type": "partial", "text": "SECRET-PLAN" + escHide + "all good\n"})
	emit(obj{"type": "permission_request", "request_id": "r1", "tool_name": "Bash\u009b2K",
		"description": escHide + "read a file",
		"input":       obj{"command": "rm -rf ~" + escHide + "\u009d0;t\u009c\x7fcat notes"}})
	if _, err := in.ReadString('\n'); err != nil {
		return 3
	}
	emit(obj{"type": "partial", "text": "after" + escHide + "\n"})
	emit(obj{"type": "error", "message": "END-OF-TURN" + escTitle})
	return 0
}

// controls returns the C0 and C1 controls (bar newline and tab) and DELs in
// s: what a terminal would obey instead of show.
func controls(s string) []string {
	var found []string
	for _, r := range s {
		if (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r < 0xa0) {
			found = append(found, fmt.Sprintf("%U", r))
		}
	}
	return found
}

// TestRunShowsEscapes attacks run with an agent's terminal escapes (issue
// 27, item 6): on stdout and stderr — streamed text, the permission prompt
// (tool, description, input), the turn's error — every control character
// but newline and tab is shown (␛, ␍, ␇, ␡, ␛[ for U+009B), never obeyed;
// --json keeps the agent's text as it was.
func TestRunShowsEscapes(t *testing.T) {
	prof := writeProfile(t, "escapes", "permission: true\n")
	code, stdout, stderr := runCLI(t, context.Background(), "y\n", nil, "--profile", prof, "--permission", "ask", "hi")
	if code != 1 {
		t.Errorf("exit %d, want 1 (the agent's error event)", code)
	}
	for name, out := range map[string]string{"stdout": stdout, "stderr": stderr} {
		if c := controls(out); len(c) > 0 {
			t.Errorf("%s reaches the terminal with controls %v:\n%s", name, c, out)
		}
	}
	for _, want := range []string{
		"clip␛]52;c;cm0gLXJmIH4=␇ title␛]0;pwned␇\n",
		"SECRET-PLAN␍␛[Kall good\n",
		"after␍␛[K\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout %q does not show %q", stdout, want)
		}
	}
	for _, want := range []string{
		"permission: Bash␛[2K — ␍␛[Kread a file\n",
		`input: {"command":"rm -rf ~\r\u001b[K␛]0;t␛\␡cat notes"}`,
		"turn failed: END-OF-TURN␛]0;pwned␇\n",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q does not show %q", stderr, want)
		}
	}

	code, stdout, stderr = runCLI(t, context.Background(), "", nil, "--profile", prof, "--permission", "allow", "--json", "hi")
	var j runJSON
	if err := json.Unmarshal([]byte(stdout), &j); err != nil || code != 1 {
		t.Fatalf("--json: exit %d, stdout %q stderr %q: %v", code, stdout, stderr, err)
	}
	if got := strings.Join(j.Partials, ""); !strings.Contains(got, "SECRET-PLAN"+escHide) || !strings.Contains(got, escClipboard) || j.Error != "END-OF-TURN"+escTitle {
		t.Errorf("--json changed the agent's text: partials %q, error %q", got, j.Error)
	}
}

// TestChatShowsEscapes attacks chat the same way, through the console
// adapter and the engine's permission prompt: the agent's text, its
// request and its error, and a user's name with escapes in it, are shown,
// never obeyed.
func TestChatShowsEscapes(t *testing.T) {
	t.Setenv("USER", "ada"+escTitle)
	c := startChat(t, t.TempDir(), "--profile", writeProfile(t, "escapes", "permission: true\n"))
	c.waitFor("Type /help", 1)
	c.say("hi")
	c.waitFor("[A]llow / [D]eny / Allow for this [s]ession", 1)
	c.say("a")
	c.waitFor("END-OF-TURN", 1)
	c.quit()
	out := c.output()
	if cs := controls(out); len(cs) > 0 {
		t.Errorf("chat reaches the terminal with controls %v:\n%s", cs, out)
	}
	for _, want := range []string{
		"clip␛]52;c;cm0gLXJmIH4=␇ title␛]0;pwned␇\n",
		"SECRET-PLAN␍␛[Kall good\n",
		"Bash␛[2K",
		"␛[Kread a file", // the engine trims the description's leading space (\r)
		"END-OF-TURN␛]0;pwned␇",
		"Allowed by ada", // the engine drops controls from names
	} {
		if !strings.Contains(out, want) {
			t.Errorf("chat does not show %q:\n%s", want, out)
		}
	}
}

// TestCheckShowsEscapes: check's text report quotes what the agent printed,
// and shows its escapes too.
func TestCheckShowsEscapes(t *testing.T) {
	_, out, _ := checkCLI(t, writeProfile(t, "escapes", "permission: true\n"))
	if c := controls(out); len(c) > 0 {
		t.Errorf("the report reaches the terminal with controls %v:\n%s", c, out)
	}
}
