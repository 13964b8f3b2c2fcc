package codex

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/agentbridge/agentbridge/profiles/shim/internal/shimtest"
)

func TestMain(m *testing.M) {
	shimtest.FakeMain() // the test binary doubles as the fake codex
	goleak.VerifyTestMain(m)
}

type ev = map[string]any

const thread = "01a229d3-4374-7cf3-9613-535264693a9e"

func TestReplay(t *testing.T) {
	tests := []struct {
		name   string
		script string
		turn   ev
		args   []string
		want   []ev
		argv   []string
		failed bool
	}{
		{
			name: "new thread: reasoning, message, usage", script: "new.txt", turn: ev{"message": "say hi"},
			args: []string{"--", "-m", "gpt-mock", "-c", "analytics.enabled=false"},
			want: []ev{
				{"type": "partial", "role": "thinking", "text": "**Greeting** the user", "session_id": thread},
				{"type": "partial", "text": "Hello from the responses mock.", "session_id": thread},
				{"type": "result", "text": "Hello from the responses mock.", "session_id": thread,
					"usage": ev{"input_tokens": 21.0, "output_tokens": 9.0, "total_tokens": 30.0, "cache_read_input_tokens": 4.0, "reasoning_tokens": 2.0}},
			},
			argv: []string{"exec", "--json", "--skip-git-repo-check", "-m", "gpt-mock", "-c", "analytics.enabled=false", "-"},
		},
		{
			name: "resume: exec resume THREAD -, prompt on stdin", script: "resume.txt",
			turn: ev{"message": "-second turn, dash first", "session_id": thread},
			want: []ev{
				{"type": "partial", "text": "Second turn.", "session_id": thread},
				{"type": "result", "text": "Second turn.", "session_id": thread, "usage": ev{"input_tokens": 42.0, "output_tokens": 18.0, "total_tokens": 60.0}},
			},
			argv: []string{"exec", "resume", "--json", "--skip-git-repo-check", thread, "-"},
		},
		{
			name: "messages around a command; Reconnecting is not an error", script: "tool.txt", turn: ev{"message": "please USE_TOOL"},
			want: []ev{
				{"type": "partial", "text": "Touching the file.", "session_id": thread},
				{"type": "partial", "text": "\n\nMock done after tool.", "session_id": thread},
				{"type": "result", "text": "Mock done after tool.", "session_id": thread, "usage": ev{"input_tokens": 42.0, "output_tokens": 18.0, "total_tokens": 60.0}},
			},
			argv: []string{"exec", "--json", "--skip-git-repo-check", "-"},
		},
		{
			name: "turn.failed is the error", script: "unauthorized.txt", turn: ev{"message": "say hi"},
			want: []ev{{"type": "error", "session_id": "01a229de-2058-78e2-ab61-b3c2bebc6978",
				"message": "unexpected status 401 Unauthorized: Incorrect API key provided (mock), url: http://127.0.0.1:8766/v1/responses"}},
			argv:   []string{"exec", "--json", "--skip-git-repo-check", "-"},
			failed: true,
		},
		{
			name: "an error event without turn.failed", script: "error_only.txt", turn: ev{"message": "say hi"},
			want:   []ev{{"type": "error", "message": "thread/resume: no rollout found for thread id 0000"}},
			argv:   []string{"exec", "--json", "--skip-git-repo-check", "-"},
			failed: true,
		},
		{
			name: "dies before any event: status and stderr", script: "crash.txt", turn: ev{"message": "say hi"},
			want:   []ev{{"type": "error", "message": "codex exited with status 1: Error: `wire_api = \"chat\"` is no longer supported"}},
			argv:   []string{"exec", "--json", "--skip-git-repo-check", "-"},
			failed: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := shimtest.NewFake(t, "codex")
			turn := ev{"type": "turn", "session_id": "", "protocol_version": "0.4"}
			for k, v := range tt.turn {
				turn[k] = v
			}
			res := shimtest.Drive(t, Run, turn, tt.args, fake.Environ(t, "testdata/"+tt.script), nil)
			if diff := cmp.Diff(tt.want, res.Events); diff != "" {
				t.Errorf("events (-want +got):\n%s\nstderr:\n%s", diff, res.Stderr)
			}
			if diff := cmp.Diff(tt.argv, fake.Args(t)); diff != "" {
				t.Errorf("codex argv (-want +got):\n%s", diff)
			}
			if got := errors.Is(res.Err, ErrTurnFailed); got != tt.failed || (!tt.failed && res.Err != nil) {
				t.Errorf("Run error = %v, want failed=%v", res.Err, tt.failed)
			}
		})
	}
}

func TestMissingCLI(t *testing.T) {
	turn := ev{"type": "turn", "message": "hi", "session_id": "", "protocol_version": "0.4"}
	res := shimtest.Drive(t, Run, turn, nil, []string{"PATH=" + t.TempDir()}, nil)
	want := []ev{{"type": "error", "message": "codex not found on PATH — install with npm i -g @openai/codex"}}
	if diff := cmp.Diff(want, res.Events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
