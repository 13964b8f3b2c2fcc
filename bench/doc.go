// Package bench holds the runner comparison harness: runner.sh, the agents
// it runs (agents/trivial, agents/partials) and the in-process driver
// (drive). Nothing here runs under go test; see BENCHMARKS.md.
package bench
