package gemini

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/agentbridge/agentbridge/profiles/shim/internal/shimtest"
)

func TestMain(m *testing.M) {
	shimtest.FakeMain() // the test binary doubles as the fake gemini
	goleak.VerifyTestMain(m)
}

type ev = map[string]any

const sid = "6f5d28f1-ca40-4620-ab19-c9c4a0fc2c16"

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
			name: "streamed answer", script: "stream.txt", turn: ev{"message": "say hi"},
			args: []string{"--", "-m", "gemini-2.5-flash"},
			want: []ev{
				{"type": "partial", "text": "Hello", "session_id": sid},
				{"type": "partial", "text": " from", "session_id": sid},
				{"type": "partial", "text": " gemini.", "session_id": sid},
				{"type": "result", "text": "Hello from gemini.", "session_id": sid,
					"usage": ev{"input_tokens": 34.0, "output_tokens": 12.0, "total_tokens": 46.0, "duration_ms": 104.0}},
			},
			argv: []string{"--output-format", "stream-json", "-m", "gemini-2.5-flash"},
		},
		{
			name: "resume", script: "resume.txt", turn: ev{"message": "second turn", "session_id": sid},
			want: []ev{
				{"type": "partial", "text": "Again.", "session_id": sid},
				{"type": "result", "text": "Again.", "session_id": sid,
					"usage": ev{"input_tokens": 60.0, "output_tokens": 3.0, "total_tokens": 63.0, "duration_ms": 98.0}},
			},
			argv: []string{"--output-format", "stream-json", "--resume", sid},
		},
		{
			name: "tool call and a warning", script: "tool.txt", turn: ev{"message": "please USE_TOOL"},
			want: []ev{
				{"type": "partial", "text": "Mock done after tool.", "session_id": "a30990f3-2747-4e0e-a66c-0176b75b3c3c"},
				{"type": "result", "text": "Mock done after tool.", "session_id": "a30990f3-2747-4e0e-a66c-0176b75b3c3c",
					"usage": ev{"input_tokens": 51.0, "output_tokens": 18.0, "total_tokens": 69.0, "duration_ms": 242.0}},
			},
			argv: []string{"--output-format", "stream-json"},
		},
		{
			name: "result with status error", script: "api_error.txt", turn: ev{"message": "say hi"},
			want: []ev{
				{"type": "partial", "text": "Partly", "session_id": sid},
				{"type": "error", "message": "API key not valid. Please pass a valid API key.", "session_id": sid,
					"usage": ev{"input_tokens": 17.0, "total_tokens": 17.0, "duration_ms": 10.0}},
			},
			argv:   []string{"--output-format", "stream-json"},
			failed: true,
		},
		{
			name: "untrusted directory: exit 55 explained", script: "untrusted.txt", turn: ev{"message": "say hi"},
			want:   []ev{{"type": "error", "message": "gemini refuses to run in an untrusted directory: set GEMINI_CLI_TRUST_WORKSPACE=true in the profile's env (or trust the directory in gemini)"}},
			argv:   []string{"--output-format", "stream-json"},
			failed: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := shimtest.NewFake(t, "gemini")
			turn := ev{"type": "turn", "session_id": "", "protocol_version": "0.4"}
			for k, v := range tt.turn {
				turn[k] = v
			}
			res := shimtest.Drive(t, Run, turn, tt.args, fake.Environ(t, "testdata/"+tt.script), nil)
			if diff := cmp.Diff(tt.want, res.Events); diff != "" {
				t.Errorf("events (-want +got):\n%s\nstderr:\n%s", diff, res.Stderr)
			}
			if diff := cmp.Diff(tt.argv, fake.Args(t)); diff != "" {
				t.Errorf("gemini argv (-want +got):\n%s", diff)
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
	want := []ev{{"type": "error", "message": "gemini not found on PATH — install with npm i -g @google/gemini-cli"}}
	if diff := cmp.Diff(want, res.Events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
