package core_test

import (
	"os"
	"strings"
	"testing"

	"github.com/agentbridge/agentbridge/core"
)

// TestRolesAreTheProtocols: the role names are the ones the protocol's
// partial event defines (P-PART-2), as the spec in this repository words
// them.
func TestRolesAreTheProtocols(t *testing.T) {
	spec, err := os.ReadFile("../spec/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	var rule string
	for line := range strings.Lines(string(spec)) {
		if strings.Contains(line, "[P-PART-2]") {
			rule = line
		}
	}
	want := "`role` is `\"" + core.RoleOutput + "\"` (default) or `\"" + core.RoleThinking + "\"`"
	if !strings.Contains(rule, want) {
		t.Errorf("P-PART-2 reads %q; want it to name the roles as %s", rule, want)
	}
}
