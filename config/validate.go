package config

import (
	"crypto/tls"
	"fmt"
	"maps"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/internal/cronexpr"
	"github.com/agentbridge/agentbridge/internal/httpguard"
	"github.com/agentbridge/agentbridge/internal/yamlnode"
)

// platformNames lists the names a route may give as its platform: every
// kind's, and every account's.
func (d *decoder) platformNames(c *Config) []string {
	var names []string
	for _, k := range d.kinds {
		names = append(names, k.Name)
	}
	for _, a := range c.Accounts {
		if !slices.Contains(names, a.Name) {
			names = append(names, a.Name)
		}
	}
	return names
}

// validName reports whether s is a profile name: letters, digits, '.', '_'
// and '-', starting with a letter or digit.
func validName(s string) bool {
	for i, c := range []byte(s) {
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return false
		}
	}
	return s != ""
}

// validate checks what the walk could not check field by field: required
// fields, references between fields, and each enabled platform's needs. It
// also resolves relative paths against dir.
func (d *decoder) validate(c *Config, dir string) {
	if c.Store == "" {
		d.fail(d.line("store"), "store", "must not be empty")
	} else {
		c.Store = absPath(d.stateDir(dir), c.Store)
	}

	d.validateProfiles(c, dir)
	d.validateRoutes(c)
	d.validateSchedules(c)

	if c.Metrics.Listen != "" {
		if host, ok := d.checkListen("metrics.listen", c.Metrics.Listen); ok && !loopback(host) {
			d.warn(d.line("metrics.listen"), "metrics.listen", "not a loopback address: /metrics and /healthz are reachable from other hosts")
		}
	}
	d.validateTrigger(c)
	d.validateConsole(c, dir)

	for i, r := range c.Routes {
		d.validateTranscribe(fmt.Sprintf("routes[%d].transcribe", i), r.Transcribe)
	}
	for _, a := range c.Accounts {
		if a.Enabled() {
			d.validateTranscribe(a.Name+".transcribe", a.Section.Shared().Transcribe)
		}
		d.validatePlatform(a.Name, a.Section.Shared())
		if a.Enabled() {
			a.Section.Check(&Checker{d: d, kind: a.Kind.Name, section: a.Name})
			d.optionalVars(a.Name)
		}
	}
}

func (d *decoder) validateProfiles(c *Config, dir string) {
	switch {
	case d.failed["profiles"]:
		// Already reported as the wrong type.
	case len(c.Profiles) == 0:
		if _, ok := d.lines["profiles"]; !ok || c.Profiles == nil {
			d.fail(d.line("profiles"), "profiles", "is required: name at least one profile, e.g. demo: builtin:demo")
		} else {
			d.fail(d.line("profiles"), "profiles", "must name at least one profile, e.g. demo: builtin:demo")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Profiles)) {
		p := "profiles." + name
		v := c.Profiles[name]
		switch {
		case v == "":
			d.fail(d.line(p), p, "is empty: give a profile file path or %sNAME", BuiltinPrefix)
		case strings.HasPrefix(v, BuiltinPrefix):
			if !validName(strings.TrimPrefix(v, BuiltinPrefix)) {
				d.fail(d.line(p), p, "%s must be followed by a builtin profile name", BuiltinPrefix)
			}
		default:
			c.Profiles[name] = absPath(dir, v)
		}
	}
	switch _, ok := c.Profiles[c.DefaultProfile]; {
	case d.failed["default_profile"]:
	case c.DefaultProfile == "":
		d.fail(d.line("default_profile"), "default_profile", "is required: name the profile to use when no route matches")
	case !ok && len(c.Profiles) > 0:
		d.fail(d.line("default_profile"), "default_profile", "names no profile: %s is not one of %s",
			yamlnode.Quote(c.DefaultProfile), strings.Join(slices.Sorted(maps.Keys(c.Profiles)), ", "))
	}
}

func (d *decoder) validateRoutes(c *Config) {
	names := d.platformNames(c)
	for i, r := range c.Routes {
		p := fmt.Sprintf("routes[%d]", i)
		if r.Platform != "" && !slices.Contains(names, r.Platform) {
			d.fail(d.line(p+".platform"), p+".platform", "must be one of %s, got %s",
				strings.Join(names, ", "), yamlnode.Quote(r.Platform))
		}
		if _, ok := c.Profiles[r.Profile]; d.failed[p+".profile"] {
			continue
		} else if r.Profile == "" {
			d.fail(d.line(p+".profile"), p+".profile", "is required")
		} else if !ok && len(c.Profiles) > 0 {
			d.fail(d.line(p+".profile"), p+".profile", "names no profile: %s is not one of %s",
				yamlnode.Quote(r.Profile), strings.Join(slices.Sorted(maps.Keys(c.Profiles)), ", "))
		}
		d.validateChoices(c, p+".profiles", r.Profiles)
	}
	for _, a := range c.Accounts {
		d.validateChoices(c, a.Name+".profiles", a.Section.Shared().Profiles)
	}
}

// validateChoices checks a profiles list /agent offers: each entry names
// a configured profile, once.
func (d *decoder) validateChoices(c *Config, path string, list []string) {
	if d.failed[path] || len(c.Profiles) == 0 {
		return
	}
	for i, name := range list {
		if _, ok := c.Profiles[name]; !ok {
			d.fail(d.line(path), path, "entry %d names no profile: %s is not one of %s", i+1,
				yamlnode.Quote(name), strings.Join(slices.Sorted(maps.Keys(c.Profiles)), ", "))
		} else if slices.Index(list, name) < i {
			d.fail(d.line(path), path, "lists %s twice", yamlnode.Quote(name))
		}
	}
}

// validatePlatform checks the settings every platform shares.
func (d *decoder) validatePlatform(name string, p *Platform) {
	if p.CommandPrefix == "" || strings.ContainsFunc(p.CommandPrefix, isSpace) {
		d.fail(d.line(name+".command_prefix"), name+".command_prefix", "must be non-empty and without spaces")
	}
	if slices.Contains(p.Approvers, Wildcard) {
		d.fail(d.line(name+".approvers"), name+".approvers", `"*" is not allowed here: list the user ids who may answer anyone's permission prompts`)
	}
	if !p.Enabled {
		return
	}
	d.checkURL(name+".api_url", p.APIURL)
	if len(p.AllowUsers) == 0 && len(p.AllowChats) == 0 {
		d.warn(d.line(name), name, "enabled, but allow_users and allow_chats are empty, so nobody may use the bot")
	}
	if slices.Contains(p.AllowUsers, Wildcard) {
		d.warn(d.line(name+".allow_users"), name+".allow_users", `"*" lets anyone use the bot`)
	}
	if slices.Contains(p.AllowChats, Wildcard) {
		d.warn(d.line(name+".allow_chats"), name+".allow_chats", `"*" lets members of any chat use the bot`)
	}
}

func isSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }

// need reports whether a field an enabled platform cannot work without is
// set, failing otherwise: with the variables it references that are unset
// or empty, or else as missing.
func (d *decoder) need(path string, set bool, why string) bool {
	d.needed[path] = true
	if d.failed[path] {
		return false // its value was already reported as wrong
	}
	if e, ok := d.vars[path]; ok && (len(e.unset) > 0 || len(e.empty) > 0) {
		d.fail(e.line, path, "%s", varProblem(e))
		return false
	}
	if !set {
		d.fail(d.line(path), path, "is required %s", why)
		return false
	}
	return true
}

// optionalVars fails optional fields of an enabled platform that reference
// unset variables amid other text. A field that is exactly one unset
// ${VAR} counts as not configured, so `api_url: ${SLACK_API_URL}` is an
// override the environment may or may not give.
func (d *decoder) optionalVars(platform string) {
	for _, path := range slices.Sorted(maps.Keys(d.vars)) {
		e := d.vars[path]
		if !strings.HasPrefix(path, platform+".") || d.needed[path] || e.whole || len(e.unset) == 0 {
			continue
		}
		d.fail(e.line, path, "%s", varProblem(expansion{unset: e.unset}))
	}
}

func varProblem(e expansion) string {
	names, state := e.unset, "not set"
	if len(names) == 0 {
		names, state = e.empty, "empty"
	}
	if len(names) == 1 {
		return "environment variable " + names[0] + " is " + state
	}
	return "environment variables " + strings.Join(names, ", ") + " are " + state
}

// checkURL fails v unless it is empty or an absolute http(s) URL. The value
// is not quoted: it may embed credentials.
func (d *decoder) checkURL(path, v string) {
	if v == "" || len(d.vars[path].unset) > 0 {
		return // an unset variable is reported as such, not as a bad URL
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		d.fail(d.line(path), path, "must be an absolute http or https URL")
	}
}

// checkListen fails v unless it is host:port, and returns the host. Two
// listeners on one address (two accounts' webhooks, say) are an error: the
// second could never bind. Port 0 picks a free port each time.
func (d *decoder) checkListen(path, v string) (string, bool) {
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		d.fail(d.line(path), path, `must be host:port, such as "127.0.0.1:9464" or ":3000", got %s`, yamlnode.Quote(v))
		return "", false
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		d.fail(d.line(path), path, "port must be a number from 0 to 65535, got %s", yamlnode.Quote(port))
		return "", false
	}
	if port != "0" {
		if first, taken := d.listens[v]; taken {
			d.fail(d.line(path), path, "the same address as %s (line %d): two listeners cannot share one", first, d.line(first))
			return "", false
		}
		d.listens[v] = path
	}
	return host, true
}

func loopback(host string) bool { return httpguard.Loopback(host) }

// validateConsole checks the operator console: an address and a token, or
// neither; a certificate and its key, or neither; and no plain HTTP on an
// address other hosts reach unless insecure says so.
func (d *decoder) validateConsole(c *Config, dir string) {
	k := &c.Console
	if k.Listen == "" {
		if !k.Token.IsZero() && !d.failed["console.listen"] {
			d.fail(d.line("console"), "console.listen", "is required when console.token is set: the host:port to serve the console on")
		}
		return
	}
	d.checkListen("console.listen", k.Listen)
	if d.need("console.token", !k.Token.IsZero(), "when console.listen is set: the token operators log in with") && len(k.Token.Reveal()) < 16 {
		d.warn(d.line("console.token"), "console.token", "shorter than 16 characters: use a long random token (openssl rand -hex 32)")
	}
	if (k.TLSCert == "") != (k.TLSKey == "") {
		d.fail(d.line("console"), "console.tls_key", "set tls_cert and tls_key together (a PEM certificate and its key), or neither")
		return
	}
	if k.TLSCert != "" {
		k.TLSCert, k.TLSKey = absPath(dir, k.TLSCert), absPath(dir, k.TLSKey)
		if _, err := tls.LoadX509KeyPair(k.TLSCert, k.TLSKey); err != nil {
			d.fail(d.line("console.tls_cert"), "console.tls_cert", "cannot load the certificate and key: %v", err)
		}
	}
	if err := httpguard.Exposed(k.Listen, k.TLSCert != "", k.Insecure); err != nil {
		d.fail(d.line("console.listen"), "console.listen", "%v", err)
	}
}

// StateDirEnv names the environment variable that, when set to an absolute
// directory, is where a relative store path resolves instead of the
// config file's directory. The images and the systemd unit set it to
// their writable state directory, so `store: agentbridge.db` lands in the
// volume even though the config itself is mounted read-only elsewhere.
const StateDirEnv = "AGENTBRIDGE_STATE_DIR"

// stateDir is the directory a relative store path resolves against:
// $AGENTBRIDGE_STATE_DIR when it is set and absolute, else the config's.
func (d *decoder) stateDir(configDir string) string {
	if v, ok := d.lookup(StateDirEnv); ok && v != "" {
		if filepath.IsAbs(v) {
			return v
		}
		d.warn(d.line("store"), "store", StateDirEnv+" is not an absolute path, so it is ignored: the store resolves next to the config file")
	}
	return configDir
}

func absPath(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

// validateSchedules checks each schedule: its name, conversation,
// expression, zone, message and references.
func (d *decoder) validateSchedules(c *Config) {
	var accounts []string
	for _, a := range c.Accounts {
		accounts = append(accounts, a.Name)
	}
	names := map[string]string{}
	for i := range c.Schedules {
		s := &c.Schedules[i]
		p := fmt.Sprintf("schedules[%d]", i)
		req := func(key, v, why string) bool {
			if v == "" && !d.failed[p+"."+key] {
				d.fail(d.line(p+"."+key), p+"."+key, "is required: %s", why)
			}
			return v != ""
		}
		if req("name", s.Name, "it names the schedule in logs, metrics, /schedules and the store") {
			if !validName(s.Name) {
				d.fail(d.line(p+".name"), p+".name", "a schedule name is letters, digits, '.', '_' and '-', starting with a letter or digit")
			} else if first, dup := names[s.Name]; dup {
				d.fail(d.line(p+".name"), p+".name", "the same name as %s (line %d): each schedule needs its own", first, d.line(first))
			} else {
				names[s.Name] = p + ".name"
			}
		}
		if req("platform", s.Platform, "the account section the conversation is on, e.g. slack") {
			if i := slices.IndexFunc(c.Accounts, func(a Account) bool { return a.Name == s.Platform }); i < 0 {
				d.fail(d.line(p+".platform"), p+".platform", "must be one of %s, got %s", strings.Join(accounts, ", "), yamlnode.Quote(s.Platform))
			} else if !c.Accounts[i].Enabled() {
				d.warn(d.line(p+".platform"), p+".platform", "%s is not enabled, so this schedule does not run", s.Platform)
			}
		}
		req("channel", s.Channel, "the Slack or Discord channel id or the Telegram chat id")
		if req("cron", s.Cron, `a cron expression such as "0 9 * * 1-5"`) {
			if _, err := cronexpr.Parse(s.Cron); err != nil {
				d.fail(d.line(p+".cron"), p+".cron", "%v", err)
			}
		}
		s.Location = time.UTC
		if s.TimeZone != "" {
			loc, err := time.LoadLocation(s.TimeZone)
			if err != nil || s.TimeZone == "Local" {
				d.fail(d.line(p+".time_zone"), p+".time_zone", "unknown time zone %s: give an IANA name such as Europe/Berlin or America/New_York", yamlnode.Quote(s.TimeZone))
			} else {
				s.Location = loc
			}
		}
		req("message", strings.TrimSpace(s.Message), "the message the agent is sent")
		if _, ok := c.Profiles[s.Profile]; s.Profile != "" && !ok && len(c.Profiles) > 0 {
			d.fail(d.line(p+".profile"), p+".profile", "names no profile: %s is not one of %s",
				yamlnode.Quote(s.Profile), strings.Join(slices.Sorted(maps.Keys(c.Profiles)), ", "))
		}
		if s.Session != "" && !core.ValidSessionName(s.Session) {
			d.fail(d.line(p+".session"), p+".session", "a session name is 1 to 64 %s", core.SessionNameRule)
		}
	}
}

// validateTrigger checks the HTTP trigger: an address and a token, or
// neither.
func (d *decoder) validateTrigger(c *Config) {
	t := c.Trigger
	if t.Listen == "" {
		if !t.Token.IsZero() && !d.failed["trigger.listen"] {
			d.fail(d.line("trigger"), "trigger.listen", "is required when trigger.token is set: the host:port to serve POST /v1/turns on")
		}
		return
	}
	if host, ok := d.checkListen("trigger.listen", t.Listen); ok && !loopback(host) {
		d.warn(d.line("trigger.listen"), "trigger.listen", "not a loopback address: the trigger speaks plain HTTP, so its token crosses the network readable; put a TLS proxy in front")
	}
	if d.need("trigger.token", !t.Token.IsZero(), "when trigger.listen is set: the bearer token callers must send") && len(t.Token.Reveal()) < 16 {
		d.warn(d.line("trigger.token"), "trigger.token", "shorter than 16 characters: use a long random token (openssl rand -hex 32)")
	}
}
