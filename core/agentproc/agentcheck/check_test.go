package agentcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentbridge/agentbridge/core/agentproc"
)

func TestMain(m *testing.M) {
	if mode, ok := os.LookupEnv(agentModeVar); ok {
		os.Exit(runAgent(mode))
	}
	goleak.VerifyTestMain(m)
}

// agentProfile runs this test binary as the agent of the given mode.
func agentProfile(t *testing.T, mode string, permission bool, grace time.Duration) *agentproc.Profile {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &agentproc.Profile{Name: mode, Command: exe, Env: map[string]string{agentModeVar: mode, "GORACE": "atexit_sleep_ms=0"},
		Timeout: time.Minute, KillGrace: grace, Streaming: true, Permission: permission}
}

// Turn bounds of the checks. Only an agent that never ends a turn by itself
// meets the short one, which then ends its hang; every other agent's turn
// must end on its own however loaded the machine (a 9 MiB line through a
// pipe under the race detector took over 5 s beside 20 other checks).
const (
	hangBound = 5 * time.Second
	turnBound = time.Minute
)

// check runs the checker on an agent mode with the turn bound given.
func check(t *testing.T, p *agentproc.Profile, bound time.Duration) *Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// termAfter past the bound: the SIGTERM probe lands at each agent's
	// first line, never during a start-up that a loaded machine slows.
	rep, err := Run(ctx, p, Options{Messages: []string{"hello there", "please use the tool"}, TurnTimeout: bound, termAfter: 2 * bound})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// Each broken agent fails exactly the rule it breaks — a MUST — and
// nothing else; agents that fall short of a SHOULD only warn; agents of
// several good shapes neither fail nor warn.
func TestAgents(t *testing.T) {
	t.Parallel()
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for _, tc := range []agentCase{
		// Good agents of several shapes.
		{mode: "good"},
		{mode: "stateless"},
		{mode: "good", permission: true},
		{mode: "slow-exit", grace: 3 * time.Second},

		// Broken MUSTs.
		{mode: "reads-to-eof", fails: []string{"P-STDIN-1"}},
		{mode: "polls-stdin", hangs: true, fails: []string{"P-STDIN-1"}},
		{mode: "version-strict", fails: []string{"P-TURN-2"}},
		{mode: "version-ordered", fails: []string{"P-TURN-2"}},
		{mode: "attachment-crash", fails: []string{"D-ATT-1"}, warns: []string{"P-EXIT-2"}},
		{mode: "two-results", fails: []string{"P-RES-1"}},
		{mode: "error-no-message", fails: []string{"P-ERR-1"}},
		{mode: "bad-session-id", fails: []string{"F-SID-1"}},
		{mode: "empty-session-id", fails: []string{"F-SID-1"}},
		{mode: "changing-session-id", fails: []string{"P-SID-4"}},
		{mode: "mints-session", fails: []string{"P-SID-3"}},
		{mode: "cannot-resume", fails: []string{"P-SID-3"}, warns: []string{"P-SID-2"}}, // its error leaves the id out
		{mode: "asks-without-permission", fails: []string{"P-PERM-1"}},
		{mode: "bad-request-id", permission: true, hangs: true, fails: []string{"F-PERM-1"}},
		{mode: "dup-request-id", permission: true, hangs: true, fails: []string{"F-PERM-1"}},
		{mode: "missing-tool-name", permission: true, fails: []string{"F-PERM-1"}},
		{mode: "no-wait", permission: true, fails: []string{"P-PERM-3"}},
		{mode: "ignores-deny", permission: true, fails: []string{"F-PERM-2"}},

		// SHOULDs: warnings only.
		{mode: "ignores-sigterm", warns: []string{"P-TIME-2"}},
		{mode: "non-json", warns: []string{"P-OUT-1"}},
		{mode: "unknown-type", warns: []string{"P-OUT-2"}},
		{mode: "long-line", warns: []string{"D-LINE-1"}},
		{mode: "no-newline", warns: []string{"P-OUT-1"}},
		{mode: "exit0-after-error", warns: []string{"P-ERR-1"}},
		{mode: "crash", warns: []string{"P-EXIT-2"}},
		{mode: "attachment-as-empty", warns: []string{"D-ATT-1"}},

		// Files sent back (agentbridge's extension).
		{mode: "sends-files"},
		{mode: "bad-attachment", fails: []string{"X-FILE-1"}},
		{mode: "bad-data", fails: []string{"X-FILE-2"}},
		{mode: "file-outside", fails: []string{"X-FILE-3"}},
		{mode: "too-many-files", warns: []string{"X-FILE-4"}},
	} {
		name := tc.mode
		if tc.permission {
			name += "/permission"
		}
		// The checks mostly wait on their agents (answer delays, bounds,
		// kill graces), so more run at once than -parallel's default of
		// one per CPU; t.Run may be called from several goroutines.
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			t.Run(name, func(t *testing.T) { checkAgent(t, tc) })
		})
	}
	wg.Wait()
}

// agentCase is a test agent and what its check must find.
type agentCase struct {
	mode       string
	permission bool
	grace      time.Duration
	hangs      bool     // its first turn waits for what never comes
	fails      []string // exactly these rules fail
	warns      []string // exactly these rules warn
}

// checkAgent checks tc's agent and wants exactly its rules to fail and warn.
func checkAgent(t *testing.T, tc agentCase) {
	grace := tc.grace
	if grace == 0 {
		grace = time.Second
	}
	bound := turnBound
	if tc.hangs {
		bound = hangBound
	}
	rep := check(t, agentProfile(t, tc.mode, tc.permission, grace), bound)
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	fails, warns := rep.Failed(), rep.Warned()
	if !slices.Equal(fails, tc.fails) || !slices.Equal(warns, tc.warns) {
		t.Errorf("fails %q warns %q, want fails %q warns %q\n%s", fails, warns, tc.fails, tc.warns, text.String())
	}
	if rep.OK != (len(tc.fails) == 0) {
		t.Errorf("OK = %v with fails %q", rep.OK, fails)
	}
}

// The SIGTERM probe signals an agent that has printed nothing by termAfter
// at termAfter (P-TIME-2), before any output.
func TestSIGTERMProbeSilentAgent(t *testing.T) {
	t.Parallel()
	d := &driver{p: agentProfile(t, "silent-until-sigterm", false, time.Second), termAfter: termAfter}
	tr := d.run(context.Background(), plan{name: "SIGTERM", message: "hello", sigterm: true, bound: time.Minute})
	if tr.termAt < termAfter || tr.hung || tr.termKilled {
		t.Fatalf("SIGTERM at %v (want ≥ %v), hung %v, SIGKILLed %v", tr.termAt, termAfter, tr.hung, tr.termKilled)
	}
	for _, l := range tr.lines {
		if l.at < tr.termAt {
			t.Errorf("a line at %v, before the SIGTERM at %v", l.at, tr.termAt)
		}
	}
}

// readLines tells "printed nothing yet" only when no byte of stdout came
// by the deadline: an agent that has begun a line is not silent, however
// late its reader runs, so the SIGTERM probe waits for the line's end and
// never cuts it (issue 21: a 9 MiB line cut on a loaded machine).
func TestReadLinesSilence(t *testing.T) {
	read := func(t *testing.T, begun string, rest func(w *os.File)) (silent bool, got []line, cut bool) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if _, err := w.WriteString(begun); err != nil {
			t.Fatal(err)
		}
		silentC := make(chan struct{})
		out := make(chan line, 4)
		go readLines(r, time.Now(), time.Millisecond, silentC, out, &cut)
		if begun == "" {
			<-silentC // nothing is written until it has told
		}
		rest(w)
		w.Close()
		for l := range out {
			got = append(got, l)
		}
		select {
		case <-silentC:
			silent = true
		default:
		}
		return silent, got, cut
	}
	const whole = `{"type":"partial","text":"xxxx"}`
	rest := func(s string) func(*os.File) { return func(w *os.File) { _, _ = w.WriteString(s) } }

	// Part of a line was written before the deadline; the rest long after.
	silent, got, cut := read(t, whole[:10], rest(whole[10:]+"\n"))
	if silent || cut || len(got) != 1 || string(got[0].raw) != whole {
		t.Errorf("begun line: silent %v, cut %v, lines %+v; want not silent, one whole line", silent, cut, got)
	}
	// Nothing by the deadline: silent, and what comes later is read whole.
	silent, got, _ = read(t, "", rest(whole+"\n"))
	if !silent || len(got) != 1 || string(got[0].raw) != whole {
		t.Errorf("silent agent: silent %v, lines %+v", silent, got)
	}
}

// Probes that need the agent's cooperation are "not exercised", never a
// pass, when the agent does not cooperate.
func TestNotExercisedWithoutCooperation(t *testing.T) {
	t.Parallel()
	rep := check(t, agentProfile(t, "good", true, time.Second), turnBound)
	for _, id := range []string{"F-PERM-1", "P-PERM-3", "F-PERM-2"} {
		if r, _ := rep.Result(id); r.Status != Pass {
			t.Errorf("%s with a tool prompt: %s %q", id, r.Status, r.Evidence)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := Run(ctx, agentProfile(t, "good", true, time.Second), Options{Messages: []string{"hello"}, TurnTimeout: turnBound})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"F-PERM-1", "P-PERM-3", "F-PERM-2"} {
		if r, _ := rep.Result(id); r.Status != NotExercised || !strings.Contains(strings.Join(r.Evidence, " "), "--message") {
			t.Errorf("%s without a tool prompt: %s %q, want not exercised, pointing at --message", id, r.Status, r.Evidence)
		}
	}
	if !rep.OK {
		t.Errorf("not exercised must not fail: %q", rep.Failed())
	}
}

// The JSON report has the documented shape: every rule once, in order,
// with a status, its words and evidence; every turn with its lines.
func TestReportJSON(t *testing.T) {
	t.Parallel()
	rep := check(t, agentProfile(t, "two-results", false, time.Second), turnBound)
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var got struct {
		OK     bool `json:"ok"`
		Counts map[string]int
		Rules  []struct {
			ID, Level, Status, Words string
			Evidence                 []string
		}
		Turns []struct {
			Name     string   `json:"name"`
			TurnLine string   `json:"turn_line"`
			ExitCode *int     `json:"exit_code"`
			Lines    []string `json:"lines"`
		}
	}
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.OK || got.Counts["fail"] != 1 {
		t.Errorf("ok %v counts %v, want one fail", got.OK, got.Counts)
	}
	if len(got.Rules) != len(Rules) {
		t.Fatalf("%d rules, want %d", len(got.Rules), len(Rules))
	}
	for i, r := range got.Rules {
		if r.ID != Rules[i].ID || r.Words != Rules[i].Words || len(r.Evidence) == 0 || !slices.Contains([]string{"pass", "fail", "warn", "not_exercised"}, r.Status) {
			t.Errorf("rule %d: %+v", i, r)
		}
		if r.ID == "P-RES-1" && (r.Status != "fail" || !strings.Contains(r.Evidence[0], "2 result events")) {
			t.Errorf("P-RES-1: %+v", r)
		}
	}
	if len(got.Turns) < 8 || got.Turns[0].Name != "first turn" || !strings.Contains(got.Turns[0].TurnLine, `"protocol_version":"0.4"`) ||
		got.Turns[0].ExitCode == nil || len(got.Turns[0].Lines) == 0 {
		t.Errorf("turns: %+v", got.Turns)
	}
}

// A profile whose agent cannot start is an error, not a report of passes.
func TestCannotStart(t *testing.T) {
	p := &agentproc.Profile{Command: "agentcheck-no-such-agent", Timeout: time.Minute}
	_, err := Run(context.Background(), p, Options{Environ: []string{"PATH=" + t.TempDir()}})
	if err == nil || !strings.Contains(err.Error(), `agent command "agentcheck-no-such-agent" not found on PATH`) {
		t.Errorf("err = %v", err)
	}
}

// Every rule's words are spec/protocol.md's own, verbatim.
func TestRuleWordsAreTheSpecs(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	spec, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "..", "spec", "protocol.md"))
	if err != nil {
		t.Fatal(err)
	}
	norm := func(s string) string {
		return regexp.MustCompile(`\s+`).ReplaceAllString(strings.ReplaceAll(s, "**", ""), " ")
	}
	text := norm(string(spec))
	seen := map[string]bool{}
	for _, r := range Rules {
		if seen[r.ID] {
			t.Errorf("%s listed twice", r.ID)
		}
		seen[r.ID] = true
		if !strings.Contains(text, norm(r.Words)) {
			t.Errorf("%s: %q is not in spec/protocol.md", r.ID, r.Words)
		}
		if !strings.Contains(text, r.ID) {
			t.Errorf("%s is not cited in spec/protocol.md", r.ID)
		}
	}
}

// FuzzLineChecks: whatever an agent prints, the line checks neither panic
// nor fail a SHOULD rule, and every finding names a known rule.
func FuzzLineChecks(f *testing.F) {
	for _, s := range []string{
		`{"type":"partial","text":"a","session_id":"s"}` + "\n" + `{"type":"result","text":"","usage":{"input_tokens":"x"}}`,
		`{"type":"error"}` + "\n" + `{"type":"result","text":"late"}` + "\n" + `{"type":"result"}`,
		`{"type":"permission_request","request_id":"a b","input":[]}` + "\n" + `not json` + "\n" + `[1]`,
		`{"type":"text","session_id":"x/y"}` + "\n" + `{"type":"partial","role":7,"usage":{}}` + "\n\xff",
	} {
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, out []byte, permission bool) {
		tr := &turn{plan: plan{name: "fuzz", sessionID: "in"}, permission: permission, stdinClosedAt: -1, termAt: -1}
		for i, b := range bytes.Split(out, []byte("\n")) {
			tr.lines = append(tr.lines, line{at: time.Duration(i), raw: b, size: len(b)})
		}
		c := &checker{p: &agentproc.Profile{Permission: permission, Streaming: true}, f: map[string][]finding{}, turns: []*turn{tr}}
		c.lines(tr)
		for id, fs := range c.f {
			r := rule(id) // panics on an unknown id
			for _, f := range fs {
				if f.status == Fail && r.Level != Must {
					t.Errorf("%s (%s) failed: %s", id, r.Level, f.text)
				}
			}
		}
		_ = tr.reply(true)
		_ = tr.events()
	})
}
