// Command agent is the scripted test agent (internal/testagent) as a
// program of its own: built statically, it is the one file of the image
// the real-engine tests run (internal/isolate/enginetest).
package main

import (
	"os"

	"github.com/agentbridge/agentbridge/internal/testagent"
)

func main() { os.Exit(testagent.Run(os.Stdin, os.Stdout)) }
