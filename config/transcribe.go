package config

import (
	"net/url"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/agentbridge/agentbridge/core"
)

// Transcribe is a transcribe section: how voice notes become text, by an
// OpenAI-compatible endpoint (APIURL) or a local command (Command). A
// platform's applies to its conversations, a route's (when written)
// replaces it in the route's.
type Transcribe struct {
	// Set is true when the section is written; a route's replaces the
	// platform's only then.
	Set bool
	// Enabled is false only when the section says enabled: false (a route
	// that turns the platform's off).
	Enabled bool
	// APIURL is the endpoint's base (".../v1"); the bridge POSTs to
	// APIURL/audio/transcriptions.
	APIURL   string
	Model    string
	APIKey   core.Secret
	Language string
	// Command is an argv, no shell; {{FILE}} in it is the audio file.
	Command []string
	// Timeout, MaxDuration and MaxBytes bound each voice note; 0 is the
	// engine's default (engine.DefaultTranscribeTimeout and the like).
	Timeout     time.Duration
	MaxDuration time.Duration
	MaxBytes    int64
}

// On reports whether t transcribes.
func (t Transcribe) On() bool { return t.Set && t.Enabled }

// TranscribeFor returns the transcribe section for conv: the first
// matching route's, when it writes one, else its platform's.
func (c *Config) TranscribeFor(conv core.ConversationKey) Transcribe {
	for _, r := range c.Routes {
		if r.Matches(conv) {
			if r.Transcribe.Set {
				return r.Transcribe
			}
			break
		}
	}
	for _, a := range c.Accounts {
		if a.Name == conv.Platform {
			return a.Section.Shared().Transcribe
		}
	}
	return Transcribe{}
}

// transcribe decodes a transcribe section.
func (d *decoder) transcribe(t *Transcribe) func(*yaml.Node, string) {
	return func(n *yaml.Node, path string) {
		*t = Transcribe{Enabled: true}
		before := len(d.errs)
		d.mapping(n, path, []field{
			{"enabled", d.boolean(&t.Enabled)},
			{"api_url", d.url(&t.APIURL)},
			{"model", d.str(&t.Model)},
			{"api_key", d.secret(&t.APIKey)},
			{"language", d.str(&t.Language)},
			{"command", d.list(&t.Command)},
			{"timeout", d.duration(&t.Timeout, true)},
			{"max_duration", d.duration(&t.MaxDuration, true)},
			{"max_bytes", intField(d, &t.MaxBytes, 1, 1<<62)},
		})
		t.Set = !isNull(resolve(n))
		if len(d.errs) > before {
			d.failed[path] = true // its problems are told; no more about it
		}
	}
}

// validateTranscribe checks a written transcribe section: one engine, and
// what it needs.
func (d *decoder) validateTranscribe(path string, t Transcribe) {
	if !t.On() || d.failed[path] {
		return
	}
	sub := func(k string) string { return path + "." + k }
	if e := d.vars[sub("api_url")]; len(e.unset) > 0 {
		d.fail(e.line, sub("api_url"), "%s", varProblem(expansion{unset: e.unset}))
		return
	}
	switch {
	case t.APIURL == "" && len(t.Command) == 0 && !d.failed[sub("api_url")] && !d.failed[sub("command")]:
		d.fail(d.line(path), path, "names no engine: set api_url (an OpenAI-compatible endpoint) or command (a local program), or enabled: false")
	case t.APIURL != "" && len(t.Command) > 0:
		d.fail(d.line(sub("command")), sub("command"), "set api_url or command, not both")
	case t.APIURL != "":
		d.checkURL(sub("api_url"), t.APIURL)
		if t.Model == "" && !d.failed[sub("model")] {
			d.fail(d.line(path), sub("model"), "is required with api_url: the endpoint's model, e.g. whisper-1")
		}
		// An optional key, but one written as ${VAR} must be set: an
		// unset one would send the audio unauthenticated.
		if e, ok := d.vars[sub("api_key")]; ok && (len(e.unset) > 0 || len(e.empty) > 0) {
			d.needed[sub("api_key")] = true
			d.fail(e.line, sub("api_key"), "%s", varProblem(e))
		} else if u, err := url.Parse(t.APIURL); err == nil && u.Scheme == "http" && !t.APIKey.IsZero() && !loopback(u.Hostname()) {
			d.warn(d.line(sub("api_url")), sub("api_url"), "plain http beyond this host: the api_key and the audio cross the network readable")
		}
	default:
		placeholder := func(s string) bool { return strings.Contains(s, "{{FILE}}") || strings.Contains(s, "{{WAV}}") }
		if placeholder(t.Command[0]) {
			d.fail(d.line(sub("command")), sub("command"), "the first entry is the program; {{FILE}} or {{WAV}} goes in its arguments")
		} else if !slices.ContainsFunc(t.Command, placeholder) {
			d.fail(d.line(sub("command")), sub("command"), "must pass the audio file: put {{FILE}} (the note as sent) or {{WAV}} (made 16 kHz WAV by ffmpeg) in an argument, e.g. [whisper-cli, -m, model.bin, -f, \"{{WAV}}\"]")
		}
		for _, k := range []string{"model", "api_key", "language"} {
			if _, written := d.lines[sub(k)]; written {
				d.fail(d.line(sub(k)), sub(k), "belongs with api_url; a command gets only the audio file")
			}
		}
	}
}
