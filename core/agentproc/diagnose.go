// This file: spec/protocol.md, "Exit status, timeout, stop" — the hint for
// a non-zero exit without an error event, read from stderr (P-EXIT-2,
// F-HINT-1).

package agentproc

import (
	"regexp"
	"strconv"
	"sync"
)

// diagRule is one row of the post-mortem stderr diagnosis table. The rows
// are a copy of the shared conformance file diagnostics.json (the runner
// cannot read it at run time); a test checks them rule for rule.
type diagRule struct {
	ID      string
	Pattern string
	Flags   string // "i" = case-insensitive
	Hint    string // {n} = capture group n; {{PROFILE_DIR}} is literal
	re      *regexp.Regexp
}

// diagRules are compiled on first use, when an agent failed: every
// agentbridge process links the runner, few need them.
var diagRules = sync.OnceValue(func() []diagRule {
	return compileDiagRules([]diagRule{
		{
			ID:      "python-open-file",
			Pattern: `(?:can'?t|cannot) open file '([^']+)': \[Errno 2\] No such file or directory`,
			Hint:    "agent script not found: {1}. Check the profile's command path (likely a {{PROFILE_DIR}} issue or a typo).",
		},
		{
			ID:      "node-cannot-find-module",
			Pattern: `Cannot find module '([^']+)'`,
			Hint:    "agent script not found: {1}. Check the profile's command path (likely a {{PROFILE_DIR}} issue or a typo).",
		},
		{
			ID:      "bash-line-no-such-file",
			Pattern: `(?:^|\n)[^:]+: line \d+: ([^:]+): No such file or directory`,
			Hint:    "agent script not found: {1}. Check the profile's command path.",
		},
		{
			ID:      "generic-enoent",
			Pattern: `errno 2|enoent|no such file or directory`,
			Flags:   "i",
			Hint:    "agent reported a missing file. Check the profile's command and cwd.",
		},
	})
})

func compileDiagRules(rules []diagRule) []diagRule {
	for i := range rules {
		expr := rules[i].Pattern
		if rules[i].Flags == "i" {
			expr = "(?i)" + expr
		}
		rules[i].re = regexp.MustCompile(expr)
	}
	return rules
}

// hintGroup finds {n} tokens; {{PROFILE_DIR}} has no digits so it is left alone.
var hintGroup = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\{(\d+)\}`) })

// Diagnose returns a hint for a failed agent's stderr from the first
// matching diagnostics rule, or "" when none matches (F-HINT-1).
func Diagnose(stderr string) string {
	for _, r := range diagRules() {
		m := r.re.FindStringSubmatch(stderr)
		if m == nil {
			continue
		}
		return hintGroup().ReplaceAllStringFunc(r.Hint, func(tok string) string {
			n, err := strconv.Atoi(tok[1 : len(tok)-1])
			if err != nil || n >= len(m) {
				return tok
			}
			return m[n]
		})
	}
	return ""
}
