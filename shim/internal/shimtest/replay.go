package shimtest

import (
	"errors"
	"maps"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge/shim"
)

// Replay is one recorded CLI session played through a shim by a fake CLI.
type Replay struct {
	Name    string
	Script  string                                  // the recording, in testdata
	Turn    map[string]any                          // merged over the base turn line
	Args    []string                                // the shim's arguments
	Env     []string                                // more of the CLI's environment
	Respond func(req map[string]any) map[string]any // answers permission requests
	Want    []map[string]any                        // the AgentProc events expected
	Argv    []string                                // the arguments the CLI must get (its last start)
	Before  [][]string                              // the arguments of earlier starts, when the shim restarts the CLI
	Failed  bool                                    // Run must return shim.ErrTurnFailed
}

// RunReplays plays each case through run against a fake CLI named cli and
// checks the events, the CLI's arguments and Run's result. base is the
// turn line each case's Turn is merged over.
func RunReplays(t *testing.T, cli string, run RunFunc, base map[string]any, cases []Replay) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			fake := NewFake(t, cli)
			turn := maps.Clone(base)
			maps.Copy(turn, tc.Turn)
			res := Drive(t, run, turn, tc.Args, append(fake.Environ(t, "testdata/"+tc.Script), tc.Env...), tc.Respond)
			if diff := cmp.Diff(tc.Want, res.Events); diff != "" {
				t.Errorf("events (-want +got):\n%s\nstderr:\n%s", diff, res.Stderr)
			}
			if diff := cmp.Diff(append(append([][]string{}, tc.Before...), tc.Argv), fake.Starts(t)); diff != "" {
				t.Errorf("%s argv of each start (-want +got):\n%s", cli, diff)
			}
			if got := errors.Is(res.Err, shim.ErrTurnFailed); got != tc.Failed || (!tc.Failed && res.Err != nil) {
				t.Errorf("Run error = %v, want failed=%v", res.Err, tc.Failed)
			}
		})
	}
}
