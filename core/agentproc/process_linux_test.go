package agentproc

import (
	"os/exec"
	"testing"
)

// TestWaitExitedDoesNotReap checks that waitExited returns once the agent
// has exited, whether before or after the call, and leaves it unreaped so
// its process group cannot be reused before Run kills it (D-GROUP-1).
func TestWaitExitedDoesNotReap(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"exits later", []string{"-c", "sleep 0.2; exit 7"}},
		{"exits at once", []string{"-c", "exit 7"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("/bin/sh", tc.args...)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				waitExited(cmd.Process.Pid)
			}()
			<-done
			// Still a zombie: Wait reaps it now and sees its status.
			err := cmd.Wait()
			if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 7 {
				t.Fatalf("Wait after waitExited: %v, state %v", err, cmd.ProcessState)
			}
		})
	}
}
