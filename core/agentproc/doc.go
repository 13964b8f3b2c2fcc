// Package agentproc runs one AgentProc 0.4 turn: it loads a profile, starts
// the agent in its own process group with a minimal environment, writes the
// turn line to its stdin, turns its NDJSON stdout into events and a final
// Outcome, answers permission requests, and enforces the turn's timeout.
//
// The wire protocol as this project implements it is described in
// spec/protocol.md; rule ids such as P-SID-1 or D-PERM-1 in comments refer to
// that text.
package agentproc
