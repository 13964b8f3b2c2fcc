// Package bench holds the runner comparison harness: runner.sh, the agents
// it runs (agents/trivial, agents/partials), the in-process driver (drive),
// agents/sleeper, which the load benchmark in core/engine builds, and
// eventsflood, which floods serve's Slack Events API endpoint.
// Nothing here runs under go test; see BENCHMARKS.md.
package bench
