// This file: spec/protocol.md, "The profile" — reading the YAML file
// strictly, every problem as file:line: field: problem.

package agentproc

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/agentbridge/agentbridge/internal/yamlnode"
)

// Profile defaults (P-PROF-6, D-PERM-1).
const (
	DefaultTimeout           = 1800 * time.Second
	DefaultKillGrace         = 5 * time.Second
	DefaultPermissionTimeout = 300 * time.Second
)

// Profile is a parsed AgentProc profile (YAML). Placeholders stay unexpanded
// until Run. A zero Timeout, KillGrace or PermissionTimeout in a Profile built
// in code means the default.
type Profile struct {
	Name              string            // optional label for logs
	Path              string            // absolute path of the YAML file; "" when built in code
	Command           string            // argv[0], one token, never split (P-PROF-1)
	Args              []string          // argv[1..] (P-PROF-2)
	Cwd               string            // "" = the bridge's cwd; relative = against the profile dir (P-PROF-4)
	Env               map[string]string // values may use ${VAR} and placeholders
	EnvAllowlist      []string          // nil = no allowlist; non-nil (even empty) = restricts ${VAR}
	Timeout           time.Duration     // timeout_secs, default 1800s
	KillGrace         time.Duration     // kill_grace_secs, default 5s
	Streaming         bool
	Permission        bool
	PermissionTimeout time.Duration // permission_timeout_secs, default 300s, clamped to Timeout
	// Description is a short human line the bridge's /agent menu shows
	// (a bridge extension: the agent never sees it).
	Description string
	// ApproversOnly lets only a platform's approvers switch a conversation
	// to this profile with /agent (a bridge extension, for unattended or
	// "yolo" profiles).
	ApproversOnly bool
	// PickUsers, when set, are the user ids (besides the platform's
	// approvers) who may switch a conversation to this profile with
	// /agent (profile key pick_users; a bridge extension).
	PickUsers []string
	// User, when set, is the account the agent runs as instead of the
	// bridge's (profile key user:; a bridge extension, for a bridge that
	// runs as root). Its HOME, USER and LOGNAME are the agent's too.
	User *AgentUser
	// MaxConcurrent caps this profile's agents running at once over the
	// bridge (profile key max_concurrent, after the upstream Concurrency
	// section; a bridge extension); 0 is no cap of its own.
	MaxConcurrent int
	// OnSaturated is what a turn does when MaxConcurrent agents of the
	// profile run: SaturatedQueue waits for one to finish, SaturatedReject
	// refuses it at once; "" is the bridge's on_saturated.
	OnSaturated string
}

// What a turn does when a cap on agents at once is reached
// (Profile.OnSaturated, the bridge's on_saturated).
const (
	SaturatedQueue  = "queue"
	SaturatedReject = "reject"
)

// Dir returns the value of {{PROFILE_DIR}}: the directory holding the
// profile file, or "" when the profile was not loaded from a file (P-PROF-3).
func (p *Profile) Dir() string {
	if p.Path == "" {
		return ""
	}
	return filepath.Dir(p.Path)
}

// timeout returns the turn's wall-clock limit, applying the default.
func (p *Profile) timeout() time.Duration {
	if p.Timeout <= 0 {
		return DefaultTimeout
	}
	return p.Timeout
}

// killGrace returns the SIGTERM→SIGKILL grace, applying the default.
func (p *Profile) killGrace() time.Duration {
	if p.KillGrace <= 0 {
		return DefaultKillGrace
	}
	return p.KillGrace
}

// permissionTimeout returns how long a permission request may wait for an
// answer: the default when unset, never longer than the turn (D-PERM-1).
func (p *Profile) permissionTimeout() time.Duration {
	d := p.PermissionTimeout
	if d <= 0 {
		d = DefaultPermissionTimeout
	}
	return min(d, p.timeout())
}

// LoadProfile reads and parses the profile file at path.
func LoadProfile(path string) (*Profile, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("load profile %s: %w", path, err)
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return nil, fmt.Errorf("load profile: %w", err)
	}
	return ParseProfile(data, abs)
}

// ParseProfile parses profile YAML strictly: unknown keys, wrong types, a
// missing command and out-of-range numbers are all reported at once, joined
// with errors.Join, each as "file:line: field: problem". path names the file
// in errors and gives {{PROFILE_DIR}}; it is made absolute.
func ParseProfile(data []byte, path string) (*Profile, error) {
	name := path
	if name == "" {
		name = "profile"
	}
	p := &Profile{}
	if path != "" {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("parse profile %s: %w", path, err)
		}
		p.Path = abs
		p.Name = nameFor(abs)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		// Re-stated as file:line like every other profile problem.
		line, problem := yamlnode.SyntaxError(err)
		if line > 0 {
			return nil, fmt.Errorf("%s:%d: %s", name, line, problem)
		}
		return nil, fmt.Errorf("%s: %s", name, problem)
	}
	pp := profileParser{file: name, p: p}
	pp.parse(&doc)
	if len(pp.errs) > 0 {
		return nil, errors.Join(pp.errs...)
	}
	return p, nil
}

// profileParser walks the YAML node tree so every problem carries its line.
type profileParser struct {
	file string
	p    *Profile
	errs []error
}

func (pp *profileParser) errorf(line int, field, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if field != "" {
		msg = field + ": " + msg
	}
	pp.errs = append(pp.errs, fmt.Errorf("%s:%d: %s", pp.file, line, msg))
}

func (pp *profileParser) parse(doc *yaml.Node) {
	if doc.Kind == 0 || len(doc.Content) == 0 {
		pp.errorf(1, "", "empty profile: command is required")
		return
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		pp.errorf(root.Line, "", "profile must be a mapping of keys to values")
		return
	}
	p := pp.p
	var (
		sawCommand, sawExecutor bool
		timeoutSet, graceSet    bool
		permTimeoutSet          bool
	)
	// The profile's fields, in the order its documentation lists them.
	fields := []profileField{
		{"name", func(v *yaml.Node, key string) {
			if s, ok := pp.str(v, key); ok {
				p.Name = s
			}
		}},
		{"command", func(v *yaml.Node, key string) {
			sawCommand = true
			if s, ok := pp.str(v, key); ok {
				if s == "" {
					pp.errorf(v.Line, key, "must not be empty")
				}
				p.Command = s
			}
		}},
		// In-process executors are SDK-specific (upstream spec); this
		// bridge always spawns command, so the name is only accepted.
		{"executor", func(v *yaml.Node, key string) {
			sawExecutor = true
			pp.str(v, key)
		}},
		{"args", func(v *yaml.Node, key string) {
			p.Args = pp.strList(v, key)
			if p.Args == nil {
				p.Args = []string{}
			}
		}},
		{"cwd", func(v *yaml.Node, key string) {
			if s, ok := pp.str(v, key); ok {
				p.Cwd = s
			}
		}},
		{"user", func(v *yaml.Node, key string) {
			if s, ok := pp.scalar(v, key); ok {
				u, err := parseAgentUser(s)
				if err != nil {
					pp.errorf(v.Line, key, "%v", err)
				}
				p.User = u
			}
		}},
		{"env", func(v *yaml.Node, key string) { p.Env = pp.env(v) }},
		{"env_allowlist", func(v *yaml.Node, key string) {
			if l := pp.strList(v, key); l != nil {
				p.EnvAllowlist = l
			} else {
				p.EnvAllowlist = []string{}
			}
		}},
		{"timeout_secs", func(v *yaml.Node, key string) {
			timeoutSet = true
			p.Timeout = pp.secs(v, key, false)
		}},
		{"kill_grace_secs", func(v *yaml.Node, key string) {
			graceSet = true
			p.KillGrace = pp.secs(v, key, true)
			if p.KillGrace == 0 {
				// Zero in code means the default, so an explicit 0 becomes
				// the smallest grace: SIGKILL right after SIGTERM.
				p.KillGrace = time.Nanosecond
			}
		}},
		{"permission_timeout_secs", func(v *yaml.Node, key string) {
			permTimeoutSet = true
			p.PermissionTimeout = pp.secs(v, key, false)
		}},
		{"streaming", func(v *yaml.Node, key string) { p.Streaming = pp.boolean(v, key) }},
		{"permission", func(v *yaml.Node, key string) { p.Permission = pp.boolean(v, key) }},
		{"description", func(v *yaml.Node, key string) {
			if s, ok := pp.str(v, key); ok {
				if len([]rune(s)) > 100 || strings.ContainsAny(s, "\n\r") {
					pp.errorf(v.Line, key, "must be one line of at most 100 characters")
				}
				p.Description = s
			}
		}},
		{"approvers_only", func(v *yaml.Node, key string) { p.ApproversOnly = pp.boolean(v, key) }},
		{"max_concurrent", func(v *yaml.Node, key string) {
			if v.Kind != yaml.ScalarNode || v.Tag != "!!int" {
				pp.errorf(v.Line, key, "%s", yamlnode.Expected("a whole number", v))
				return
			}
			n, err := strconv.Atoi(v.Value)
			if err != nil || n < 1 || n > 10000 {
				pp.errorf(v.Line, key, "must be from 1 to 10000, got %s", v.Value)
				return
			}
			p.MaxConcurrent = n
		}},
		{"on_saturated", func(v *yaml.Node, key string) {
			if s, ok := pp.str(v, key); ok {
				if s != SaturatedQueue && s != SaturatedReject {
					pp.errorf(v.Line, key, "must be %s or %s, got %q", SaturatedQueue, SaturatedReject, s)
					return
				}
				p.OnSaturated = s
			}
		}},
		{"pick_users", func(v *yaml.Node, key string) {
			if l := pp.strList(v, key); l != nil {
				p.PickUsers = l
			} else {
				p.PickUsers = []string{}
			}
		}},
	}
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		key := k.Value
		if prev, dup := seen[key]; dup {
			pp.errorf(k.Line, key, "%s", yamlnode.SetTwice(prev))
			continue
		}
		seen[key] = k.Line
		j := slices.IndexFunc(fields, func(f profileField) bool { return f.name == key })
		if j < 0 {
			pp.errorf(k.Line, key, "%s", yamlnode.UnknownField(key, names))
			continue
		}
		fields[j].set(v, key)
	}
	if !sawCommand {
		if sawExecutor {
			pp.errorf(root.Line, "command", "is required (in-process executors are not supported, so command is needed)")
		} else {
			pp.errorf(root.Line, "command", "is required")
		}
	}
	if !timeoutSet {
		p.Timeout = DefaultTimeout
	}
	if !graceSet {
		p.KillGrace = DefaultKillGrace
	}
	if !permTimeoutSet {
		p.PermissionTimeout = DefaultPermissionTimeout
	}
	// D-PERM-1: the permission wait is never longer than the turn.
	if p.Timeout > 0 && p.PermissionTimeout > p.Timeout {
		p.PermissionTimeout = p.Timeout
	}
}

// profileField is one key a profile may set, and what setting it does.
type profileField struct {
	name string
	set  func(v *yaml.Node, key string)
}

// str accepts only a YAML string: a number where a path or a command is
// expected is a mistake worth reporting.
func (pp *profileParser) str(v *yaml.Node, field string) (string, bool) {
	if v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
		pp.errorf(v.Line, field, "%s", yamlnode.Expected("a string", v))
		return "", false
	}
	return v.Value, true
}

// scalar accepts any non-null scalar as its literal text, for argv and env
// values where `8080` or `true` plainly mean the string.
func (pp *profileParser) scalar(v *yaml.Node, field string) (string, bool) {
	if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
		pp.errorf(v.Line, field, "%s", yamlnode.Expected("a string", v))
		return "", false
	}
	return v.Value, true
}

func (pp *profileParser) strList(v *yaml.Node, field string) []string {
	if v.Kind != yaml.SequenceNode {
		pp.errorf(v.Line, field, "%s", yamlnode.Expected("a list", v))
		return nil
	}
	out := make([]string, 0, len(v.Content))
	for i, e := range v.Content {
		if s, ok := pp.scalar(e, fmt.Sprintf("%s[%d]", field, i)); ok {
			out = append(out, s)
		}
	}
	return out
}

func (pp *profileParser) env(v *yaml.Node) map[string]string {
	if v.Kind != yaml.MappingNode {
		pp.errorf(v.Line, "env", "%s", yamlnode.Expected("a mapping", v))
		return nil
	}
	out := make(map[string]string, len(v.Content)/2)
	seen := map[string]int{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		name := k.Value
		field := "env." + name
		if k.Kind != yaml.ScalarNode || name == "" || strings.ContainsAny(name, "=\x00") {
			pp.errorf(k.Line, "env", "invalid variable name %q", name)
			continue
		}
		if first, dup := seen[name]; dup {
			pp.errorf(k.Line, field, "%s", yamlnode.SetTwice(first))
			continue
		}
		seen[name] = k.Line
		if s, ok := pp.scalar(val, field); ok {
			if strings.ContainsRune(s, 0) {
				pp.errorf(val.Line, field, "must not contain a NUL byte")
				continue
			}
			out[name] = s
		}
	}
	return out
}

func (pp *profileParser) boolean(v *yaml.Node, field string) bool {
	if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" {
		pp.errorf(v.Line, field, "%s", yamlnode.Expected("true or false", v))
		return false
	}
	b, err := strconv.ParseBool(strings.ToLower(v.Value))
	if err != nil {
		pp.errorf(v.Line, field, "must be true or false, got %q", v.Value)
	}
	return b
}

// secs parses a number of seconds (integer or decimal).
func (pp *profileParser) secs(v *yaml.Node, field string, zeroOK bool) time.Duration {
	if v.Kind != yaml.ScalarNode || (v.Tag != "!!int" && v.Tag != "!!float") {
		pp.errorf(v.Line, field, "%s", yamlnode.Expected("a number of seconds", v))
		return 0
	}
	f, err := strconv.ParseFloat(v.Value, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		pp.errorf(v.Line, field, "must be a number of seconds, got %q", v.Value)
		return 0
	}
	switch {
	case f < 0:
		pp.errorf(v.Line, field, "must not be negative")
		return 0
	case f == 0 && !zeroOK:
		pp.errorf(v.Line, field, "must be greater than zero")
		return 0
	case f > 10*365*24*3600:
		pp.errorf(v.Line, field, "is too large")
		return 0
	}
	return time.Duration(f * float64(time.Second))
}

// nameFor derives a profile's name from its file: the file name without its
// extension, or the directory's name for the conventional profile.yaml
// (profiles/claude-code/profile.yaml is "claude-code").
func nameFor(abs string) string {
	name := strings.TrimSuffix(filepath.Base(abs), filepath.Ext(abs))
	if dir := filepath.Base(filepath.Dir(abs)); name == "profile" && dir != "/" && dir != "." {
		return dir
	}
	return name
}

// Isolated reports whether the profile runs its agent through
// `agentbridge isolate` (profiles/isolated): in a container or pod, not on
// the bridge's host, so the paths it names are not the host's.
func (p *Profile) Isolated() bool {
	return filepath.Base(p.Command) == "agentbridge" && len(p.Args) > 0 && p.Args[0] == "isolate"
}

// WorkDir returns the directory t's agent runs in: the profile's cwd with
// t's placeholders expanded, relative to the profile's directory
// (P-PROF-4), or the bridge's own working directory when it has none.
func (p *Profile) WorkDir(t Turn) string {
	name := t.SessionName
	if name == "" {
		name = "default"
	}
	_, cwd := p.expand(placeholders{profileDir: p.Dir(), sessionID: t.SessionID, sessionName: name, conversationID: t.ConversationID})
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return cwd
	}
	return abs
}
