package isolate_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentbridge/agentbridge/internal/isolate/fakeruntime"
	"github.com/agentbridge/agentbridge/internal/testagent"
)

// TestMain: the test binary is also the fake docker, podman and kubectl
// (run under those names) and the remote agent (with testagent.Env set).
func TestMain(m *testing.M) {
	fakeruntime.Main()
	if os.Getenv(testagent.Env) != "" {
		os.Exit(testagent.Run(os.Stdin, os.Stdout))
	}
	goleak.VerifyTestMain(m)
}
