package transcribe_test

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// helperArg, after "--" in the test binary's arguments, makes it a
// transcription command (helper) instead of running tests.
const helperArg = "stt-helper"

func TestMain(m *testing.M) {
	if i := slices.Index(os.Args, "--"); i >= 0 && len(os.Args) > i+2 && os.Args[i+1] == helperArg {
		os.Exit(helper(os.Args[i+2], os.Args[i+3:]))
	}
	goleak.VerifyTestMain(m)
}

// helper is a command for the tests, chosen by mode:
//
//	echo FILE    print "heard " and the file's contents
//	fail         print "model not found" on stderr, exit 3
//	flood        print 2 MiB
//	env          print the value of STT_TEST_SECRET
//	hang PIDFILE start a child that sleeps, write its pid to PIDFILE, sleep
//	sleep        sleep an hour (the child of hang)
func helper(mode string, args []string) int {
	switch mode {
	case "echo":
		b, err := os.ReadFile(args[0])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Printf("  heard %s\n", b)
	case "fail":
		fmt.Fprintln(os.Stderr, "loading\nmodel not found")
		return 3
	case "flood":
		line := strings.Repeat("x", 1023) + "\n"
		for range 2 << 10 {
			os.Stdout.WriteString(line)
		}
	case "env":
		fmt.Printf("secret=%q", os.Getenv("STT_TEST_SECRET"))
	case "hang":
		child := exec.Command(os.Args[0], "-test.run=^$", "--", helperArg, "sleep")
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		os.WriteFile(args[0], []byte(fmt.Sprint(child.Process.Pid)), 0o600)
		time.Sleep(time.Hour)
	case "sleep":
		time.Sleep(time.Hour)
	}
	return 0
}
