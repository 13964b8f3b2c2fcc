package core_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCoreImportsNoAdapterStoreOrSDK enforces the dependency rule: core and
// everything under it never import an adapter, the store, the runtime
// (daemon), profiles, the agent shims, bbolt or a chat platform SDK. (Tests under core may use the real store.)
func TestCoreImportsNoAdapterStoreOrSDK(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "github.com/agentbridge/agentbridge/core/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	forbidden := []string{
		"github.com/agentbridge/agentbridge/adapters",
		"github.com/agentbridge/agentbridge/store",
		"github.com/agentbridge/agentbridge/cmd",
		"github.com/agentbridge/agentbridge/config",
		"github.com/agentbridge/agentbridge/daemon",
		"github.com/agentbridge/agentbridge/profiles",
		"github.com/agentbridge/agentbridge/shim",
		"go.etcd.io/bbolt",
		"github.com/slack-go/slack",
		"github.com/bwmarrin/discordgo",
		"github.com/go-telegram-bot-api",
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list returned only %d packages; the check would prove nothing", len(deps))
	}
	for _, dep := range deps {
		for _, bad := range forbidden {
			if dep == bad || strings.HasPrefix(dep, bad+"/") {
				t.Errorf("core depends on %s (forbidden: %s)", dep, bad)
			}
		}
	}
}

// TestDepsCheckCatchesAForbiddenImport proves the check above can fail: the
// store package, which imports bbolt, is reported.
func TestDepsCheckCatchesAForbiddenImport(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "github.com/agentbridge/agentbridge/store").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	if !strings.Contains(string(out), "go.etcd.io/bbolt") {
		t.Fatal("go list -deps of the store does not show bbolt; the dependency check is blind")
	}
}
