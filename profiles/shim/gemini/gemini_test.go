package gemini

import (
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
	tests := []shimtest.Replay{
		{
			Name: "streamed answer", Script: "stream.txt", Turn: ev{"message": "say hi"},
			Args: []string{"--", "-m", "gemini-2.5-flash"},
			Want: []ev{
				{"type": "partial", "text": "Hello", "session_id": sid},
				{"type": "partial", "text": " from", "session_id": sid},
				{"type": "partial", "text": " gemini.", "session_id": sid},
				{"type": "result", "text": "Hello from gemini.", "session_id": sid,
					"usage": ev{"input_tokens": 34.0, "output_tokens": 12.0, "total_tokens": 46.0, "duration_ms": 104.0}},
			},
			Argv: []string{"--output-format", "stream-json", "-m", "gemini-2.5-flash"},
		},
		{
			Name: "resume", Script: "resume.txt", Turn: ev{"message": "second turn", "session_id": sid},
			Want: []ev{
				{"type": "partial", "text": "Again.", "session_id": sid},
				{"type": "result", "text": "Again.", "session_id": sid,
					"usage": ev{"input_tokens": 60.0, "output_tokens": 3.0, "total_tokens": 63.0, "duration_ms": 98.0}},
			},
			Argv: []string{"--output-format", "stream-json", "--resume", sid},
		},
		{
			Name: "tool call and a warning", Script: "tool.txt", Turn: ev{"message": "please USE_TOOL"},
			Want: []ev{
				{"type": "partial", "text": "Mock done after tool.", "session_id": "a30990f3-2747-4e0e-a66c-0176b75b3c3c"},
				{"type": "result", "text": "Mock done after tool.", "session_id": "a30990f3-2747-4e0e-a66c-0176b75b3c3c",
					"usage": ev{"input_tokens": 51.0, "output_tokens": 18.0, "total_tokens": 69.0, "duration_ms": 242.0}},
			},
			Argv: []string{"--output-format", "stream-json"},
		},
		{
			Name: "result with status error", Script: "api_error.txt", Turn: ev{"message": "say hi"},
			Want: []ev{
				{"type": "partial", "text": "Partly", "session_id": sid},
				{"type": "error", "message": "API key not valid. Please pass a valid API key.", "session_id": sid,
					"usage": ev{"input_tokens": 17.0, "total_tokens": 17.0, "duration_ms": 10.0}},
			},
			Argv:   []string{"--output-format", "stream-json"},
			Failed: true,
		},
		{
			Name: "untrusted directory: exit 55 explained", Script: "untrusted.txt", Turn: ev{"message": "say hi"},
			Want:   []ev{{"type": "error", "message": "gemini refuses to run in an untrusted directory: set GEMINI_CLI_TRUST_WORKSPACE=true in the profile's env (or trust the directory in gemini)"}},
			Argv:   []string{"--output-format", "stream-json"},
			Failed: true,
		},
	}
	shimtest.RunReplays(t, "gemini", Run, ev{"type": "turn", "session_id": "", "protocol_version": "0.4"}, tests)
}

func TestMissingCLI(t *testing.T) {
	turn := ev{"type": "turn", "message": "hi", "session_id": "", "protocol_version": "0.4"}
	res := shimtest.Drive(t, Run, turn, nil, []string{"PATH=" + t.TempDir()}, nil)
	want := []ev{{"type": "error", "message": "gemini not found on PATH — install with npm i -g @google/gemini-cli"}}
	if diff := cmp.Diff(want, res.Events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
