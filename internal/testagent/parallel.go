package testagent

import (
	"flag"
	"strconv"
)

// Widen sets -test.parallel to n unless the command line set it, for a
// package whose t.Parallel tests mostly wait on their agents and a
// platform's pacing rather than compute: up to n of them wait at once
// instead of -parallel's default of one per CPU. Call it from TestMain
// before m.Run.
func Widen(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(n)) // registered by the testing package
	}
}
