package main

import (
	"context"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentbridge/agentbridge/internal/testagent"
	"github.com/agentbridge/agentbridge/profiles"
)

// TestMain for package main. When AGENTBRIDGE_TEST_AGENT is set, this test
// binary is being re-executed as an AgentProc agent by a test (see
// testAgent in run_test.go) and does only that; otherwise it runs the tests
// with goroutine-leak checking. Other tests in this package may add agent
// modes to testAgent, but should keep dispatching on the env var only.
// mainEnv, set in a re-executed test binary's environment, makes it run
// main with its arguments, as the agentbridge binary would.
const mainEnv = "AGENTBRIDGE_TEST_MAIN"

func TestMain(m *testing.M) {
	// A test runs agentbridge itself as a process (see startServe).
	if os.Getenv(mainEnv) != "" {
		main()
	}
	if os.Getenv(testagent.Env) != "" { // the scripted agent of internal/testagent
		os.Exit(testagent.Run(os.Stdin, os.Stdout))
	}
	if mode, ok := os.LookupEnv("AGENTBRIDGE_TEST_AGENT"); ok {
		os.Exit(testAgent(mode))
	}
	// The built-in demo profile runs os.Executable() demo-agent, and a
	// profile with command: agentbridge runs os.Executable() too, which in a
	// test is this binary: serve them the way main would.
	if len(os.Args) > 1 && (os.Args[1] == profiles.DemoCommand || os.Args[1] == "shim" || os.Args[1] == "isolate") {
		os.Exit(exitStatus(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr), os.Stderr))
	}
	goleak.VerifyTestMain(m)
}
