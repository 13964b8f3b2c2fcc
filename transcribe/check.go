package transcribe

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/agentbridge/agentbridge/config"
	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/internal/execpath"
)

// Unstartable reports why the command cannot run on this host — its
// program, or ffmpeg for WAVPlaceholder, is not on the PATH it will get —
// or nil. Voice notes then reach the agent untranscribed, each sender told.
func (c *Command) Unstartable() error {
	env := c.Environ
	if env == nil {
		env = agentproc.InfraEnv(os.Environ())
	}
	path := execpath.PathOf(env)
	progs := c.Argv[:min(len(c.Argv), 1)]
	if slices.ContainsFunc(c.Argv, func(a string) bool { return strings.Contains(a, WAVPlaceholder) }) {
		progs = append(slices.Clone(progs), "ffmpeg")
	}
	for _, p := range progs {
		full, err := execpath.Look(p, path)
		if err == nil {
			_, err = os.Stat(full)
		}
		if err != nil {
			return fmt.Errorf("%s cannot run: %w", p, err)
		}
	}
	return nil
}

// Warnings returns, at the config lines that set them, the transcribe
// commands of enabled accounts and of routes that cannot run here: what
// validate reports and serve logs.
func Warnings(cfg *config.Config) []*config.FieldError {
	var out []*config.FieldError
	check := func(path string, t config.Transcribe) {
		if !t.On() || len(t.Command) == 0 {
			return
		}
		if err := (&Command{Argv: t.Command}).Unstartable(); err != nil {
			out = append(out, cfg.Problem(path+".command", "%v: voice notes will go to the agent untranscribed", err))
		}
	}
	for _, a := range cfg.Enabled() {
		check(a.Name+".transcribe", a.Section.Shared().Transcribe)
	}
	for i, r := range cfg.Routes {
		check(fmt.Sprintf("routes[%d].transcribe", i), r.Transcribe)
	}
	return out
}
