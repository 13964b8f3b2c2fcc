package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// newFlagSet is the flag set of one command: its mistakes and its -h go to
// stderr, -h printing usage and then the flags.
func newFlagSet(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args into fs. The flag package has already printed the
// usage -h asked for or what was wrong, so an error only carries the exit
// status: 0 after -h, 2 for a mistake.
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		return exitCode(0)
	}
	return exitCode(2)
}
