package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkStartup times `agentbridge version` against a hello-world
// binary built the same way (go build, no flags), each run as a process, in
// turns so the machine's load falls on both alike. It reports the medians
// and their ratio (x-hello): start-up is paid by every agentbridge process,
// and each turn of a ready profile starts two (the bridge's spawn of
// `agentbridge shim …`, which runs the same package inits).
//
//	go test -run '^$' -bench Startup -benchtime 200x ./cmd/agentbridge
func BenchmarkStartup(b *testing.B) {
	ab := agentbridgeBinary(b)
	src := b.TempDir()
	for name, text := range map[string]string{
		"go.mod":  "module hello\n\ngo 1.26\n",
		"main.go": "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n",
	} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	hello := filepath.Join(src, "hello")
	build := exec.Command("go", "build", "-o", hello, ".")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build hello: %v\n%s", err, out)
	}
	var tHello, tVersion []time.Duration
	for b.Loop() {
		tHello = append(tHello, timeRun(b, hello))
		tVersion = append(tVersion, timeRun(b, ab, "version"))
	}
	h, v := median(tHello), median(tVersion)
	b.ReportMetric(float64(h.Microseconds()), "hello-µs")
	b.ReportMetric(float64(v.Microseconds()), "version-µs")
	b.ReportMetric(float64(v)/float64(h), "x-hello")
}

func timeRun(b *testing.B, name string, args ...string) time.Duration {
	start := time.Now()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		b.Fatalf("%s: %v\n%s", name, err, out)
	}
	return time.Since(start)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
