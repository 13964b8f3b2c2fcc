package isolate

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// startFailure is why the wrapper could not start the agent, worded for
// the chat: each of these is the operator's to fix, so the user is told
// the bridge is misconfigured and that the operator has been told — the
// detail goes to stderr, which the bridge logs.
type startFailure struct {
	user   string // what the user reads after "The bridge is misconfigured: "
	detail string // what the operator reads in the log
}

// report writes the failure as the turn's protocol error event (P-ERR-1:
// the bridge shows it and fails the turn whatever the exit status) on
// stdout, and the detail on stderr. The agent never started, so nothing
// else was written to stdout.
func (f startFailure) report(stdout, stderr io.Writer) {
	fmt.Fprintln(stderr, f.detail)
	b, err := json.Marshal(map[string]string{
		"type":    "error",
		"message": "The bridge is misconfigured: " + f.user + " (the operator has been told)",
	})
	if err != nil {
		panic(err) // a map of strings always marshals
	}
	_, _ = stdout.Write(append(b, '\n'))
}

// classify reads a client's failed start from its exit status and the end
// of its stderr: a missing image (125 with the engine's words for it),
// another refusal by the engine (125), or a command the image lacks (126
// or 127 with the OCI runtime's words). ok is false for anything else — an
// agent that ran and failed, whose own status and output stand.
func (s Spec) classify(code int, stderr string) (f startFailure, ok bool) {
	low := strings.ToLower(stderr)
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(low, w) {
				return true
			}
		}
		return false
	}
	last := lastLine(stderr)
	switch {
	case s.Runtime == Kubectl:
		return startFailure{}, false // kubectl's exit status is the pod's; its failures have no status of their own
	case code == 125 && has("image not known", "no such image", "unable to find image", "pull access denied",
		"manifest unknown", "repository does not exist", "pinging container registry", "failed to resolve reference",
		"short-name", "initializing source", "name unknown", "requested access to the resource is denied"):
		return startFailure{
			user:   fmt.Sprintf("the agent image %q is not available to %s", s.Image, s.Runtime),
			detail: fmt.Sprintf("isolate: %s has no image %q and could not pull it: build or load it on this host, or set %s (%s)", s.Runtime, s.Image, ImageEnv, last),
		}, true
	case code == 125:
		return startFailure{
			user:   fmt.Sprintf("%s could not start the agent's container", s.Runtime),
			detail: fmt.Sprintf("isolate: %s run failed (status 125): %s", s.Runtime, last),
		}, true
	case (code == 126 || code == 127) && has("oci runtime", "executable file not found", "permission denied: oci"):
		return startFailure{
			user:   fmt.Sprintf("the agent image %q cannot run the agent's command", s.Image),
			detail: fmt.Sprintf("isolate: %s could not run %q in image %q (status %d): %s", s.Runtime, s.Args, s.Image, code, last),
		}, true
	}
	return startFailure{}, false
}
