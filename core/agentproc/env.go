// This file: spec/protocol.md, "The profile" (Placeholders, Environment) —
// what the agent's argv and environment are made of (F-PH-1, F-ENV-1,
// F-ENV-2).

package agentproc

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
)

// infraVars are copied from the bridge's environment into every agent's
// (F-ENV-1). Nothing else of the bridge's environment reaches the agent.
var infraVars = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE",
	"LC_MESSAGES", "TERM", "TMPDIR", "TZ", "PWD",
}

// InfraEnv returns the infra set of environ (KEY=VALUE pairs): what the
// bridge hands a helper program of its own (a transcription command) so
// that it gets no more of the bridge's secrets than an agent does.
func InfraEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		if k, _, ok := strings.Cut(kv, "="); ok && slices.Contains(infraVars, k) {
			out = append(out, kv)
		}
	}
	return out
}

// placeholders holds the values of {{PROFILE_DIR}}, {{SESSION_ID}} and
// {{SESSION_NAME}} for one turn (F-PH-1), and of this bridge's one
// extension, {{AGENTBRIDGE_CONVERSATION_ID}} (spec/protocol.md). Any other
// {{NAME}} stays literal, so a standard profile means the same here as
// under any AgentProc bridge.
type placeholders struct {
	profileDir, sessionID, sessionName, conversationID string
}

func (ph placeholders) lookup(name string) (string, bool) {
	switch name {
	case "PROFILE_DIR":
		return ph.profileDir, true
	case "SESSION_ID":
		return ph.sessionID, true
	case "SESSION_NAME":
		return ph.sessionName, true
	case "AGENTBRIDGE_CONVERSATION_ID": // bridge extension
		return ph.conversationID, true
	}
	return "", false
}

// expander substitutes placeholders and, for env values, ${VAR} references in
// one left-to-right pass, so a substituted value is never scanned again: a
// session id of "${AWS_SECRET}" stays literal.
type expander struct {
	ph        placeholders
	environ   map[string]string // nil: ${VAR} is left alone (command, args, cwd)
	allowlist []string          // nil: every name may expand
	log       *slog.Logger
	field     string // for warnings
}

func (e *expander) expand(s string) string {
	if !strings.Contains(s, "{{") && (e.environ == nil || !strings.Contains(s, "${")) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], "{{") {
			if end := strings.Index(s[i+2:], "}}"); end >= 0 {
				if v, ok := e.ph.lookup(s[i+2 : i+2+end]); ok {
					b.WriteString(v)
					i += 2 + end + 2
					continue
				}
			}
		}
		if e.environ != nil && strings.HasPrefix(s[i:], "${") {
			if end := strings.IndexByte(s[i+2:], '}'); end >= 0 && validVarName(s[i+2:i+2+end]) {
				b.WriteString(e.variable(s[i+2 : i+2+end]))
				i += 2 + end + 1
				continue
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// variable expands one ${name}: POSIX semantics (unknown → empty), limited by
// the allowlist when there is one (F-ENV-2).
func (e *expander) variable(name string) string {
	if e.allowlist != nil && !slices.Contains(e.allowlist, name) {
		e.log.LogAttrs(context.Background(), slog.LevelWarn, "env_allowlist blocked ${"+name+"}; expanded to empty",
			slog.String("env", e.field), slog.String("var", name))
		return ""
	}
	return e.environ[name]
}

func validVarName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		ok := c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (i > 0 && c >= '0' && c <= '9')
		if !ok {
			return false
		}
	}
	return true
}

// environMap turns KEY=VALUE pairs into a map; later pairs win, like getenv.
func environMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok && k != "" {
			m[k] = v
		}
	}
	return m
}

// childEnv composes the agent's environment: the infra set, then the
// profile's env after expansion (F-ENV-1). cwd, when known, replaces PWD so
// the agent's PWD tells the truth about where it runs.
func childEnv(p *Profile, bridge map[string]string, ph placeholders, cwd string, log *slog.Logger) []string {
	env := make(map[string]string, len(infraVars)+len(p.Env))
	for _, k := range infraVars {
		if v, ok := bridge[k]; ok {
			env[k] = v
		}
	}
	if cwd != "" && filepath.IsAbs(cwd) {
		env["PWD"] = cwd
	}
	if u := p.User; u != nil {
		// The agent's own account, not the bridge's: its files go to its
		// home, which the bridge's HOME need not be readable to.
		if u.Home != "" {
			env["HOME"] = u.Home
		}
		if u.Name != "" {
			env["USER"], env["LOGNAME"] = u.Name, u.Name
		}
	}
	for _, k := range sortedKeys(p.Env) {
		e := expander{ph: ph, environ: bridge, allowlist: p.EnvAllowlist, log: log, field: k}
		env[k] = e.expand(p.Env[k])
	}
	out := make([]string, 0, len(env))
	for _, k := range sortedKeys(env) {
		out = append(out, k+"="+env[k])
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
