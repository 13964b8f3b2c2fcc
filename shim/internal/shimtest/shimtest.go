// Package shimtest replays recorded agent CLI sessions for shim tests. The
// test binary doubles as the fake CLI: TestMain calls FakeMain, which, when
// the environment asks for it, plays a recording — writing the CLI's
// stdout lines and checking that what the shim writes to the CLI's stdin
// is what the real CLI was sent — and exits.
//
// Recording format, one directive per line:
//
//	<< JSON      the CLI writes this line to stdout
//	>> JSON      the CLI reads one stdin line; it must equal JSON (as values)
//	!stdin STR   the CLI reads stdin to its end; it must equal the JSON string STR
//	!stderr TEXT the CLI writes TEXT and a newline to stderr
//	!exit N      the CLI exits with status N at once
//	!hang        the CLI waits until it is killed
//	!restart     ends what one start of the CLI plays: the next start
//	             plays on from here (a shim that runs the CLI twice)
//
// Blank lines and lines starting with # are skipped. Without !exit the
// fake exits 0 once the script ends and its stdin is closed, like claude.
package shimtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Environment variables that turn the test binary into the fake CLI.
const (
	envScript = "AGENTBRIDGE_SHIMTEST_SCRIPT" // path of the recording to play
	envArgs   = "AGENTBRIDGE_SHIMTEST_ARGS"   // where to write the argv as JSON
)

// FakeMain plays the recording named by the environment and exits, when
// the process was started as the fake CLI; otherwise it returns at once.
func FakeMain() {
	script := os.Getenv(envScript)
	if script == "" {
		return
	}
	start := 0
	if p := os.Getenv(envArgs); p != "" {
		// One JSON line per start: the count says which part to play.
		prev, _ := os.ReadFile(p)
		start = bytes.Count(prev, []byte("\n"))
		b, _ := json.Marshal(os.Args[1:])
		_ = os.WriteFile(p, append(append(prev, b...), '\n'), 0o600)
	}
	os.Exit(play(script, start, os.Stdin, os.Stdout, os.Stderr))
}

// play plays part start (counting from 0) of the recording at path.
func play(path string, start int, stdin io.Reader, stdout, stderr io.Writer) int {
	data, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(stderr, "FAKE:", err)
		return 98
	}
	parts := regexp.MustCompile(`(?m)^!restart\s*$`).Split(string(data), -1)
	if start >= len(parts) {
		fmt.Fprintf(stderr, "FAKE MISMATCH: started %d times, the recording has %d parts\n", start+1, len(parts))
		return 99
	}
	data = []byte(parts[start])
	in := bufio.NewReaderSize(stdin, 1<<20)
	fail := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "FAKE MISMATCH: "+format+"\n", args...)
		return 99
	}
	for n, raw := range strings.Split(string(data), "\n") {
		l := strings.TrimSpace(raw)
		switch {
		case l == "" || strings.HasPrefix(l, "#"):
		case strings.HasPrefix(l, "<< "):
			fmt.Fprintln(stdout, l[3:])
		case strings.HasPrefix(l, ">> "):
			got, err := in.ReadString('\n')
			if err != nil && got == "" {
				return fail("line %d: stdin ended, want %s", n+1, l[3:])
			}
			if !sameJSON(got, l[3:]) {
				return fail("line %d: stdin got %s want %s", n+1, strings.TrimSpace(got), l[3:])
			}
		case strings.HasPrefix(l, "!stdin "):
			var want string
			if err := json.Unmarshal([]byte(l[7:]), &want); err != nil {
				return fail("line %d: bad !stdin: %v", n+1, err)
			}
			got, _ := io.ReadAll(in)
			if string(got) != want {
				return fail("line %d: stdin got %q want %q", n+1, got, want)
			}
		case strings.HasPrefix(l, "!stderr "):
			fmt.Fprintln(stderr, l[8:])
		case l == "!hang":
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, syscall.SIGTERM)
			<-sig
			return 143
		case strings.HasPrefix(l, "!exit "):
			// At once, like a CLI that dies: stdin may still be open.
			code, _ := strconv.Atoi(l[6:])
			return code
		default:
			return fail("line %d: unknown directive %q", n+1, l)
		}
	}
	// Like claude: exit once stdin is closed; anything more is unexpected.
	if rest, _ := io.ReadAll(in); len(bytes.TrimSpace(rest)) > 0 {
		return fail("unexpected stdin after the script: %s", rest)
	}
	return 0
}

func sameJSON(a, b string) bool {
	var va, vb any
	if json.Unmarshal([]byte(a), &va) != nil || json.Unmarshal([]byte(b), &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// Fake is a fake CLI installed in a temporary PATH directory.
type Fake struct {
	Dir      string // the PATH directory holding the fake binary
	argsFile string
}

// NewFake installs the running test binary as name in a temporary
// directory, to play script (a path relative to the test's directory).
func NewFake(t testing.TB, name string) *Fake {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
	return &Fake{Dir: dir, argsFile: filepath.Join(dir, "args.json")}
}

// Environ is the CLI environment that makes the fake play script.
func (f *Fake) Environ(t testing.TB, script string) []string {
	t.Helper()
	abs, err := filepath.Abs(script)
	if err != nil {
		t.Fatal(err)
	}
	// GORACE: a -race test binary otherwise sleeps a second at exit.
	return []string{"PATH=" + f.Dir, "HOME=" + f.Dir, "GORACE=atexit_sleep_ms=0", envScript + "=" + abs, envArgs + "=" + f.argsFile}
}

// Args returns the argv (without argv[0]) the fake was last started with.
func (f *Fake) Args(t testing.TB) []string {
	t.Helper()
	starts := f.Starts(t)
	if len(starts) == 0 {
		t.Fatal("the fake CLI was not started")
	}
	return starts[len(starts)-1]
}

// Starts returns the argv (without argv[0]) of every start of the fake, in
// order.
func (f *Fake) Starts(t testing.TB) [][]string {
	t.Helper()
	b, err := os.ReadFile(f.argsFile)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var starts [][]string
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var args []string
		if err := json.Unmarshal(line, &args); err != nil {
			t.Fatal(err)
		}
		starts = append(starts, args)
	}
	return starts
}

// RunFunc is a shim's entry point.
type RunFunc func(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, args, environ []string) error

// Result is what a driven shim turn produced.
type Result struct {
	Events []map[string]any // the AgentProc events, in order
	Err    error            // Run's return value
	Stderr string
}

// Drive runs one shim turn: it writes turn as the turn line (closing stdin
// right after unless turn["permission"] is true), answers every
// permission_request with respond's line, and collects the events.
func Drive(t testing.TB, run RunFunc, turn map[string]any, args, environ []string, respond func(req map[string]any) map[string]any) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdinR.Close(); stdoutR.Close() })
	tl, _ := json.Marshal(turn)
	if _, err := stdinW.Write(append(tl, '\n')); err != nil {
		t.Fatal(err)
	}
	perm, _ := turn["permission"].(bool)
	if !perm {
		stdinW.Close()
	}
	var stderr lockedBuffer
	done := make(chan error, 1)
	go func() {
		err := run(ctx, stdinR, stdoutW, &stderr, args, environ)
		stdoutW.Close()
		done <- err
	}()
	var res Result
	sc := bufio.NewScanner(stdoutR)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Errorf("shim wrote a line that is not a JSON object: %s", sc.Bytes())
			continue
		}
		res.Events = append(res.Events, ev)
		if ev["type"] == "permission_request" && respond != nil {
			b, _ := json.Marshal(respond(ev))
			if _, err := stdinW.Write(append(b, '\n')); err != nil {
				t.Errorf("answer permission request: %v", err)
			}
		}
	}
	res.Err = <-done
	if perm {
		stdinW.Close()
	}
	res.Stderr = stderr.String()
	return res
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
