package core

// The roles of an agent's partial text (P-PART-2), named once for both
// edges: the shims and the demo agent write them, agentproc reads them, the
// presenter shows or hides them.
const (
	// RoleOutput is the answer itself; a partial without a role is output.
	RoleOutput = "output"
	// RoleThinking is the agent's reasoning, shown apart or hidden.
	RoleThinking = "thinking"
)
