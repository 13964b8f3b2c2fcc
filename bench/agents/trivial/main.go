// Command trivial is the smallest AgentProc 0.4 agent: it reads the turn
// line (or EOF, so a bare exec with no stdin works too) and answers with
// one result.
package main

import (
	"bufio"
	"os"
)

func main() {
	_, _ = bufio.NewReader(os.Stdin).ReadSlice('\n') // the turn; its content does not matter
	_, _ = os.Stdout.WriteString(`{"type":"result","text":"ok"}` + "\n")
}
