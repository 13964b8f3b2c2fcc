// Command sleeper is the load benchmark's agent: it reads the turn line,
// sleeps for the duration in its first argument (default 1s) and answers
// with one result whose text carries two wall-clock timestamps (Unix
// nanoseconds): when its main began and when it wrote the result. The
// harness subtracts the span between them, so what it attributes to the
// bridge excludes the agent's own work and sleep.
package main

import (
	"bufio"
	"os"
	"strconv"
	"time"
)

func main() {
	start := time.Now()
	sleep := time.Second
	if len(os.Args) > 1 {
		if d, err := time.ParseDuration(os.Args[1]); err == nil {
			sleep = d
		}
	}
	_, _ = bufio.NewReader(os.Stdin).ReadSlice('\n') // the turn; its content does not matter
	time.Sleep(sleep)
	line := `{"type":"result","text":"ok ` + strconv.FormatInt(start.UnixNano(), 10) + " " +
		strconv.FormatInt(time.Now().UnixNano(), 10) + `"}` + "\n"
	_, _ = os.Stdout.WriteString(line)
}
