package agentcheck

// Level says how binding a rule is for an agent.
type Level string

// Levels. Breaking a MUST (or MUST NOT) rule is a fail; falling short of a
// SHOULD is a warning.
const (
	Must   Level = "MUST"
	Should Level = "SHOULD"
)

// Rule is one agent-side rule of spec/protocol.md the checker probes.
type Rule struct {
	ID    string // the clause id, e.g. "P-STDIN-1"
	Level Level
	// Words are the rule in spec/protocol.md's own words, quoted verbatim
	// (a test holds them to the file).
	Words string
}

// Rules are the rules a report covers, in report order: input, output,
// session ids, permission, signals and exit.
var Rules = []Rule{
	{"P-STDIN-1", Must, "Without `permission: true` stdin is closed right after this line; do not wait for more"},
	{"P-TURN-2", Must, "`protocol_version` is an opaque string: compare it for equality or ignore it, never order it, and never fail a turn because it is a version you do not know"},
	{"F-EMPTY-1", Should, "Should your agent get one anyway (from another bridge, or from `agentbridge check`), answer it with an `error` event"},
	{"D-ATT-1", Must, "A turn may carry attachments and an empty `message`; answer it like any other turn"},
	{"P-OUT-1", Should, "Every line you print is one JSON object with a `type`"},
	{"P-OUT-2", Should, "There are four types and no others"},
	{"D-LINE-1", Should, "One line may be up to 8 MiB. A longer line is skipped with a warning and the turn goes on"},
	{"P-PART-1", Should, "a chunk to show now (when the profile streams)"},
	{"P-RES-1", Must, "the final body; at most one per turn, later ones are ignored"},
	{"P-ERR-1", Must, "a message for the user; the turn has failed"},
	{"P-ERR-2", Should, "After an `error` event the turn has failed even if you exit 0; later partials are not shown, a later `result` is discarded"},
	{"F-USAGE-1", Should, "`result` and `error` may carry `usage` with any of"},
	{"F-SID-1", Must, "A valid id is a non-empty string without `/`, `\\` or control characters"},
	{"P-SID-4", Must, "a different later value is a violation that is logged and ignored"},
	{"P-SID-2", Should, "Send it as soon as you know it, and repeat it on later events"},
	{"P-SID-3", Must, "Stateless agents leave the field out and never invent ids their tool cannot resume"},
	{"P-PERM-1", Must, "Without `permission: true` requests are logged and ignored — use your tool's own auto-approve mode instead"},
	{"F-PERM-1", Must, "`request_id` (unique in the turn, no whitespace), `tool_name` and `input` (an object) are required"},
	{"P-PERM-3", Must, "Wait for the answer before you run the tool"},
	{"F-PERM-2", Must, "do not run it when the answer is `deny`"},
	{"P-TIME-2", Should, "On SIGTERM, flush what you have and exit"},
	{"P-PRIN-4", Must, "One chat message is one turn, and one turn is one process"},
	{"D-GROUP-1", Should, "when your process exits, the bridge reads what is left on stdout for a short while and then SIGKILLs whatever remains in your process group"},
	{"P-EXIT-2", Should, "A non-zero exit without an `error` event gets a generic message"},
	{"X-FILE-1", Must, "Anything else, or an element that is not well formed (not an object, no `url`, a `kind` not listed, a field of the wrong type), is refused"},
	{"X-FILE-2", Must, "One that does not decode is refused"},
	{"X-FILE-3", Must, "only inside the profile's `cwd` or the turn's own attachment directory, symlinks followed"},
	{"X-FILE-4", Should, "A file over a limit, and every refused one, becomes a line in the reply naming it and why"},
}

// rule returns the rule with the given id; an unknown id is a programming
// error.
func rule(id string) Rule {
	for _, r := range Rules {
		if r.ID == id {
			return r
		}
	}
	panic("agentcheck: unknown rule " + id)
}
