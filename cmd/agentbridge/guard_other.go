//go:build !linux

package main

// closeToAgents is Linux-only (PR_SET_DUMPABLE); elsewhere a same-user agent
// is kept out of the bridge's memory only by the operating system's own
// rules.
func closeToAgents() error { return nil }
