package agentcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
)

// finding is one piece of evidence for a rule.
type finding struct {
	status Status
	text   string
}

// checker holds the probe turns of one check and what they showed.
type checker struct {
	p     *agentproc.Profile
	turns []*turn
	f     map[string][]finding

	first    *turn   // the first turn; permission answers held back answerDelay
	asked    *turn   // the first turn with a request the checker allowed (first when none had)
	resume   *turn   // the first turn's message again, with its session id; nil when it had none
	stdin    *turn   // permission off: stdin held open after the turn line
	deny     *turn   // permission on: the asking message again, every request denied
	empty    *turn   // message "" and no attachment
	attach   *turn   // message "" and one image
	versions []*turn // unknown protocol_version strings
	term     *turn   // SIGTERM at the first line
}

// add records evidence for rule id. A SHOULD rule never fails: what would
// be a fail is a warning.
func (c *checker) add(id string, s Status, format string, args ...any) {
	if s == Fail && rule(id).Level == Should {
		s = Warn
	}
	c.f[id] = append(c.f[id], finding{s, fmt.Sprintf(format, args...)})
}

// result merges a rule's findings: its status is the worst of them, and
// its evidence the findings of that status.
func (c *checker) result(r Rule) Result {
	res := Result{ID: r.ID, Level: r.Level, Words: r.Words, Status: NotExercised, Evidence: []string{}}
	fs := c.f[r.ID]
	for _, f := range fs {
		if f.status.rank() > res.Status.rank() {
			res.Status = f.status
		}
	}
	// The findings that decided the status are the evidence; a long list
	// is cut, the JSON report's turns have the rest.
	const maxEvidence = 6
	more := 0
	for _, f := range fs {
		if f.status != res.Status {
			continue
		}
		if len(res.Evidence) == maxEvidence && !slices.Contains(res.Evidence, f.text) {
			more++
			continue
		}
		res.Evidence = appendOnce(res.Evidence, f.text)
	}
	if more > 0 {
		res.Evidence = append(res.Evidence, fmt.Sprintf("… and %d more", more))
	}
	if len(res.Evidence) == 0 {
		res.Evidence = []string{"no probe turn exercised this"}
	}
	return res
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// evaluate turns the probe turns into findings.
func (c *checker) evaluate() {
	for _, t := range c.turns {
		c.lines(t)
	}
	c.fileRules()
	c.stdinRule()
	c.versionRule()
	c.emptyRule()
	c.attachRule()
	c.sessionRules()
	c.permissionRules()
	c.termRule()
	c.exitRules()
	c.vacuous()
}

// event is one stdout line that is a protocol event.
type event struct {
	i      int // index into turn.lines
	kind   string
	fields map[string]json.RawMessage
}

// events returns the turn's well-formed protocol events in order.
func (t *turn) events() []event {
	var out []event
	for i, l := range t.lines {
		if l.raw == nil {
			continue
		}
		var f map[string]json.RawMessage
		if json.Unmarshal(l.raw, &f) != nil || f == nil {
			continue
		}
		switch typ, _ := stringField(f, "type"); typ {
		case agentproc.KindPartial, agentproc.KindResult, agentproc.KindError, agentproc.KindPermissionRequest:
			out = append(out, event{i: i, kind: typ, fields: f})
		}
	}
	return out
}

// describe names line i of the turn for evidence: where it came and what
// it said, clipped.
func (t *turn) describe(i int) string {
	l := t.lines[i]
	text := fmt.Sprintf("%d bytes, not kept", l.size)
	if l.raw != nil {
		text = clip(l.raw, 160)
	}
	return fmt.Sprintf("line %d at +%dms: %s", i+1, l.at.Milliseconds(), text)
}

func clip(b []byte, n int) string {
	s := string(bytes.ToValidUTF8(b, []byte("\uFFFD")))
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return s
}

// at prefixes evidence with the turn's name.
func (t *turn) at(format string, args ...any) string {
	return "[" + t.plan.name + "] " + fmt.Sprintf(format, args...)
}

// has reports whether the turn has an event of kind.
func (t *turn) has(kind string) bool {
	return slices.ContainsFunc(t.events(), func(e event) bool { return e.kind == kind })
}

// errored reports whether the turn has an error event.
func (t *turn) errored() bool { return t.has(agentproc.KindError) }

// succeeded: the agent ended on its own, exit 0, no error event.
func (t *turn) succeeded() bool {
	return t.exitedOnItsOwn() && t.termAt < 0 && t.exitCode == 0 && !t.errored()
}

// crashed: the agent ended on its own with a non-zero status and no error
// event to say why.
func (t *turn) crashed() bool {
	return t.exitedOnItsOwn() && t.termAt < 0 && t.exitCode != 0 && !t.errored()
}

// outcome says in a few words how the turn ended.
func (t *turn) outcome() string {
	switch {
	case t.hung:
		return fmt.Sprintf("still running after %s, killed (%s; a slow agent needs a longer --timeout)", t.plan.bound, t.hungSnapshot)
	case t.termKilled:
		return "SIGKILLed kill_grace_secs after SIGTERM"
	case t.cancelled:
		return "stopped with the check"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "exit %d after %dms", t.exitCode, t.exitAt.Milliseconds())
	if t.signal != 0 {
		fmt.Fprintf(&b, " (%s)", t.signal)
	}
	if t.errored() {
		fmt.Fprintf(&b, ", error %q", clip([]byte(errorMessage(t)), 100))
	}
	if r := t.reply(true); r != "" {
		fmt.Fprintf(&b, ", reply %q", clip([]byte(r), 80))
	}
	return b.String()
}

// reply is the body the bridge would show: the output partials before any
// error when streaming (and there are some), else the first result's text.
func (t *turn) reply(streaming bool) string {
	var parts strings.Builder
	result, haveResult := "", false
	for _, e := range t.events() {
		switch e.kind {
		case agentproc.KindError:
			if parts.Len() > 0 {
				return parts.String()
			}
			return ""
		case agentproc.KindPartial:
			role, _ := stringField(e.fields, "role")
			if text, _ := stringField(e.fields, "text"); streaming && (role == "" || role == core.RoleOutput) {
				parts.WriteString(text)
			}
		case agentproc.KindResult:
			if !haveResult {
				result, haveResult = "", true
				result, _ = stringField(e.fields, "text")
			}
		}
	}
	if parts.Len() > 0 {
		return parts.String()
	}
	return result
}

// firstSessionID is the id the bridge would keep from the turn (P-SID-1).
func firstSessionID(t *turn) string {
	for _, e := range t.events() {
		if s, ok := stringField(e.fields, "session_id"); ok && agentproc.ValidSessionID(s) {
			return s
		}
	}
	return ""
}

// sessionIDs are the distinct valid ids of the turn, in order.
func sessionIDs(t *turn) []string {
	var out []string
	for _, e := range t.events() {
		if s, ok := stringField(e.fields, "session_id"); ok && agentproc.ValidSessionID(s) {
			out = appendOnce(out, s)
		}
	}
	return out
}

// lines checks every stdout line of a turn: the framing and vocabulary,
// each event's fields, session ids, results and errors, permission
// requests.
func (c *checker) lines(t *turn) {
	var (
		sid       string
		sidLine   int
		missing   []int // events without session_id once it is known
		results   []int
		errLine   = -1
		afterErr  []int
		requestID = map[string]int{}
		events    = 0
	)
	for i, l := range t.lines {
		n := i + 1
		if l.raw == nil {
			c.add("D-LINE-1", Warn, "%s", t.at("line %d is %d bytes, over the %d MiB the bridge accepts: it is skipped", n, l.size, agentproc.MaxLineBytes>>20))
			continue
		}
		if l.noNewline {
			c.add("P-OUT-1", Warn, "%s", t.at("the last line does not end in a newline: %s", t.describe(i)))
		}
		if !utf8.Valid(l.raw) {
			c.add("P-OUT-1", Warn, "%s", t.at("not valid UTF-8 (the bridge replaces the bad bytes): %s", t.describe(i)))
		}
		var f map[string]json.RawMessage
		if err := json.Unmarshal(l.raw, &f); err != nil || f == nil {
			what := "not JSON"
			if json.Valid(l.raw) {
				what = "JSON but not an object"
			}
			c.add("P-OUT-1", Warn, "%s", t.at("%s, ignored by the bridge: %s", what, t.describe(i)))
			continue
		}
		typ, ok := stringField(f, "type")
		if !ok {
			c.add("P-OUT-1", Warn, "%s", t.at("an object without a string \"type\", ignored by the bridge: %s", t.describe(i)))
			continue
		}
		switch typ {
		case agentproc.KindPartial, agentproc.KindResult, agentproc.KindError, agentproc.KindPermissionRequest:
		case "session", "text":
			c.add("P-OUT-2", Warn, "%s", t.at("the 0.3 %q event does not exist in 0.4; the bridge ignores it: %s", typ, t.describe(i)))
			continue
		default:
			c.add("P-OUT-2", Warn, "%s", t.at("unknown type %q, ignored by the bridge: %s", typ, t.describe(i)))
			continue
		}
		events++

		// Session id (F-SID-1, P-SID-4, P-SID-2).
		if raw, present := f["session_id"]; present {
			s, isStr := stringField(f, "session_id")
			switch {
			case !isStr:
				c.add("F-SID-1", Fail, "%s", t.at("session_id is not a string (%s): %s", clip(raw, 40), t.describe(i)))
			case !agentproc.ValidSessionID(s):
				c.add("F-SID-1", Fail, "%s", t.at("session_id %q is not a valid id (empty, or has /, \\ or a control character): %s", s, t.describe(i)))
			case sid == "":
				sid, sidLine = s, n
			case s != sid:
				c.add("P-SID-4", Fail, "%s", t.at("session_id %q on line %d after %q on line %d; the bridge keeps the first", s, n, sid, sidLine))
			}
		} else if sid != "" {
			missing = append(missing, n)
		} else if events == 1 && t.plan.sessionID != "" {
			c.add("P-SID-2", Warn, "%s", t.at("given session_id %q, the first event leaves it out: %s", t.plan.sessionID, t.describe(i)))
		}

		if errLine >= 0 && typ != agentproc.KindPermissionRequest {
			text, _ := stringField(f, "text")
			if typ == agentproc.KindResult || typ == agentproc.KindError || text != "" {
				afterErr = append(afterErr, n)
			}
		}
		switch typ {
		case agentproc.KindPartial:
			if _, ok := stringField(f, "text"); !ok {
				c.add("P-PART-1", Warn, "%s", t.at("a partial without a string \"text\": %s", t.describe(i)))
			}
			if raw, ok := f["role"]; ok {
				if _, isStr := stringField(f, "role"); !isStr {
					c.add("P-PART-1", Warn, "%s", t.at("a partial whose role is not a string (%s): %s", clip(raw, 40), t.describe(i)))
				}
			}
			if _, ok := f["usage"]; ok {
				c.add("F-USAGE-1", Warn, "%s", t.at("usage on a partial is ignored; put it on the result: %s", t.describe(i)))
			}
		case agentproc.KindResult:
			results = append(results, n)
			if _, ok := stringField(f, "text"); !ok {
				c.add("P-RES-1", Warn, "%s", t.at("a result without a string \"text\" (the body is then empty): %s", t.describe(i)))
			}
			c.usage(t, i, f)
		case agentproc.KindError:
			msg, ok := stringField(f, "message")
			switch {
			case !ok:
				c.add("P-ERR-1", Fail, "%s", t.at("an error event without a string \"message\": the user is told nothing: %s", t.describe(i)))
			case strings.TrimSpace(msg) == "":
				c.add("P-ERR-1", Warn, "%s", t.at("an error event with an empty message: %s", t.describe(i)))
			default:
				c.add("P-ERR-1", Pass, "%s", t.at("error event %q", clip([]byte(msg), 100)))
			}
			if errLine < 0 {
				errLine = n
			}
			c.usage(t, i, f)
		case agentproc.KindPermissionRequest:
			if !t.permission {
				c.add("P-PERM-1", Fail, "%s", t.at("a permission_request although the turn has no permission: true; the bridge ignores it: %s", t.describe(i)))
				continue
			}
			id, isStr := stringField(f, "request_id")
			switch {
			case !isStr:
				c.add("F-PERM-1", Fail, "%s", t.at("request_id missing or not a string: %s", t.describe(i)))
			case !agentproc.ValidRequestID(id):
				c.add("F-PERM-1", Fail, "%s", t.at("request_id %q is empty or has whitespace or control characters: %s", id, t.describe(i)))
			case requestID[id] > 0:
				c.add("F-PERM-1", Fail, "%s", t.at("request_id %q reused (first on line %d); the bridge ignores the second: %s", id, requestID[id], t.describe(i)))
			default:
				requestID[id] = n
			}
			if tool, ok := stringField(f, "tool_name"); !ok || tool == "" {
				c.add("F-PERM-1", Fail, "%s", t.at("tool_name missing or not a non-empty string: %s", t.describe(i)))
			}
			if in := bytes.TrimSpace(f["input"]); len(in) == 0 || in[0] != '{' {
				c.add("F-PERM-1", Fail, "%s", t.at("input missing or not an object: %s", t.describe(i)))
			}
			for _, k := range []string{"description", "tool_use_id"} {
				if _, ok := f[k]; ok {
					if _, isStr := stringField(f, k); !isStr {
						c.add("F-PERM-1", Warn, "%s", t.at("%s is not a string: %s", k, t.describe(i)))
					}
				}
			}
		}
	}
	if len(missing) > 0 {
		c.add("P-SID-2", Warn, "%s", t.at("%d event(s) after line %d leave session_id out (first: line %d)", len(missing), sidLine, missing[0]))
	}
	if len(results) > 1 {
		c.add("P-RES-1", Fail, "%s", t.at("%d result events (lines %s); the bridge ignores all but the first", len(results), joinInts(results)))
	}
	if len(afterErr) > 0 {
		c.add("P-ERR-2", Warn, "%s", t.at("output after the error event on line %d is never shown (lines %s)", errLine, joinInts(afterErr)))
	} else if errLine >= 0 {
		c.add("P-ERR-2", Pass, "%s", t.at("nothing shown-worthy after the error event on line %d", errLine))
	}
	if t.stdoutLate {
		c.add("D-GROUP-1", Warn, "%s", t.at("stdout was still open %s after the agent exited (a process it started?); the bridge kills its process group then", drainWait))
	}
}

// usage checks a result's or error's usage object (F-USAGE-1).
func (c *checker) usage(t *turn, i int, f map[string]json.RawMessage) {
	raw, ok := f["usage"]
	if !ok || string(raw) == "null" {
		return
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || m == nil {
		c.add("F-USAGE-1", Warn, "%s", t.at("usage is not an object, so it is ignored: %s", t.describe(i)))
		return
	}
	for _, k := range []string{"input_tokens", "output_tokens", "total_tokens", "cache_read_input_tokens",
		"cache_creation_input_tokens", "reasoning_tokens", "duration_ms", "cost_usd"} {
		if v, ok := m[k]; ok {
			var n float64
			if json.Unmarshal(v, &n) != nil {
				c.add("F-USAGE-1", Warn, "%s", t.at("usage.%s is not a number (%s), counted as 0: %s", k, clip(v, 40), t.describe(i)))
			}
		}
	}
	c.add("F-USAGE-1", Pass, "%s", t.at("usage %s", clip(raw, 120)))
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}

// stdinRule: with permission off the agent reads its one line and does not
// wait for more (P-STDIN-1). With EOF at once it must finish; with stdin
// held open it must finish too, not only once stdin is closed.
func (c *checker) stdinRule() {
	if c.p.Permission {
		c.add("P-STDIN-1", NotExercised, "the profile sets permission: true, so stdin stays open for permission answers (P-STDIN-2)")
		return
	}
	f := c.first
	// An agent that asked permission it does not have (P-PERM-1) and then
	// waits for the answer breaks that rule; the wait is its consequence.
	if f.hung && f.asks() {
		c.add("P-PERM-1", Fail, "%s", f.at("and then waited for an answer that never comes: %s", f.outcome()))
		c.add("P-STDIN-1", NotExercised, "the first turn waited for the answer to its permission_request (P-PERM-1)")
		return
	}
	if f.hung {
		c.add("P-STDIN-1", Fail, "%s", f.at("stdin was closed (EOF) right after the turn line, yet the agent had not finished after %s: %s", f.plan.bound, f.hungSnapshot))
		return
	}
	c.add("P-STDIN-1", Pass, "%s", f.at("with EOF right after the turn line it finished: %s", f.outcome()))
	s := c.stdin
	if s == nil {
		return
	}
	switch {
	case s.holdExpired && s.asks():
		c.add("P-PERM-1", Fail, "%s", s.at("and with stdin held open it then waited for the answer (%s)", s.holdSnapshot))
	case !s.holdExpired:
		c.add("P-STDIN-1", Pass, "%s", s.at("with stdin held open (no EOF) it finished in %dms, before the %s hold ended", s.exitAt.Milliseconds(), s.plan.holdStdin))
	case s.hung:
		c.add("P-STDIN-1", Fail, "%s", s.at("with stdin held open it had not finished after %s (%s), nor after stdin was then closed", s.plan.holdStdin, s.holdSnapshot))
	default:
		after := s.exitAt - s.plan.holdStdin
		// Finishing promptly once stdin closes means it was waiting for
		// EOF; finishing much later is its own slowness.
		if after <= max(250*time.Millisecond, f.exitAt+f.exitAt/2) {
			c.add("P-STDIN-1", Fail, "%s", s.at("with stdin held open it had not finished after %s (%s); it finished %dms after stdin was closed: it waits for EOF instead of reading one line",
				s.plan.holdStdin, s.holdSnapshot, after.Milliseconds()))
		} else {
			c.add("P-STDIN-1", Pass, "%s", s.at("with stdin held open it was still working after %s and finished %dms after stdin was closed, too late to be waiting for EOF (the first turn took %dms)",
				s.plan.holdStdin, after.Milliseconds(), f.exitAt.Milliseconds()))
		}
	}
}

// versionRule: an unknown protocol_version must not fail a turn that
// succeeds with "0.4" (P-TURN-2).
func (c *checker) versionRule() {
	for _, v := range c.versions {
		switch {
		case !c.first.succeeded():
			c.add("P-TURN-2", NotExercised, "%s", v.at("nothing to compare: the first turn did not succeed (%s)", c.first.outcome()))
		case v.succeeded():
			c.add("P-TURN-2", Pass, "%s", v.at("the turn succeeded as with \"0.4\": %s", v.outcome()))
		default:
			c.add("P-TURN-2", Fail, "%s", v.at("with protocol_version %q the turn failed (%s) where \"0.4\" succeeded", v.plan.version, v.outcome()))
		}
	}
}

// emptyRule: an empty turn gets an error event (F-EMPTY-1).
func (c *checker) emptyRule() {
	t := c.empty
	switch {
	case t == nil:
	case t.errored():
		c.add("F-EMPTY-1", Pass, "%s", t.at("answered with an error event: %s", t.outcome()))
	default:
		c.add("F-EMPTY-1", Warn, "%s", t.at("no error event for a turn with no message and no attachment: %s", t.outcome()))
	}
}

// attachRule: an image-only turn is answered, not crashed on or hung in
// (D-ATT-1). It counts only when the first turn ended cleanly, so a
// general failure is not blamed on the attachment.
func (c *checker) attachRule() {
	t := c.attach
	switch {
	case t == nil:
	case c.first.crashed() || c.first.hung:
		c.add("D-ATT-1", NotExercised, "%s", t.at("the first turn already failed without an error event (%s), so this says nothing about attachments: %s", c.first.outcome(), t.outcome()))
	case t.hung:
		c.add("D-ATT-1", Fail, "%s", t.at("the image-only turn never finished: %s", t.outcome()))
	case t.crashed():
		c.add("D-ATT-1", Fail, "%s", t.at("the image-only turn crashed: %s, no error event; stderr: %s", t.outcome(), clip([]byte(lastLines(t.stderr, 3)), 200)))
	case t.errored() && c.empty != nil && errorMessage(t) == errorMessage(c.empty):
		c.add("D-ATT-1", Warn, "%s", t.at("answered the image-only turn with the empty turn's own error %q: it takes a turn with attachments for an empty one", errorMessage(t)))
	default:
		c.add("D-ATT-1", Pass, "%s", t.at("answered the image-only turn: %s", t.outcome()))
	}
}

// errorMessage is the message of the turn's first error event.
func errorMessage(t *turn) string {
	for _, e := range t.events() {
		if e.kind == agentproc.KindError {
			msg, _ := stringField(e.fields, "message")
			return msg
		}
	}
	return ""
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// sessionRules: ids are well formed and stable (checked per line), and a
// second turn given the first turn's id continues that session (P-SID-3).
func (c *checker) sessionRules() {
	var all []string
	for _, t := range c.turns {
		for _, s := range sessionIDs(t) {
			all = appendOnce(all, s)
		}
	}
	if len(all) == 0 {
		c.add("F-SID-1", Pass, "no event carried a session_id: a stateless agent")
		c.add("P-SID-4", Pass, "no event carried a session_id: a stateless agent")
		c.add("P-SID-3", Pass, "no event carried a session_id: a stateless agent that invents none")
		return
	}
	ids := fmt.Sprintf("session ids seen: %s", strings.Join(clipAll(all, 5), ", "))
	c.add("F-SID-1", Pass, "%s", ids)
	c.add("P-SID-4", Pass, "%s", ids)
	sid := firstSessionID(c.first)
	r := c.resume
	switch {
	case sid == "":
		c.add("P-SID-3", NotExercised, "the first turn reported no session id to resume")
	case r == nil:
	case r.hung:
		c.add("P-SID-3", Fail, "%s", r.at("given session_id %q it never finished: %s", sid, r.outcome()))
	case c.first.succeeded() && !r.succeeded():
		c.add("P-SID-3", Fail, "%s", r.at("given its own session_id %q the turn failed: %s — it reported an id it cannot resume", sid, r.outcome()))
	default:
		got := sessionIDs(r)
		switch {
		case len(got) == 0:
			c.add("P-SID-3", Pass, "%s", r.at("given session_id %q it reported no id (so the bridge keeps %q)", sid, sid))
		case slices.Contains(got, sid):
			c.add("P-SID-3", Pass, "%s", r.at("given session_id %q it continued that session", sid))
		default:
			c.add("P-SID-3", Fail, "%s", r.at("given session_id %q it reported %q: it started another session instead of continuing its own", sid, got[0]))
		}
	}
	if len(c.f["P-SID-2"]) == 0 {
		c.add("P-SID-2", Pass, "every event after the first id carried it")
	}
}

func clipAll(ss []string, n int) []string {
	out := make([]string, 0, n)
	for i, s := range ss {
		if i == n {
			out = append(out, fmt.Sprintf("… %d more", len(ss)-n))
			break
		}
		out = append(out, fmt.Sprintf("%q", clip([]byte(s), 60)))
	}
	return out
}

// permissionRules: with permission on, the agent waits for each answer
// (P-PERM-3) and honours a deny (F-PERM-2); with it off it never asks
// (P-PERM-1, checked per line).
func (c *checker) permissionRules() {
	if !c.p.Permission {
		if len(c.f["P-PERM-1"]) == 0 {
			c.add("P-PERM-1", Pass, "no permission_request in %d turns without permission: true", len(c.turns))
		}
		why := "the profile has permission off, so the agent may not ask"
		c.add("F-PERM-1", NotExercised, "%s", why)
		c.add("P-PERM-3", NotExercised, "%s", why)
		c.add("F-PERM-2", NotExercised, "%s", why)
		return
	}
	c.add("P-PERM-1", NotExercised, "the profile sets permission: true")
	asked := 0
	for _, t := range c.turns {
		asked += len(t.requests)
	}
	if asked == 0 {
		why := fmt.Sprintf("the agent asked no permission in %d turns; give --message a prompt that makes it ask (a tool call)", len(c.turns))
		c.add("F-PERM-1", NotExercised, "%s", why)
		c.add("P-PERM-3", NotExercised, "%s", why)
		c.add("F-PERM-2", NotExercised, "%s", why)
		return
	}
	if len(c.f["F-PERM-1"]) == 0 {
		c.add("F-PERM-1", Pass, "%d permission requests, each with a unique, well-formed request_id, a tool_name and an input object", asked)
	}
	waited := true
	for _, t := range c.turns {
		if t == c.term {
			continue // SIGTERM may end the turn before an answer
		}
		for _, q := range t.requests {
			if q.behavior == "" || !t.exitedOnItsOwn() {
				continue
			}
			if early := t.endBefore(q); early != "" {
				waited = false
				c.add("P-PERM-3", Fail, "%s", t.at("request %q (line %d at +%dms) was not waited for: %s", q.id, q.line+1, q.at.Milliseconds(), early))
			} else if q.due > q.at && q.answerAt >= 0 {
				c.add("P-PERM-3", Pass, "%s", t.at("request %q: answered %dms later, the agent waited and went on after it", q.id, (q.answerAt-q.at).Milliseconds()))
			}
		}
	}
	d, a := c.deny, c.asked
	switch {
	case !waited:
		c.add("F-PERM-2", NotExercised, "the agent does not wait for answers (P-PERM-3), so whether it honours one says nothing")
	case d == nil:
	case len(d.requests) == 0:
		c.add("F-PERM-2", NotExercised, "%s", d.at("the agent asked no permission this time"))
	case d.hung && d.unanswerable():
		c.add("F-PERM-2", NotExercised, "%s", d.at("it waited for an answer the bridge cannot give (F-PERM-1)"))
	case d.hung:
		c.add("F-PERM-2", Fail, "%s", d.at("after its request was denied it never finished: %s", d.outcome()))
	case a.succeeded() && d.exitedOnItsOwn() && a.reply(c.p.Streaming) != "" && a.reply(c.p.Streaming) == d.reply(c.p.Streaming):
		c.add("F-PERM-2", Fail, "%s", d.at("the reply was the same whether its request was allowed or denied: %q", clip([]byte(d.reply(c.p.Streaming)), 120)))
	default:
		c.add("F-PERM-2", Pass, "%s", d.at("denied, it answered %s; allowed, %s", d.outcome(), a.outcome()))
	}
}

// unanswerable reports whether the turn has a permission request the
// bridge could not answer (no usable request_id, or one reused).
func (t *turn) unanswerable() bool {
	for _, q := range t.requests {
		if q.behavior == "" {
			return true
		}
	}
	return false
}

// asks reports whether the turn has a permission_request event.
func (t *turn) asks() bool { return t.has(agentproc.KindPermissionRequest) }

// allowed reports whether the turn has a permission request the checker
// allowed (a malformed one is denied at once, as the bridge does).
func (t *turn) allowed() bool {
	for _, q := range t.requests {
		if q.behavior == "allow" && q.answerAt >= 0 {
			return true
		}
	}
	return false
}

// endBefore says how the turn ended or gave its result before request q
// was answered, or "" when it waited.
func (t *turn) endBefore(q *request) string {
	answered := q.answerAt
	for _, e := range t.events() {
		at := t.lines[e.i].at
		if e.i <= q.line || (answered >= 0 && at >= answered) {
			continue
		}
		switch e.kind {
		case agentproc.KindError:
			return "" // an error drops open requests (P-ERR-1)
		case agentproc.KindResult:
			return fmt.Sprintf("it printed its result (line %d at +%dms) before the answer", e.i+1, at.Milliseconds())
		}
	}
	if answered < 0 {
		return fmt.Sprintf("it exited at +%dms before the answer was due at +%dms", t.exitAt.Milliseconds(), q.due.Milliseconds())
	}
	return ""
}

// termRule: on SIGTERM the agent exits within kill_grace_secs (P-TIME-2).
func (c *checker) termRule() {
	t := c.term
	grace := c.p.KillGrace
	if grace <= 0 {
		grace = agentproc.DefaultKillGrace
	}
	switch {
	case t.termAt < 0:
		c.add("P-TIME-2", NotExercised, "%s", t.at("the agent finished (%s) before SIGTERM could be sent; a --message that keeps it busy longer exercises this", t.outcome()))
	case t.termKilled:
		c.add("P-TIME-2", Warn, "%s", t.at("SIGTERM at +%dms; still running kill_grace_secs (%s) later, so it was SIGKILLed", t.termAt.Milliseconds(), grace))
	case t.hung:
		c.add("P-TIME-2", Warn, "%s", t.at("SIGTERM at +%dms; it did not exit", t.termAt.Milliseconds()))
	default:
		after := 0
		for _, l := range t.lines {
			if l.at >= t.termAt {
				after++
			}
		}
		how := fmt.Sprintf("exit %d", t.exitCode)
		if t.signal != 0 {
			how = "ended by " + t.signal.String()
		}
		c.add("P-TIME-2", Pass, "%s", t.at("SIGTERM at +%dms; %s %dms later (kill_grace_secs %s), %d line(s) after the signal",
			t.termAt.Milliseconds(), how, (t.exitAt-t.termAt).Milliseconds(), grace, after))
	}
}

// exitRules: every turn's process exits (P-PRIN-4); a failure comes with
// an error event (P-EXIT-2) and an error event with a non-zero status
// (P-ERR-1, upstream SHOULD).
func (c *checker) exitRules() {
	var slowest time.Duration
	var hung []string
	for _, t := range c.turns {
		if t == c.term || t.cancelled {
			continue
		}
		if t.hung {
			hung = append(hung, t.plan.name)
		} else {
			slowest = max(slowest, t.exitAt)
		}
		// A turn that never ends counts against its probe's rule; only
		// the plain turns are this rule's own (with permission off the
		// first turn's is P-STDIN-1's: stdin was at EOF).
		plain := t == c.first && c.p.Permission || strings.HasPrefix(t.plan.name, "message ")
		switch {
		case t.hung && t.unanswerable():
			// The bridge cannot answer a malformed request: the wait that
			// follows is F-PERM-1's consequence, not a rule of its own.
			c.add("F-PERM-1", Fail, "%s", t.at("it then waited for an answer to a request the bridge cannot answer: %s", t.outcome()))
		case t.hung && plain:
			c.add("P-PRIN-4", Fail, "%s", t.at("the agent did not exit: %s", t.outcome()))
		case t.crashed():
			note := ""
			if r := t.reply(c.p.Streaming); r != "" {
				note = " after a reply; the turn is reported as failed"
			}
			c.add("P-EXIT-2", Warn, "%s", t.at("exit %d without an error event%s: the user only learns \"the agent exited with status %d\"", t.exitCode, note, t.exitCode))
		case t.exitedOnItsOwn() && t.termAt < 0 && t.errored() && t.exitCode == 0:
			c.add("P-ERR-1", Warn, "%s", t.at("exited 0 after its error event; the agent SHOULD exit non-zero (the bridge reports 1 either way)"))
		}
	}
	switch {
	case len(c.f["P-PRIN-4"]) > 0:
	case len(hung) > 0:
		c.add("P-PRIN-4", NotExercised, "turns that did not end (%s) are reported under their probes' rules", strings.Join(hung, ", "))
	default:
		c.add("P-PRIN-4", Pass, "every probe turn's process exited by itself (slowest %dms)", slowest.Milliseconds())
	}
	if len(c.f["P-EXIT-2"]) == 0 {
		c.add("P-EXIT-2", Pass, "no turn exited non-zero without an error event")
	}
}

// vacuous gives the line-level rules a pass when nothing was wrong.
func (c *checker) vacuous() {
	n := 0
	for _, t := range c.turns {
		n += len(t.lines)
	}
	for id, text := range map[string]string{
		"P-OUT-1":  fmt.Sprintf("all %d stdout lines in %d turns were JSON objects with a type, newline-terminated", n, len(c.turns)),
		"P-OUT-2":  "every event type was partial, result, error or permission_request",
		"D-LINE-1": fmt.Sprintf("no line over %d MiB", agentproc.MaxLineBytes>>20),
		"P-PART-1": "every partial had a string text",
		"P-RES-1":  "no turn had more than one result",
	} {
		if len(c.f[id]) == 0 {
			c.add(id, Pass, "%s", text)
		}
	}
	if len(c.f["P-ERR-1"]) == 0 {
		c.add("P-ERR-1", NotExercised, "no turn sent an error event (the empty turn is meant to draw one)")
	}
	if len(c.f["F-USAGE-1"]) == 0 {
		c.add("F-USAGE-1", NotExercised, "no result or error event carried usage")
	}
	if len(c.f["P-ERR-2"]) == 0 {
		c.add("P-ERR-2", NotExercised, "no turn sent an error event")
	}
	if len(c.f["D-GROUP-1"]) == 0 {
		c.add("D-GROUP-1", Pass, "stdout closed when the agent exited in every turn")
	}
}
