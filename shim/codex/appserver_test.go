package codex

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge/shim"
	"github.com/agentbridge/agentbridge/shim/internal/shimio"
	"github.com/agentbridge/agentbridge/shim/internal/shimtest"
)

const turnID = "01a229d5-294e-7d20-ac12-57ac78a718d3"

func allow(req ev) ev {
	return ev{"type": "permission_response", "request_id": req["request_id"], "behavior": "allow"}
}

func deny(req ev) ev {
	return ev{"type": "permission_response", "request_id": req["request_id"], "behavior": "deny", "message": "not now"}
}

// The touch command of research/samples/a1.jsonl as a permission_request
// (P-PERM-2, F-PERM-1).
var touchRequest = ev{"type": "permission_request", "request_id": "1", "tool_name": "Bash", "session_id": turnID,
	"input":       ev{"command": "/bin/bash -lc 'touch codex_touched.txt'", "cwd": "/work/w2"},
	"description": "Run a shell command", "tool_use_id": "call_a3a109d74d18"}

var touchTool = ev{"type": "partial", "role": "thinking", "text": "🔧 Bash: touch codex_touched.txt\n", "session_id": turnID}

var afterTool = []ev{
	{"type": "partial", "text": "Mock", "session_id": turnID},
	{"type": "partial", "text": " done", "session_id": turnID},
	{"type": "partial", "text": " after tool.", "session_id": turnID},
	{"type": "result", "text": "Mock done after tool.", "session_id": turnID, "usage": ev{
		"input_tokens": 42.0, "output_tokens": 20.0, "total_tokens": 62.0, "cache_read_input_tokens": 5.0, "reasoning_tokens": 2.0, "duration_ms": 376.0}},
}

func withText(e ev, text string) ev {
	e = maps.Clone(e)
	e["text"] = text
	return e
}

// TestAppServerReplay: with "permission": true (P-STDIN-2) the shim drives
// codex app-server over JSON-RPC; each recording also checks, line by line,
// what the shim sends codex (the decision for each approval).
func TestAppServerReplay(t *testing.T) {
	tests := []struct {
		name    string
		script  string
		turn    ev
		args    []string
		respond func(ev) ev
		want    []ev
		argv    []string
		failed  bool
	}{
		{
			name: "command approved: accept, deltas, usage summed over calls", script: "as_approve.txt",
			turn: ev{"message": "please USE_TOOL now"}, respond: allow,
			args: []string{"--", "-c", "analytics.enabled=false"},
			want: append([]ev{touchTool, touchRequest}, afterTool...),
			argv: withSendFile("app-server", "-c", "analytics.enabled=false"),
		},
		{
			name: "command denied: decline", script: "as_deny.txt",
			turn: ev{"message": "please USE_TOOL now"}, respond: deny,
			want: append([]ev{touchTool, touchRequest}, afterTool...),
			argv: withSendFile("app-server"),
		},
		{
			name: "resume: thread/resume, thinking, two messages, sub-agent ignored, other requests refused", script: "as_resume.txt",
			turn: ev{"message": "-second turn", "session_id": turnID}, respond: allow,
			want: []ev{
				{"type": "partial", "role": "thinking", "text": "**Planning**", "session_id": turnID},
				{"type": "partial", "role": "thinking", "text": " the answer", "session_id": turnID},
				{"type": "partial", "role": "thinking", "text": "Whole summary, no deltas", "session_id": turnID},
				{"type": "partial", "text": "First", "session_id": turnID},
				{"type": "partial", "text": " part.", "session_id": turnID},
				{"type": "partial", "text": "\n\nSecond part, whole.", "session_id": turnID},
				{"type": "result", "text": "Second part, whole.", "session_id": turnID,
					"usage": ev{"input_tokens": 21.0, "output_tokens": 9.0, "total_tokens": 30.0, "duration_ms": 120.0}},
			},
			argv: withSendFile("app-server"),
		},
		{
			name: "file change approved: Edit with the item's changes", script: "as_filechange.txt",
			turn: ev{"message": "add a readme"}, respond: allow,
			want: []ev{
				{"type": "partial", "role": "thinking", "text": "✏️ Edit: /work/w2/README.md\n", "session_id": turnID},
				{"type": "permission_request", "request_id": "1", "tool_name": "Edit", "session_id": turnID, "tool_use_id": "call_patch1",
					"description": "write outside the sandbox",
					"input":       ev{"changes": []any{ev{"path": "/work/w2/README.md", "kind": ev{"type": "add"}, "diff": "+hello\n"}}}},
				{"type": "partial", "text": "Added.", "session_id": turnID},
				{"type": "result", "text": "Added.", "session_id": turnID},
			},
			argv: withSendFile("app-server"),
		},
		{
			name: "failed turn: the last error that will not be retried", script: "as_failed.txt",
			turn: ev{"message": "say hi"},
			want: []ev{{"type": "error", "session_id": turnID, "message": "unexpected status 401 Unauthorized: Incorrect API key provided (mock) — " + cli.Login}},
			argv: withSendFile("app-server"), failed: true,
		},
		{
			name: "a thread codex has no rollout of: a new thread on the same connection, one notice", script: "as_noresume.txt",
			turn: ev{"message": "please USE_TOOL now", "session_id": "11111111-2222-4333-8444-555555555555"}, respond: allow,
			want: append([]ev{{"type": "partial", "text": shimio.ResumeNotice + "\n\n"}, touchTool, touchRequest},
				append(afterTool[:len(afterTool)-1:len(afterTool)-1], withText(afterTool[len(afterTool)-1], shimio.ResumeNotice+"\n\nMock done after tool."))...),
			argv: withSendFile("app-server"),
		},
		{
			name: "dies at startup: status and stderr", script: "as_crash.txt",
			turn:   ev{"message": "hi"},
			want:   []ev{{"type": "error", "message": "codex exited with status 1: Error: `wire_api = \"chat\"` is no longer supported"}},
			argv:   withSendFile("app-server"),
			failed: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := shimtest.NewFake(t, "codex")
			turn := ev{"type": "turn", "session_id": "", "protocol_version": "0.4", "permission": true}
			for k, v := range tt.turn {
				turn[k] = v
			}
			res := shimtest.Drive(t, Run, turn, tt.args, fake.Environ(t, "testdata/"+tt.script), tt.respond)
			if diff := cmp.Diff(tt.want, res.Events); diff != "" {
				t.Errorf("events (-want +got):\n%s\nstderr:\n%s", diff, res.Stderr)
			}
			if diff := cmp.Diff(tt.argv, fake.Args(t)); diff != "" {
				t.Errorf("codex argv (-want +got):\n%s", diff)
			}
			if got := errors.Is(res.Err, shim.ErrTurnFailed); got != tt.failed || (!tt.failed && res.Err != nil) {
				t.Errorf("Run error = %v, want failed=%v\nstderr:\n%s", res.Err, tt.failed, res.Stderr)
			}
		})
	}
}

// TestAppServerBridgeCloses: when the bridge closes stdin with a request
// unanswered (F-PERM-3: never leave the agent blocked), the shim declines
// it and the turn still ends.
func TestAppServerBridgeCloses(t *testing.T) {
	fake := shimtest.NewFake(t, "codex")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := Run(ctx, stdinR, stdoutW, io.Discard, nil, fake.Environ(t, "testdata/as_noanswer.txt"))
		stdoutW.Close()
		done <- err
	}()
	turn, _ := json.Marshal(ev{"type": "turn", "message": "please USE_TOOL now", "session_id": "", "protocol_version": "0.4", "permission": true})
	if _, err := stdinW.Write(append(turn, '\n')); err != nil {
		t.Fatal(err)
	}
	var types []string
	sc := bufio.NewScanner(stdoutR)
	for sc.Scan() {
		var e ev
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("not JSON: %s", sc.Bytes())
		}
		types = append(types, e["type"].(string))
		if e["type"] == "permission_request" {
			stdinW.Close() // the bridge goes away without answering
		}
	}
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
	if got, want := strings.Join(types, ","), "partial,permission_request,partial,partial,partial,result"; got != want {
		t.Errorf("events %s, want %s", got, want)
	}
}
