package webconsole

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentbridge/agentbridge/internal/testagent"
)

// TestMain runs the tests, or, when a test re-executes this binary as its
// agent (testagent.Env), plays that agent.
func TestMain(m *testing.M) {
	if os.Getenv(testagent.Env) != "" {
		os.Exit(testagent.Run(os.Stdin, os.Stdout))
	}
	goleak.VerifyTestMain(m)
}
