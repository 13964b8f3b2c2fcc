// Package preflight is agentbridge validate: every check serve makes
// before it starts, run without starting anything, with every problem of
// the config and of the profiles it names reported in one run.
package preflight

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/profiles"
	"github.com/agentbridge/agentbridge/transcribe"
)

// Report is the outcome of Check. Its JSON form is validate --json's output.
type Report struct {
	// Config is the config file's path, as given.
	Config string `json:"config"`
	// Valid is true when serve would start with this config: no errors.
	Valid bool `json:"valid"`
	// Errors stop serve: problems of the config and of its profiles.
	Errors []Problem `json:"errors"`
	// Warnings do not stop serve but are worth fixing: a literal secret, a
	// wildcard access list, no platform enabled, an agent that cannot start
	// on this machine.
	Warnings []Problem `json:"warnings"`
	// Profiles names the profiles the config defines, sorted.
	Profiles []string `json:"profiles"`
	// Platforms names the enabled platform accounts.
	Platforms []string `json:"platforms"`
}

// Problem is one error or warning. File, Line and Path say where it is in
// the config file, when it is in one (a broken profile is reported at the
// config line that names it); Message is the whole text.
type Problem struct {
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Path    string `json:"path,omitempty"`
	Problem string `json:"problem"`
	Message string `json:"message"`
}

func fieldProblem(e *config.FieldError) Problem {
	return Problem{File: e.File, Line: e.Line, Path: e.Path, Problem: e.Problem, Message: e.Error()}
}

// problems flattens an error joined of *config.FieldErrors (and others).
func problems(err error) []Problem {
	var out []Problem
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		if fe := (*config.FieldError)(nil); errors.As(e, &fe) {
			out = append(out, fieldProblem(fe))
		} else {
			out = append(out, Problem{Problem: e.Error(), Message: e.Error()})
		}
	}
	return out
}

// Check checks the config file at path and every profile it names. kinds
// are the platforms the config may enable.
func Check(path string, kinds []config.Kind) *Report {
	r := &Report{Config: path, Errors: []Problem{}, Warnings: []Problem{}, Profiles: []string{}, Platforms: []string{}}
	data, err := os.ReadFile(path)
	if err != nil {
		msg := fmt.Sprintf("cannot read the config file: %v", err)
		r.Errors = append(r.Errors, Problem{File: path, Problem: msg, Message: msg})
		return r
	}
	cfg, err := config.Inspect(data, path, config.Options{Platforms: kinds})
	if err != nil {
		r.Errors = append(r.Errors, problems(err)...)
	}
	if cfg == nil {
		return r // not YAML: nothing more to check
	}
	for _, w := range cfg.Warnings() {
		r.Warnings = append(r.Warnings, fieldProblem(w))
	}
	r.Profiles = slices.Sorted(maps.Keys(cfg.Profiles))

	// Profiles the config already found wrong are not loaded again.
	reported := map[string]bool{}
	for _, p := range r.Errors {
		reported[p.Path] = true
	}
	for name := range cfg.Profiles {
		if reported["profiles."+name] {
			delete(cfg.Profiles, name)
		}
	}
	profs, err := profiles.Load(cfg)
	if err != nil {
		r.Errors = append(r.Errors, problems(err)...)
		slices.SortStableFunc(r.Errors, func(a, b Problem) int { return a.Line - b.Line })
	}
	bad := profiles.Unstartable(profs)
	for _, name := range slices.Sorted(maps.Keys(bad)) {
		// Located at the config line that names the profile; worded as
		// serve logs it.
		p := fieldProblem(cfg.Problem("profiles."+name, "%v", bad[name]))
		p.Message = profiles.Warning(name, bad[name])
		r.Warnings = append(r.Warnings, p)
	}

	for _, w := range transcribe.Warnings(cfg) {
		r.Warnings = append(r.Warnings, fieldProblem(w))
	}

	for _, a := range cfg.Enabled() {
		r.Platforms = append(r.Platforms, a.Name)
	}
	if len(r.Platforms) == 0 {
		msg := "no platform is enabled, so serve will refuse to start: " + cfg.EnableHint()
		r.Warnings = append(r.Warnings, Problem{File: path, Line: 1, Problem: msg, Message: path + ":1: " + msg})
	}
	r.Valid = len(r.Errors) == 0
	return r
}
