// Package live holds the live tests of the agent CLI profiles: the real
// claude, qwen, codex and gemini CLIs, run through `agentbridge run` and the
// profiles in this repository, against mock model APIs served from the test
// on 127.0.0.1. The CLIs come from $AGENTBRIDGE_CLI_BIN (set by .ci/run),
// from $HOME/.cache/agentbridge-cli/node_modules/.bin, or from PATH; a test
// whose CLI is missing is skipped with a message saying how to install it.
package live
