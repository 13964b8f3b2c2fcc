package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestShimCommand(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no agent CLI anywhere
	turn := `{"type":"turn","message":"hi","session_id":"","protocol_version":"0.4"}` + "\n"
	tests := []struct {
		name       string
		args       []string
		wantStdout string
		wantCode   int
	}{
		{"no name", []string{"shim"}, "", 2},
		{"unknown name", []string{"shim", "cursor"}, "", 2},
		{"claude missing", []string{"shim", "claude"},
			`{"type":"error","message":"claude not found on PATH — install with npm i -g @anthropic-ai/claude-code"}` + "\n", 127},
		{"codex missing", []string{"shim", "codex"},
			`{"type":"error","message":"codex not found on PATH — install with npm i -g @openai/codex"}` + "\n", 127},
		{"gemini missing", []string{"shim", "gemini"},
			`{"type":"error","message":"gemini not found on PATH — install with npm i -g @google/gemini-cli"}` + "\n", 127},
		{"qwen missing", []string{"shim", "qwen"},
			`{"type":"error","message":"qwen not found on PATH — install with npm i -g @qwen-code/qwen-code"}` + "\n", 127},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tt.args, strings.NewReader(turn), &stdout, &stderr)
			if code := exitStatus(err, &stderr); code != tt.wantCode {
				t.Errorf("exit status %d, want %d (stderr %q)", code, tt.wantCode, stderr.String())
			}
			if diff := cmp.Diff(tt.wantStdout, stdout.String()); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
		})
	}
}

func TestShimHelpListsShims(t *testing.T) {
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"shim", "-h"}, strings.NewReader(""), &stdout, &stdout); err != nil {
		t.Fatal(err)
	}
	for name := range shims {
		if !strings.Contains(stdout.String(), name) {
			t.Errorf("shim -h does not list %s: %q", name, stdout.String())
		}
	}
	var uerr usageError
	if err := run(context.Background(), []string{"shim", "nope"}, strings.NewReader(""), &stdout, &stdout); !errors.As(err, &uerr) {
		t.Errorf("unknown shim: err %v, want a usage error", err)
	}
}
