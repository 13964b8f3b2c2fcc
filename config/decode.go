package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/core/engine"
	"github.com/agentbridge/agentbridge/internal/yamlnode"
)

// decoder walks the YAML node tree of one file into a Config. It collects
// every problem instead of stopping at the first, so one run of
// "agentbridge validate" shows them all.
type decoder struct {
	file    string
	lookup  func(string) (string, bool)
	kinds   []Kind
	errs    []*FieldError
	warns   []*FieldError
	lines   map[string]int       // YAML path → line of its key, for problems found after the walk
	vars    map[string]expansion // secret and URL paths whose value referenced variables
	needed  map[string]bool      // paths a check already required
	failed  map[string]bool      // paths already reported, not to be reported again as missing
	listens map[string]string    // listen address → the path that claimed it
	uniques map[string]string    // kind, key and value → the path that claimed it
	secrets []core.Secret        // every secret read, for Config.Secrets
}

// expansion records the variables one secret or URL field referenced, so
// validation can tell "not set" apart from "not written".
type expansion struct {
	line  int
	unset []string // referenced but not set
	empty []string // set to ""
	whole bool     // the value was exactly one ${VAR}: unset means "not configured"
}

// parse decodes and validates data. With errors, the config is returned
// as far as it was decoded (for Inspect) unless there is no tree at all.
func parse(data []byte, path string, opts Options) (*Config, error) {
	root, ferr := parseYAML(data)
	if ferr != nil {
		// A syntax error leaves no tree to check further.
		ferr.File = path
		return nil, ferr
	}
	c := defaults()
	// Relative paths in the file are relative to the file, not to the
	// bridge's working directory; with no file, the working directory.
	dir, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("resolve config path: %w", err)
	}
	if path != "" {
		c.Path, dir = dir, filepath.Dir(dir)
	}
	d := &decoder{
		file:    path,
		lookup:  opts.LookupEnv,
		kinds:   opts.Platforms,
		lines:   map[string]int{"": root.Line},
		vars:    map[string]expansion{},
		needed:  map[string]bool{},
		failed:  map[string]bool{},
		listens: map[string]string{},
		uniques: map[string]string{},
	}
	d.root(root, &c)
	d.validate(&c, dir)
	slices.SortStableFunc(d.warns, byLine)
	secrets := d.secrets
	c.warnings, c.file, c.lines = d.warns, path, d.lines
	c.secrets = func() []core.Secret { return slices.Clone(secrets) }
	if len(d.errs) > 0 {
		slices.SortStableFunc(d.errs, byLine)
		errs := make([]error, len(d.errs))
		for i, e := range d.errs {
			errs[i] = e
		}
		return &c, errors.Join(errs...)
	}
	return &c, nil
}

func byLine(a, b *FieldError) int { return a.Line - b.Line }

// parseYAML returns the root node of the single document in data; an empty
// document is an empty mapping.
func parseYAML(data []byte) (*yaml.Node, *FieldError) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: 1, Column: 1}, nil
		}
		return nil, syntaxError(err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, syntaxError(err)
	default:
		return nil, &FieldError{Line: max(extra.Line, 1), Problem: "a second YAML document; a config file holds one"}
	}
	root := &doc
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		root = doc.Content[0]
	}
	if isNull(root) {
		return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: max(root.Line, 1), Column: 1}, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, &FieldError{Line: max(root.Line, 1), Problem: "expected a mapping of settings, got " + yamlnode.Describe(root)}
	}
	return root, nil
}

// syntaxError turns a YAML parser error into a FieldError at its line.
func syntaxError(err error) *FieldError {
	line, problem := yamlnode.SyntaxError(err)
	return &FieldError{Line: max(line, 1), Problem: "invalid YAML: " + problem}
}

func (d *decoder) fail(line int, path, format string, args ...any) {
	d.failed[path] = true
	d.errs = append(d.errs, &FieldError{File: d.file, Line: line, Path: path, Problem: fmt.Sprintf(format, args...)})
}

func (d *decoder) warn(line int, path, format string, args ...any) {
	d.warns = append(d.warns, &FieldError{File: d.file, Line: line, Path: path, Problem: fmt.Sprintf(format, args...)})
}

// line returns the line of path's key, or of its nearest written ancestor,
// so a missing field is reported where its parent is.
func (d *decoder) line(path string) int {
	for {
		if l, ok := d.lines[path]; ok {
			return l
		}
		if path == "" {
			return 1
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			path = ""
		} else {
			path = path[:i]
		}
	}
}

// field decodes the value of one known mapping key.
type field struct {
	name string
	set  func(n *yaml.Node, path string)
}

func (d *decoder) root(n *yaml.Node, c *Config) {
	d.mappingOr(n, "", append([]field{
		{"store", d.str(&c.Store)},
		{"profiles", func(n *yaml.Node, p string) { d.profiles(n, p, c) }},
		{"default_profile", d.str(&c.DefaultProfile)},
		{"routes", func(n *yaml.Node, p string) { d.routes(n, p, c) }},
		{"queue_depth", intField(d, &c.QueueDepth, 1, 100)},
		{"max_concurrent_turns", intField(d, &c.MaxConcurrentTurns, 1, 10000)},
		{"max_concurrent_turns_per_user", intField(d, &c.MaxConcurrentTurnsPerUser, 0, 10000)},
		{"on_saturated", d.enum(&c.OnSaturated, agentproc.SaturatedQueue, agentproc.SaturatedReject)},
		{"dedup_ttl", d.duration(&c.DedupTTL, true)},
		{"shutdown_grace", d.duration(&c.ShutdownGrace, false)},
		{"idle_timeout", d.duration(&c.IdleTimeout, false)},
		{"presenter", d.sub([]field{
			{"placeholder_delay", d.duration(&c.Presenter.PlaceholderDelay, false)},
			{"thinking", d.enum(&c.Presenter.Thinking, ThinkingShow, ThinkingHide)},
			{"usage_footer", d.boolean(&c.Presenter.UsageFooter)},
			{"min_edit_interval", d.duration(&c.Presenter.MinEditInterval, false)},
		})},
		{"files", d.sub([]field{
			{"max_per_turn", intField(d, &c.Files.MaxPerTurn, 1, 1000)},
			{"max_bytes_per_turn", intField(d, &c.Files.MaxBytesPerTurn, 1, 1<<40)},
		})},
		{"log", d.sub([]field{
			{"level", d.enum(&c.Log.Level, "debug", "info", "warn", "error")},
			{"format", d.enum(&c.Log.Format, FormatText, FormatJSON)},
		})},
		{"metrics", d.sub([]field{
			{"listen", d.str(&c.Metrics.Listen)},
		})},
		{"schedules", func(n *yaml.Node, p string) { d.schedules(n, p, c) }},
		{"trigger", d.sub([]field{
			{"listen", d.str(&c.Trigger.Listen)},
			{"token", d.secret(&c.Trigger.Token)},
		})},
		{"console", d.sub([]field{
			{"listen", d.str(&c.Console.Listen)},
			{"token", d.secret(&c.Console.Token)},
			{"tls_cert", d.str(&c.Console.TLSCert)},
			{"tls_key", d.str(&c.Console.TLSKey)},
			{"insecure", d.boolean(&c.Console.Insecure)},
		})},
	}, d.accounts(c)...), func(name, p string, k, v *yaml.Node) bool { return d.account(name, p, k, v, c) })
}

// accounts adds each kind's first account, with its defaults, and returns
// the fields of their sections.
func (d *decoder) accounts(c *Config) []field {
	var fields []field
	for _, kind := range d.kinds {
		if kind.NewSection == nil {
			continue
		}
		a := Account{Name: kind.Name, Kind: kind, Section: kind.NewSection()}
		c.Accounts = append(c.Accounts, a)
		fields = append(fields, field{a.Name, func(n *yaml.Node, p string) { d.section(n, p, a.Section) }})
	}
	return fields
}

// account decodes a KIND/NAME section: another account of a platform. It
// reports whether name was one.
func (d *decoder) account(name, p string, k, v *yaml.Node, c *Config) bool {
	kindName, _, ok := accountName(name)
	i := slices.IndexFunc(d.kinds, func(kind Kind) bool { return kind.Name == kindName && kind.NewSection != nil })
	if i < 0 {
		return false
	}
	if !ok {
		d.fail(k.Line, p, "another %s account is a section %s/NAME, NAME being letters, digits, '.', '_' and '-', starting with a letter or digit", kindName, kindName)
		return true
	}
	a := Account{Name: name, Kind: d.kinds[i], Section: d.kinds[i].NewSection()}
	c.Accounts = append(c.Accounts, a)
	d.lines[p] = k.Line
	d.section(v, p, a.Section)
	return true
}

// section decodes one platform section: the shared keys and the
// platform's own.
func (d *decoder) section(n *yaml.Node, path string, s Section) {
	f := &Fields{d: d, list: d.platformFields(s.Shared())}
	s.Declare(f)
	d.mapping(n, path, f.list)
}

// platformFields are the fields every platform section has.
func (d *decoder) platformFields(p *Platform) []field {
	return append([]field{
		{"enabled", d.boolean(&p.Enabled)},
		{"api_url", d.url(&p.APIURL)},
		{"session_scope", d.scope(&p.SessionScope)},
		{"command_prefix", d.str(&p.CommandPrefix)},
		{"max_file_bytes", intField(d, &p.MaxFileBytes, 1, 1<<62)},
		{"allow_users", d.list(&p.AllowUsers)},
		{"allow_chats", d.list(&p.AllowChats)},
		{"approvers", d.list(&p.Approvers)},
		{"profiles", d.list(&p.Profiles)},
		{"transcribe", d.transcribe(&p.Transcribe)},
		{"busy", d.enum(&p.Busy, engine.BusyModes...)},
	}, d.limitFields(&p.Limits)...)
}

// mapping decodes a mapping node's keys with fields; keys not among fields
// are errors. A null node leaves everything at its default.
func (d *decoder) mapping(n *yaml.Node, path string, fields []field) {
	d.mappingOr(n, path, fields, nil)
}

// mappingOr is mapping with other, when not nil, offered each key not among
// fields first; it reports whether it took the key.
func (d *decoder) mappingOr(n *yaml.Node, path string, fields []field, other func(name, p string, k, v *yaml.Node) bool) {
	r, ok := d.node(n, path, yaml.MappingNode, "a mapping")
	if !ok {
		return
	}
	d.entries(r, path, func(name, p string, k, v *yaml.Node) {
		j := slices.IndexFunc(fields, func(f field) bool { return f.name == name })
		if j < 0 && other != nil && other(name, p, k, v) {
			return
		}
		if j < 0 {
			d.fail(k.Line, p, "%s", yamlnode.UnknownField(name, fieldNames(fields)))
			return
		}
		d.lines[p] = k.Line
		fields[j].set(v, p)
	})
}

// entries calls each for every key of the mapping node r with a usable
// name, in order, once: keys that are not names, and second settings of a
// key, are reported instead.
func (d *decoder) entries(r *yaml.Node, path string, each func(name, p string, k, v *yaml.Node)) {
	seen := map[string]int{}
	for i := 0; i+1 < len(r.Content); i += 2 {
		k, v := r.Content[i], r.Content[i+1]
		name, ok := d.key(k, path)
		if !ok {
			continue
		}
		p := join(path, name)
		if first, dup := seen[name]; dup {
			d.fail(k.Line, p, "%s", yamlnode.SetTwice(first))
			continue
		}
		seen[name] = k.Line
		each(name, p, k, v)
	}
}

// key returns a mapping key's name.
func (d *decoder) key(k *yaml.Node, path string) (string, bool) {
	k = resolve(k)
	switch {
	case k.Kind != yaml.ScalarNode:
		d.fail(k.Line, path, "%s", yamlnode.Expected("a field name", k))
		return "", false
	case k.ShortTag() == "!!merge":
		d.fail(k.Line, path, "merge keys (<<) are not supported; write the fields out")
		return "", false
	}
	return k.Value, true
}

func fieldNames(fields []field) []string {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	return names
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func (d *decoder) sub(fields []field) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) { d.mapping(n, path, fields) }
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && n.Alias != nil && i < 8; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// stringish reports whether a scalar can stand for a string. Numbers are
// accepted because platform ids (Telegram chats, Discord snowflakes) are
// numbers people write unquoted.
func stringish(n *yaml.Node) bool {
	if n.Kind != yaml.ScalarNode {
		return false
	}
	switch n.ShortTag() {
	case "!!str", "!!int", "!!float", "!!timestamp":
		return true
	}
	return false
}

// stringValue returns a scalar's text; ok is false for null or on error.
func (d *decoder) stringValue(n *yaml.Node, path string) (string, bool) {
	r := resolve(n)
	if isNull(r) {
		return "", false
	}
	if !stringish(r) {
		d.fail(n.Line, path, "%s", yamlnode.Expected("a string", r))
		return "", false
	}
	if strings.Contains(r.Value, "${") {
		d.fail(n.Line, path, "${VAR} is expanded only in secret and URL fields")
		return "", false
	}
	return r.Value, true
}

func (d *decoder) str(dst *string) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		if v, ok := d.stringValue(n, path); ok {
			*dst = v
		}
	}
}

func (d *decoder) enum(dst *string, allowed ...string) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		v, ok := d.stringValue(n, path)
		if !ok {
			return
		}
		if !slices.Contains(allowed, v) {
			d.fail(n.Line, path, "must be one of %s, got %s", strings.Join(allowed, ", "), yamlnode.Quote(v))
			return
		}
		*dst = v
	}
}

func (d *decoder) scope(dst *core.SessionScope) func(*yaml.Node, string) {
	var s string
	set := d.enum(&s, string(core.ScopeThread), string(core.ScopeChannel), string(core.ScopeUser))
	return func(n *yaml.Node, path string) {
		s = ""
		set(n, path)
		if s != "" {
			*dst = core.SessionScope(s)
		}
	}
}

func (d *decoder) boolean(dst *bool) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		var v bool
		if d.scalar(n, path, "!!bool", "true or false", &v) {
			*dst = v
		}
	}
}

// scalar decodes a scalar of YAML tag into v, reporting a node that is
// something else as not the want it expected; ok is false for null and on
// error.
func (d *decoder) scalar(n *yaml.Node, path, tag, want string, v any) bool {
	r := resolve(n)
	if isNull(r) {
		return false
	}
	if r.Kind != yaml.ScalarNode || r.ShortTag() != tag || r.Decode(v) != nil {
		d.fail(n.Line, path, "%s", yamlnode.Expected(want, r))
		return false
	}
	return true
}

// node resolves n and checks it is of kind, reporting a node that is
// something else as not the want it expected; ok is false for null and on
// error.
func (d *decoder) node(n *yaml.Node, path string, kind yaml.Kind, want string) (*yaml.Node, bool) {
	r := resolve(n)
	if isNull(r) {
		return nil, false
	}
	if r.Kind != kind {
		d.fail(n.Line, path, "%s", yamlnode.Expected(want, r))
		return nil, false
	}
	return r, true
}

// intField decodes an integer in [lo, hi]. It is a function because methods
// cannot have type parameters.
func intField[T int | int64](d *decoder, dst *T, lo, hi int64) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		var v int64
		if !d.scalar(n, path, "!!int", "an integer", &v) {
			return
		}
		if v < lo || v > hi {
			if hi >= 1<<62 {
				d.fail(n.Line, path, "must be at least %d, got %d", lo, v)
			} else {
				d.fail(n.Line, path, "must be between %d and %d, got %d", lo, hi, v)
			}
			return
		}
		*dst = T(v)
	}
}

// money decodes a non-negative amount of US dollars (an integer or a
// decimal number).
func (d *decoder) money(dst *float64) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		r := resolve(n)
		if isNull(r) {
			return
		}
		var v float64
		if r.Kind != yaml.ScalarNode || (r.ShortTag() != "!!int" && r.ShortTag() != "!!float") || r.Decode(&v) != nil {
			d.fail(n.Line, path, "%s", yamlnode.Expected("an amount in US dollars such as 2.50", r))
			return
		}
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			d.fail(n.Line, path, "must be a non-negative amount, got %v", v)
			return
		}
		*dst = v
	}
}

// limitFields are the per-user limit keys of platform sections and routes.
func (d *decoder) limitFields(l *Limits) []field {
	return []field{
		{"max_turns_per_hour", intField(d, &l.TurnsPerHour, 0, 1_000_000)},
		{"max_cost_per_day_usd", d.money(&l.CostPerDayUSD)},
		{"max_reply_bytes", intField(d, &l.ReplyBytes, 1<<10, 1<<30)},
	}
}

// duration decodes a Go duration string; positive rejects zero.
func (d *decoder) duration(dst *time.Duration, positive bool) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		r := resolve(n)
		if isNull(r) {
			return
		}
		if r.Kind != yaml.ScalarNode || (r.ShortTag() != "!!str" && r.ShortTag() != "!!int") {
			d.fail(n.Line, path, "%s", yamlnode.Expected(`a duration such as "30s"`, r))
			return
		}
		v, err := time.ParseDuration(r.Value)
		switch {
		case err != nil:
			d.fail(n.Line, path, `invalid duration %s: write a number with a unit, such as "30s" or "1h30m"`, yamlnode.Quote(r.Value))
		case v < 0:
			d.fail(n.Line, path, "must not be negative, got %s", r.Value)
		case positive && v == 0:
			d.fail(n.Line, path, "must be positive")
		default:
			*dst = v
		}
	}
}

// list decodes a list of ids.
func (d *decoder) list(dst *[]string) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		r, ok := d.node(n, path, yaml.SequenceNode, "a list")
		if !ok {
			return
		}
		out := make([]string, 0, len(r.Content))
		for i, item := range r.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			if isNull(resolve(item)) {
				d.fail(item.Line, p, "must not be empty")
				continue
			}
			v, ok := d.stringValue(item, p)
			if !ok {
				continue
			}
			if v == "" {
				d.fail(item.Line, p, "must not be empty")
				continue
			}
			out = append(out, v)
		}
		*dst = out
	}
}

func (d *decoder) secret(dst *core.Secret) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		if v, ok := d.expand(n, path, true); ok {
			*dst = core.Secret(v)
			d.secrets = append(d.secrets, *dst)
		}
	}
}

func (d *decoder) url(dst *string) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		if v, ok := d.expand(n, path, false); ok {
			*dst = v
		}
	}
}

// expand decodes a string whose ${VAR} references are replaced from the
// environment, recording unset variables for validation to judge: only an
// enabled platform needs its secrets.
func (d *decoder) expand(n *yaml.Node, path string, secret bool) (string, bool) {
	r := resolve(n)
	if isNull(r) {
		return "", false
	}
	if !stringish(r) {
		// Never yamlnode.Describe(r) here: the value may be a credential.
		d.fail(n.Line, path, "expected a string")
		return "", false
	}
	out, refs, err := expandVars(r.Value, d.lookup)
	if err != nil {
		d.fail(n.Line, path, "%v", err)
		return "", false
	}
	if len(refs) == 0 {
		if secret && r.Value != "" {
			d.warn(n.Line, path, "secret written in the file; prefer a ${VAR} reference")
		}
		return r.Value, true
	}
	e := expansion{line: n.Line, whole: len(refs) == 1 && r.Value == "${"+refs[0].name+"}"}
	for _, ref := range refs {
		switch {
		case !ref.set:
			e.unset = append(e.unset, ref.name)
		case ref.empty:
			e.empty = append(e.empty, ref.name)
		}
	}
	d.vars[path] = e
	return out, true
}

// profiles decodes the name → profile map. Values are resolved by validate.
func (d *decoder) profiles(n *yaml.Node, path string, c *Config) {
	if isNull(resolve(n)) {
		c.Profiles = map[string]string{}
		return
	}
	r, ok := d.node(n, path, yaml.MappingNode, "a mapping of profile names to profile files")
	if !ok {
		return
	}
	c.Profiles = map[string]string{}
	d.entries(r, path, func(name, p string, k, v *yaml.Node) {
		d.lines[p] = k.Line
		if !validName(name) {
			d.fail(k.Line, p, "a profile name is letters, digits, '.', '_' and '-', starting with a letter or digit")
			return
		}
		s, ok := d.stringValue(v, p)
		if !ok && isNull(resolve(v)) {
			s, ok = "", true // reported as empty by validate
		}
		if ok {
			c.Profiles[name] = s
		}
	})
}

// mappingList decodes a list of mappings (routes, schedules) into dst:
// each item starts as start and is decoded with the fields of it; an empty
// item is reported as not the mapping it expected. Null leaves dst alone.
// It is a function because methods cannot have type parameters.
func mappingList[T any](d *decoder, n *yaml.Node, path, list, mapping string, dst *[]T, start T, fields func(*T) []field) {
	r, ok := d.node(n, path, yaml.SequenceNode, list)
	if !ok {
		return
	}
	*dst = make([]T, 0, len(r.Content))
	for i, it := range r.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		d.lines[p] = it.Line
		if isNull(resolve(it)) {
			d.fail(it.Line, p, "expected %s, got nothing", mapping)
			continue
		}
		v := start
		d.mapping(it, p, fields(&v))
		*dst = append(*dst, v)
	}
}

// routes decodes the route list. References are checked by validate.
func (d *decoder) routes(n *yaml.Node, path string, c *Config) {
	mappingList(d, n, path, "a list of routes", "a route mapping", &c.Routes, Route{}, func(rt *Route) []field {
		return append([]field{
			{"platform", d.str(&rt.Platform)},
			{"workspace", d.str(&rt.Workspace)},
			{"channel", d.str(&rt.Channel)},
			{"profile", d.str(&rt.Profile)},
			{"profiles", d.list(&rt.Profiles)},
			{"transcribe", d.transcribe(&rt.Transcribe)},
			{"busy", d.enum(&rt.Busy, engine.BusyModes...)},
		}, d.limitFields(&rt.Limits)...)
	})
}

// schedules decodes the schedule list. Expressions, zones and references
// are checked by validate.
func (d *decoder) schedules(n *yaml.Node, path string, c *Config) {
	mappingList(d, n, path, "a list of schedules", "a schedule mapping", &c.Schedules, Schedule{CatchUp: DefaultCatchUp}, func(s *Schedule) []field {
		return []field{
			{"name", d.str(&s.Name)},
			{"platform", d.str(&s.Platform)},
			{"workspace", d.str(&s.Workspace)},
			{"channel", d.str(&s.Channel)},
			{"thread", d.str(&s.Thread)},
			{"cron", d.str(&s.Cron)},
			{"time_zone", d.str(&s.TimeZone)},
			{"message", d.str(&s.Message)},
			{"profile", d.str(&s.Profile)},
			{"session", d.str(&s.Session)},
			{"catch_up", d.duration(&s.CatchUp, false)},
		}
	})
}
