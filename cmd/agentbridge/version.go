package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// version is stamped at build time with -ldflags "-X main.version=v1.2.3"
// (the Dockerfiles do, from their VERSION build argument). Empty means: ask
// the build info.
var version string

// cmdVersion prints the version.
func cmdVersion(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", "usage: agentbridge version\n\nPrints the version: the stamped one, the module version or the VCS revision.\n", stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("version takes no arguments")
	}
	fmt.Fprintln(stdout, "agentbridge", buildVersion())
	return nil
}

// buildVersion says which code this binary is: the stamped version, else
// the module version the go command recorded (a tag for `go install
// ...@v1.2.3`, a pseudo-version from the commit for a build in a checkout),
// else the VCS revision, else "dev" for a build with no version
// information at all (go build -buildvcs=false outside a module cache).
func buildVersion() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	return versionFrom(bi)
}

// versionFrom picks the version out of a binary's build info.
func versionFrom(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified == "true" {
		rev += "-dirty"
	}
	return strings.TrimSpace(rev)
}
