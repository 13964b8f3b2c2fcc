package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
)

// TestEveryCommandHelp: each command's -h and --help print its usage once
// and exit 0, with nothing on stdout that a caller could take for output
// (a shim's error event, say). The commands are the ones the top-level
// usage lists, plus the hidden ones profiles start.
func TestEveryCommandHelp(t *testing.T) {
	var cmds [][]string
	for _, m := range regexp.MustCompile(`(?m)^  agentbridge (\w[\w-]*)`).FindAllStringSubmatch(usage, -1) {
		cmds = append(cmds, []string{m[1]})
	}
	if len(cmds) < 6 {
		t.Fatalf("found only %v in the usage text", cmds)
	}
	cmds = append(cmds, []string{"demo-agent"}, []string{"isolate"})
	for name := range shims {
		cmds = append(cmds, []string{"shim", name})
	}
	for _, cmd := range cmds {
		for _, flag := range []string{"-h", "--help"} {
			args := append(append([]string(nil), cmd...), flag)
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
			code := exitStatus(err, &stderr)
			all := stdout.String() + stderr.String()
			if code != 0 || strings.Count(strings.ToLower(all), "usage:") != 1 {
				t.Errorf("agentbridge %s: exit %d, want 0 and the usage once; output:\n%s", strings.Join(args, " "), code, all)
			}
			if strings.HasSuffix(strings.TrimRight(all, " \n"), "flags:") {
				t.Errorf("agentbridge %s: the usage ends in a \"flags:\" heading with no flags under it:\n%s", strings.Join(args, " "), all)
			}
			if strings.Contains(stdout.String(), `"type":"error"`) {
				t.Errorf("agentbridge %s wrote an error event: %s", strings.Join(args, " "), stdout.String())
			}
		}
	}
}
