package demo

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
)

// intent is what the user's message asks the demo to show.
type intent int

const (
	intentEcho    intent = iota // anything else: echo with a recap
	intentHelp                  // "help"
	intentFail                  // "fail": an error event
	intentSlow                  // "slow": a ~10 s stream to try /stop on
	intentSetName               // "my name is Ada"
	intentAskName               // "what is my name?"
	intentTool                  // mentions writing, a file or a tool: permission prompt
	intentChart                 // mentions a chart: sends a PNG it draws
	intentNotes                 // asks for the notes: sends a text file
)

// The name patterns are compiled on first use: the agentbridge binary
// links the demo, but only the demo agent's process needs them.
var (
	setNameRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b(?:my name is|my name's|call me)\s+([\p{L}][\p{L}\p{M}'’-]*)`)
	})
	askNameRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b(?:what(?:'s|’s| is)|do you (?:know|remember))\s+my name\b|\bwho am i\b`)
	})
)

// toolWords are the words that ask for the pretend tool.
var toolWords = map[string]bool{
	"write": true, "writes": true, "writing": true,
	"file": true, "files": true, "tool": true, "tools": true,
}

// classify maps a trimmed message to an intent.
func classify(msg string) intent {
	lower := strings.ToLower(strings.Trim(msg, " \t\r\n.!?"))
	switch lower {
	case "help", "?", "/help":
		return intentHelp
	case "fail":
		return intentFail
	case "slow":
		return intentSlow
	}
	switch {
	case setNameRE().MatchString(msg):
		return intentSetName
	case askNameRE().MatchString(msg):
		return intentAskName
	}
	words := strings.FieldsFunc(lower, func(r rune) bool { return !unicode.IsLetter(r) })
	switch {
	case slices.Contains(words, "chart") || slices.Contains(words, "charts"):
		return intentChart
	case slices.Contains(words, "notes") && (slices.Contains(words, "send") || slices.Contains(words, "give")):
		return intentNotes
	}
	for _, w := range words {
		if toolWords[w] {
			return intentTool
		}
	}
	return intentEcho
}

// answer composes the reply for the intents answered by text alone.
func (a *agent) answer(in intent, msg string) string {
	turnNo := a.sess.Turns + 1
	switch in {
	case intentHelp:
		return helpText
	case intentSetName:
		name := setNameRE().FindStringSubmatch(msg)[1]
		a.sess.Name = name
		if a.sess.ID == "" {
			return fmt.Sprintf("Nice to meet you, **%s**! I run without a memory directory, though, so I will have forgotten by the next message.\n", name)
		}
		return fmt.Sprintf("Nice to meet you, **%s**! I'll remember that for this session.\n\n"+
			"- Ask me “what is my name?” in a later message.\n"+
			"- `/new` starts a fresh session, where I won't know it.\n", name)
	case intentAskName:
		if a.sess.Name == "" {
			return "I don't know your name yet. Tell me with `my name is …` and ask again.\n"
		}
		return fmt.Sprintf("Your name is %s. You told me earlier in this session (this is turn **%d**).\n", a.sess.Name, turnNo)
	}
	return a.echo(msg, turnNo)
}

// echo repeats the message with a short reflection and a recap of the
// previous one, showing that the session is remembered.
func (a *agent) echo(msg string, turnNo int) string {
	var b strings.Builder
	if a.sess.Name != "" {
		fmt.Fprintf(&b, "Hello again, %s. ", a.sess.Name)
	}
	if msg != "" {
		fmt.Fprintf(&b, "You said: **%s**\n\n", oneLine(msg, 200))
	} else {
		b.WriteString("You sent attachments without text.\n\n")
	}
	if a.sess.ID != "" {
		fmt.Fprintf(&b, "- This is turn **%d** of this session.\n", turnNo)
		if n := len(a.sess.History); n > 0 {
			fmt.Fprintf(&b, "- Before this you said: “%s”\n", oneLine(a.sess.History[n-1].User, 120))
		} else {
			b.WriteString("- This is the first thing you've told me.\n")
		}
	}
	if msg != "" {
		fmt.Fprintf(&b, "- %s\n", reflect(msg))
	}
	for _, at := range a.turn.Attachments {
		name := cmp.Or(at.Filename, at.Name, at.URL)
		fmt.Fprintf(&b, "- You attached `%s` (%s", oneLine(name, 80), at.Kind)
		if mt := cmp.Or(at.MIMEType, at.MIME); mt != "" {
			fmt.Fprintf(&b, ", %s", mt)
		}
		if at.Size > 0 {
			fmt.Fprintf(&b, ", %d bytes", at.Size)
		}
		b.WriteString(").\n")
	}
	b.WriteString("\nType `help` to see what else I can do.\n")
	return b.String()
}

// reflect is the demo's idea of a thoughtful remark.
func reflect(msg string) string {
	n := wordCount(msg)
	switch {
	case strings.HasSuffix(msg, "?"):
		return "That's a question — I'm only a demo, so I can't answer it, but a real agent behind this bridge would."
	case strings.HasSuffix(msg, "!"):
		return fmt.Sprintf("You sound excited: %d word%s and an exclamation mark.", n, plural(n))
	case n == 1:
		return "Just one word. Short and to the point."
	}
	return fmt.Sprintf("That's %d words; I streamed this reply back one word at a time.", n)
}

const helpText = "I'm the **agentbridge demo agent**. I run as a real AgentProc process, " +
	"so everything you see here works the same with a real agent:\n\n" +
	"- **Memory**: say `my name is Ada`, then ask `what is my name?`\n" +
	"- **Permission prompt**: ask me to `write a file`; I ask before using my pretend tool\n" +
	"- **Files**: say `draw a chart` for a picture, `send the notes` for a text file\n" +
	"- **Errors**: say `fail`\n" +
	"- **Stopping**: say `slow`, then `/stop` while I stream\n" +
	"- Anything else I echo back, with a recap of your previous message.\n\n" +
	"My memory is one JSON file per session:\n\n" +
	"```text\n$AGENTBRIDGE_DEMO_STATE/<session id>.json\n```\n"

// slowAnswer is streamed over about ten seconds.
func slowAnswer() string {
	return "I'm taking my time with this one, so you can see a long stream and try " +
		"`/stop` (or Ctrl-C in the terminal) while the words keep coming. " +
		"When the bridge stops me I get SIGTERM, flush what I have, and exit; " +
		"the chat then says the turn was stopped. If you let me finish, that works too. **Done.**\n"
}

// tool shows the permission flow with the pretend write_file tool.
func (a *agent) tool(ctx context.Context, msg string) error {
	if err := a.stream(ctx, "I'd use my pretend tool **write_file** to save a note to `notes.txt`.\n\n", a.delay); err != nil {
		return err
	}
	if !a.turn.Permission {
		return a.stream(ctx, "The bridge has approvals off for this profile (`permission: false`), "+
			"so I won't use it. Set `permission: true` in the profile to see an approval prompt.\n", a.delay)
	}
	content := fmt.Sprintf("Note from turn %d: %s", a.sess.Turns+1, oneLine(msg, 200))
	if err := a.out.permission(permissionRequest{
		RequestID:   "w1",
		ToolName:    "write_file",
		Description: "Write a note to notes.txt",
		Input:       map[string]any{"path": "notes.txt", "content": content},
	}); err != nil {
		return err
	}
	resp, err := a.awaitPermission(ctx, "w1")
	if err != nil {
		return err
	}
	if resp.Behavior == "allow" {
		if c, ok := updatedContent(resp.UpdatedInput); ok {
			content = c // F-PERM-2: the approver's edit wins
		}
		return a.stream(ctx, "✅ wrote notes.txt (pretend — nothing touched your disk)\n\n"+codeBlock(content), a.delay)
	}
	text := "❌ OK, I will not write notes.txt."
	if resp.Message != "" {
		text += fmt.Sprintf(" The bridge said: “%s”", oneLine(resp.Message, 200))
	}
	return a.stream(ctx, text+"\n", a.delay)
}

// awaitPermission reads stdin until the response to id arrives. Other lines
// are ignored. If stdin ends first, that is a deny: nobody can answer any
// more.
func (a *agent) awaitPermission(ctx context.Context, id string) (permissionResponse, error) {
	for {
		line, err := a.in.next(ctx)
		if ctx.Err() != nil {
			return permissionResponse{}, fmt.Errorf("demo: stopped: %w", ctx.Err())
		}
		if err == io.EOF {
			return permissionResponse{Behavior: "deny", Message: "stdin closed before an answer"}, nil
		}
		if err != nil {
			return permissionResponse{Behavior: "deny", Message: "stdin failed before an answer"}, nil
		}
		var r permissionResponse
		if json.Unmarshal(line, &r) != nil || r.Type != "permission_response" || r.RequestID != id {
			continue
		}
		if r.Behavior != "allow" && r.Message == "" && r.Behavior != "deny" {
			r.Message = fmt.Sprintf("unknown behavior %q", r.Behavior)
		}
		return r, nil
	}
}

// updatedContent returns updated_input.content when the approver supplied it.
func updatedContent(raw json.RawMessage) (string, bool) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "", false
	}
	var in struct {
		Content *string `json:"content"`
	}
	if json.Unmarshal(raw, &in) != nil || in.Content == nil {
		return "", false
	}
	return *in.Content, true
}

// codeBlock fences s with more backticks than any run inside it.
func codeBlock(s string) string {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", max(3, longest+1))
	return fence + "text\n" + s + "\n" + fence + "\n"
}

// chunks splits text into words, each with the whitespace after it, so the
// chunks concatenate back to text exactly.
func chunks(text string) []string {
	var out []string
	start, inSpace, word := 0, false, false
	for i, r := range text {
		space := unicode.IsSpace(r)
		if inSpace && !space && word {
			out = append(out, text[start:i])
			start = i
		}
		inSpace, word = space, word || !space
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

// wordCount counts whitespace-separated words.
func wordCount(s string) int { return len(strings.Fields(s)) }

// oneLine collapses whitespace and cuts s to n runes, for quoting.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
