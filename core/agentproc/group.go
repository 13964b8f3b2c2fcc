// This file: the agent's process group as the bridge journals it, so that
// after a crash of the bridge the next start can find what is left of it
// (KillStale) without ever signalling a process that only reuses its id.

package agentproc

// Group names an agent's process group beyond its id, which the kernel
// reuses: PID is the group's leader (the agent, whose pid is the group id,
// D-GROUP-1), StartTicks the leader's start time in clock ticks after boot
// (field 22 of /proc/PID/stat) and BootID the boot it ran in
// (/proc/sys/kernel/random/boot_id). Options.OnStart reports it.
type Group struct {
	PID        int
	StartTicks uint64
	BootID     string
}
