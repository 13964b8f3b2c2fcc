// Package agentcheck is the conformance checker for AgentProc agents behind
// `agentbridge check`: it runs a profile's agent through a series of probe
// turns, watches what the agent itself does — its raw stdout lines and their
// timing, whether it waits on stdin, how it answers permission responses and
// SIGTERM, its exit status — and reports, rule by rule of spec/protocol.md,
// pass, fail (a MUST or MUST NOT broken), warn (a SHOULD) or not exercised.
//
// The agent is started by agentproc.Profile.Start, exactly as the bridge
// starts it, but driven here rather than by agentproc.Run: the runner
// forgives what the checker must report (it ignores a second result, drops
// a bad session id, closes stdin at once).
package agentcheck
