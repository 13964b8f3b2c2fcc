// Command partials is an AgentProc 0.4 agent that streams partials as fast
// as it can, then an empty result. BENCH_COUNT is the number of partials;
// BENCH_SIZE, when set and positive, makes each partial that many bytes of
// "x", otherwise each is a short "chunk N " (about 40 bytes a line).
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

func main() {
	count, err := strconv.Atoi(os.Getenv("BENCH_COUNT"))
	if err != nil || count < 0 {
		fmt.Fprintln(os.Stderr, "partials: BENCH_COUNT must be a count:", os.Getenv("BENCH_COUNT"))
		os.Exit(2)
	}
	size, _ := strconv.Atoi(os.Getenv("BENCH_SIZE"))
	_, _ = bufio.NewReader(os.Stdin).ReadSlice('\n') // the turn
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	if size > 0 {
		line := []byte(`{"type":"partial","text":"` + strings.Repeat("x", size) + `"}` + "\n")
		for range count {
			out.Write(line)
		}
	} else {
		var line []byte
		for i := range count {
			line = append(line[:0], `{"type":"partial","text":"chunk `...)
			line = strconv.AppendInt(line, int64(i), 10)
			line = append(line, " \"}\n"...)
			out.Write(line)
		}
	}
	out.WriteString(`{"type":"result","text":""}` + "\n")
	if err := out.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "partials:", err)
		os.Exit(1)
	}
}
