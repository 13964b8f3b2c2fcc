package config

import (
	"fmt"
	"log/slog"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/agentbridge/agentbridge/core"
)

// Kind is what a chat platform's package provides so that the bridge can
// configure and run it: the name of its config section, a section holding
// its defaults, and the factory that builds its adapter. Package platforms
// lists the kinds a build serves; this package knows none of them.
type Kind struct {
	// Name is the section's key and the ConversationKey.Platform of the
	// platform's first account, e.g. "telegram".
	Name string
	// NewSection returns a section holding the platform's defaults. Nil for
	// a platform that serve does not run (the terminal), which routes may
	// still name.
	NewSection func() Section
	// NewAdapter builds the adapter of one enabled account from its
	// decoded, validated section (the type NewSection returns). It does no
	// network I/O that could be left to Run.
	NewAdapter func(s Section, deps Deps) (core.Platform, error)
}

// NewKind is the Kind of a platform whose sections are S: newAdapter is
// given the section as the S that newSection made.
func NewKind[S Section, P core.Platform](name string, newSection func() S, newAdapter func(S, Deps) (P, error)) Kind {
	return Kind{
		Name:       name,
		NewSection: func() Section { return newSection() },
		NewAdapter: func(s Section, deps Deps) (core.Platform, error) {
			p, err := newAdapter(s.(S), deps)
			if err != nil {
				return nil, err // not a nil P in a non-nil core.Platform
			}
			return p, nil
		},
	}
}

// Section is one account's settings: the settings every platform shares
// and the platform's own, which it declares and checks itself.
type Section interface {
	// Shared returns the settings every platform section has.
	Shared() *Platform
	// Declare declares the platform's own keys, with where to decode them.
	Declare(f *Fields)
	// Check checks an enabled section after it is decoded: fields it cannot
	// work without, values that only make sense together.
	Check(c *Checker)
}

// Deps are what an adapter factory is given besides its section.
type Deps struct {
	// Name is the account's name, to be the adapter's Name() and so the
	// ConversationKey.Platform of its conversations: "telegram" for the
	// telegram section, "telegram/work" for a telegram/work section. Cursors
	// an adapter keeps must be distinct per name.
	Name string
	// Store keeps the adapter's cursors.
	Store core.Cursors
	// Log is the adapter's logger.
	Log *slog.Logger
	// Presenter is the config's presenter section, for adapters whose
	// streaming depends on it.
	Presenter Presenter
	// Profiles are the profiles /agent may offer in the account's
	// conversations (Config.OfferedProfiles), for a platform that
	// registers fixed choices (Discord's slash command).
	Profiles []string
}

// Account is one configured platform account: a section of the file.
type Account struct {
	// Name is the section's key: the kind's name for its first account,
	// "KIND/NAME" for others. It is the ConversationKey.Platform of the
	// account's conversations and the name routes and metrics use.
	Name string
	// Kind is the platform the account is on.
	Kind Kind
	// Section holds the account's settings, of the type Kind.NewSection
	// returns.
	Section Section
}

// Format prints the account as its name and section whatever the verb, so
// the section's secrets print as REDACTED through their own methods (with
// a verb such as %s, fmt would print them raw from inside a pointer).
func (a Account) Format(f fmt.State, _ rune) {
	fmt.Fprintf(f, "{%s %+v}", a.Name, a.Section)
}

// Enabled reports whether the account's section turns it on.
func (a Account) Enabled() bool { return a.Section.Shared().Enabled }

// NewAdapter builds the account's adapter.
func (a Account) NewAdapter(deps Deps) (core.Platform, error) {
	deps.Name = a.Name
	return a.Kind.NewAdapter(a.Section, deps)
}

// Fields declares a section's keys to the decoder. Each method names a key
// and the variable its value is decoded into; a key left out of the file
// keeps the variable's value, the default.
type Fields struct {
	d    *decoder
	list []field
}

func (f *Fields) add(name string, set func(*yaml.Node, string)) {
	f.list = append(f.list, field{name, set})
}

// String declares a string key.
func (f *Fields) String(name string, dst *string) { f.add(name, f.d.str(dst)) }

// Enum declares a string key that must be one of allowed.
func (f *Fields) Enum(name string, dst *string, allowed ...string) {
	f.add(name, f.d.enum(dst, allowed...))
}

// Bool declares a true/false key.
func (f *Fields) Bool(name string, dst *bool) { f.add(name, f.d.boolean(dst)) }

// List declares a list of ids (numbers are accepted as strings).
func (f *Fields) List(name string, dst *[]string) { f.add(name, f.d.list(dst)) }

// Secret declares a secret: ${VAR} references are expanded, and a value
// written literally draws a warning.
func (f *Fields) Secret(name string, dst *core.Secret) { f.add(name, f.d.secret(dst)) }

// URL declares a URL, in which ${VAR} references are expanded.
func (f *Fields) URL(name string, dst *string) { f.add(name, f.d.url(dst)) }

// Checker checks one enabled section after decoding. Keys are the
// section's own, such as "token"; problems are reported at their line with
// the section's path.
type Checker struct {
	d       *decoder
	kind    string
	section string
}

// Section returns the section's key, such as "telegram" or "telegram/work",
// for messages like "is required when telegram/work is enabled".
func (c *Checker) Section() string { return c.section }

func (c *Checker) path(key string) string { return c.section + "." + key }

// Need reports whether a field the platform cannot work without is set.
// When it is not, it reports the problem: the variables the value
// references that are unset or empty, or else "is required " + why.
func (c *Checker) Need(key string, set bool, why string) bool {
	return c.d.need(c.path(key), set, why)
}

// Fail reports a problem with key's value. The message must not quote a
// secret.
func (c *Checker) Fail(key, format string, args ...any) {
	p := c.path(key)
	c.d.fail(c.d.line(p), p, format, args...)
}

// Warn reports a doubtful but legal value of key.
func (c *Checker) Warn(key, format string, args ...any) {
	p := c.path(key)
	c.d.warn(c.d.line(p), p, format, args...)
}

// URL fails v unless it is empty or an absolute http(s) URL.
func (c *Checker) URL(key, v string) { c.d.checkURL(c.path(key), v) }

// Listen fails v unless it is host:port, and returns the host.
func (c *Checker) Listen(key, v string) (host string, ok bool) {
	return c.d.checkListen(c.path(key), v)
}

// Unique fails key's value when another enabled account of the same
// platform has the same one: a bot token, say, which two accounts cannot
// both use (Telegram lets one poller fetch a bot's updates; two Slack
// accounts on one app would answer everything twice). The value is never
// quoted. Empty values are not compared.
func (c *Checker) Unique(key, value string) {
	if value == "" {
		return
	}
	id := c.kind + "\x00" + key + "\x00" + value
	p := c.path(key)
	if first, taken := c.d.uniques[id]; taken {
		c.d.fail(c.d.line(p), p, "the same as %s (line %d): each account needs its own", first, c.d.line(first))
		return
	}
	c.d.uniques[id] = p
}

// accountName splits a section key into its kind and account: "telegram"
// is the telegram kind's first account, "telegram/work" another one.
func accountName(key string) (kind, account string, ok bool) {
	kind, account, ok = strings.Cut(key, "/")
	return kind, account, ok && validName(account)
}
