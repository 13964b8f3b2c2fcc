package engine

import (
	"strings"
	"unicode"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/render"
)

// maxNameRunes bounds a person's name as the bridge shows it or tells an
// agent.
const maxNameRunes = 64

// displayName is how the bridge names u in chat text and to agents: the
// platform's display name, else the id, without control or format
// characters (bidi overrides, zero-width ones), with each run of white space
// one space, and at most maxNameRunes long. People choose their own display
// names, so a name must not break a line, reorder text or run on. It is
// still literal text: Markdown the engine composes escapes it (nameMD);
// plain notices are escaped by the adapters.
func displayName(u core.User) string {
	clean := strings.Map(func(r rune) rune {
		switch {
		case unicode.IsSpace(r):
			return ' '
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			return -1
		}
		return r
	}, u.Name)
	name := strings.Join(strings.Fields(clean), " ")
	if r := []rune(name); len(r) > maxNameRunes {
		name = string(r[:maxNameRunes]) + "…"
	}
	if name == "" {
		return u.ID
	}
	return name
}

// nameMD is u's name for Markdown the engine renders into the platform's
// dialect (render.Render): escaped so that a name like "[CLICK](https://…)"
// stays literal text on every platform.
func nameMD(u core.User) string { return render.EscapeMarkdown(displayName(u)) }
