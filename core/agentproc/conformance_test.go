package agentproc

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fixture is one copy of a conformance file.
type fixture struct {
	source string // "testdata" or "upstream"
	data   []byte
}

// conformanceFixtures returns the project's copy of a conformance file
// (testdata/conformance, always there) and, when the shared tree sits beside
// the checkout (<repoRoot>/../shared/agentproc/conformance), the upstream
// one as well, so a clone stands alone and a newer upstream is still run.
func conformanceFixtures(t testing.TB, name string) []fixture {
	t.Helper()
	own, err := os.ReadFile(filepath.Join("testdata", "conformance", name))
	if err != nil {
		t.Fatalf("conformance fixture: %v", err)
	}
	out := []fixture{{"testdata", own}}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return out
		}
		dir = parent
	}
	if up, err := os.ReadFile(filepath.Join(dir, "..", "shared", "agentproc", "conformance", name)); err == nil {
		out = append(out, fixture{"upstream", up})
	}
	return out
}

// forEachFixture decodes every copy of the conformance file name into a
// fresh T and runs f on it as a subtest named for its source.
func forEachFixture[T any](t *testing.T, name string, f func(t *testing.T, file *T)) {
	for _, fx := range conformanceFixtures(t, name) {
		t.Run(fx.source, func(t *testing.T) {
			file := new(T)
			if err := json.Unmarshal(fx.data, file); err != nil {
				t.Fatalf("%s (%s): %v", name, fx.source, err)
			}
			f(t, file)
		})
	}
}

// conformanceLines returns the stdout line of every case in every copy of
// cases.json, as fuzz seeds.
func conformanceLines(t testing.TB) []string {
	t.Helper()
	var lines []string
	for _, fx := range conformanceFixtures(t, "cases.json") {
		var file struct {
			Cases []struct {
				Line string `json:"line"`
			} `json:"cases"`
		}
		if err := json.Unmarshal(fx.data, &file); err != nil {
			t.Fatalf("cases.json (%s): %v", fx.source, err)
		}
		for _, c := range file.Cases {
			lines = append(lines, c.Line)
		}
	}
	return lines
}

// TestClassifyConformance checks every line of cases.json (P-OUT-1, P-OUT-2,
// P-PART-2, P-OUT-3; the legacy session/text events are malformed).
func TestClassifyConformance(t *testing.T) {
	type casesFile struct {
		Cases []struct {
			Line   string         `json:"line"`
			Expect map[string]any `json:"expect"`
		} `json:"cases"`
	}
	forEachFixture(t, "cases.json", func(t *testing.T, file *casesFile) {
		if len(file.Cases) == 0 {
			t.Fatal("no cases")
		}
		for _, c := range file.Cases {
			l := Classify([]byte(c.Line))
			got := map[string]any{"kind": l.Kind, "value": l.Value}
			if l.Role != "" {
				got["role"] = l.Role
			}
			if l.SessionID != "" {
				got["session_id"] = l.SessionID
			}
			if diff := cmp.Diff(c.Expect, got); diff != "" {
				t.Errorf("Classify(%q) mismatch (-want +got):\n%s", c.Line, diff)
			}
		}
	})
}

// TestScenariosConformance runs every scenarios.json turn through Run with a
// real agent process printing the scenario's lines (P-SID-1..5, P-ERR-1/2,
// P-RES-1/2, F-RES-1, F-SID-1, P-PROF-7).
func TestScenariosConformance(t *testing.T) {
	type expect struct {
		Reply     string   `json:"reply"`
		SessionID string   `json:"session_id"`
		Error     string   `json:"error"`
		ExitCode  int      `json:"exit_code"`
		Partials  []string `json:"partials"`
	}
	type scenariosFile struct {
		Scenarios []struct {
			Name      string   `json:"name"`
			Lines     []string `json:"lines"`
			Streaming *bool    `json:"streaming"`
			Expect    expect   `json:"expect"`
		} `json:"scenarios"`
	}
	forEachFixture(t, "scenarios.json", func(t *testing.T, file *scenariosFile) {
		if len(file.Scenarios) == 0 {
			t.Fatal("no scenarios")
		}
		for _, sc := range file.Scenarios {
			t.Run(sc.Name, func(t *testing.T) {
				t.Parallel()
				p := agentProfile(t, "lines", map[string]string{"AGENT_LINES": mustJSON(sc.Lines)})
				p.Streaming = sc.Streaming == nil || *sc.Streaming
				var events []string
				var outputSeen bool
				o, err := Run(context.Background(), p, Turn{Message: "hi"}, Options{
					CollectPartials: true,
					OnEvent: func(e Event) {
						if e.Kind == EventPartial {
							events = append(events, e.Text)
							outputSeen = outputSeen || e.Role == "output"
						}
					},
				})
				if err != nil {
					t.Fatal(err)
				}
				got := expect{Reply: o.Reply, SessionID: o.SessionID, Error: o.Error, ExitCode: o.ExitCode, Partials: o.Partials}
				if got.Partials == nil {
					got.Partials = []string{}
				}
				if diff := cmp.Diff(sc.Expect, got); diff != "" {
					t.Errorf("outcome mismatch (-want +got):\n%s\nstderr: %s", diff, o.Stderr)
				}
				if diff := cmp.Diff(o.Partials, events); diff != "" {
					t.Errorf("OnEvent partials differ from Outcome.Partials (-outcome +events):\n%s", diff)
				}
				// Reply and PartialsSeen never both claim the body.
				if o.Reply != "" && o.PartialsSeen {
					t.Errorf("PartialsSeen with a non-empty Reply %q", o.Reply)
				}
				if o.PartialsSeen != outputSeen {
					t.Errorf("PartialsSeen = %v, but output partials forwarded = %v", o.PartialsSeen, outputSeen)
				}
			})
		}
	})
}

// TestDiagnosticsMatchFile checks the embedded rules against
// diagnostics.json rule for rule, and every sample against its expected hint.
func TestDiagnosticsMatchFile(t *testing.T) {
	type rule struct {
		ID, Pattern, Flags, Hint string
	}
	type diagnosticsFile struct {
		Rules []struct {
			ID      string `json:"id"`
			Pattern string `json:"pattern"`
			Flags   string `json:"flags"`
			Sample  string `json:"sample"`
			Hint    string `json:"hint"`
			Expect  string `json:"expect"`
		} `json:"rules"`
	}
	forEachFixture(t, "diagnostics.json", func(t *testing.T, file *diagnosticsFile) {
		var want, got []rule
		for _, r := range file.Rules {
			want = append(want, rule{r.ID, r.Pattern, r.Flags, r.Hint})
			if h := Diagnose(r.Sample); h != r.Expect {
				t.Errorf("rule %s: Diagnose(%q) = %q, want %q", r.ID, r.Sample, h, r.Expect)
			}
		}
		for _, r := range diagRules() {
			got = append(got, rule{r.ID, r.Pattern, r.Flags, r.Hint})
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("embedded rules differ from diagnostics.json (-file +embedded):\n%s", diff)
		}
	})
	if h := Diagnose("all fine here"); h != "" {
		t.Errorf("Diagnose(no match) = %q, want empty", h)
	}
}

// FuzzClassify checks that no line crashes the classifier and that its
// result is always one of the five kinds with a value of the right type.
func FuzzClassify(f *testing.F) {
	for _, line := range conformanceLines(f) {
		f.Add([]byte(line))
	}
	f.Add([]byte("{\"type\":\"partial\",\"text\":\"\xff\xfe\"}"))
	f.Add([]byte(`{"type":"permission_request","request_id":"1","input":[1]}`))
	f.Add([]byte(`{"type":"result","usage":{"input_tokens":"x","cost_usd":1e400}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		l := Classify(line)
		switch l.Kind {
		case KindPartial, KindResult, KindError:
			if _, ok := l.Value.(string); !ok {
				t.Fatalf("%s value %T, want string", l.Kind, l.Value)
			}
		case KindPermissionRequest:
			if _, ok := l.Value.(map[string]any); !ok {
				t.Fatalf("permission_request value %T, want map", l.Value)
			}
		case KindMalformed:
			if l.Value != string(line) {
				t.Fatalf("malformed value %q, want the raw line", l.Value)
			}
		default:
			t.Fatalf("unknown kind %q", l.Kind)
		}
		if l.SessionID != "" && l.Kind == KindMalformed {
			t.Fatal("malformed line carries a session id")
		}
	})
}
