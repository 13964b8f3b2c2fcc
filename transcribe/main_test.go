package transcribe_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
//	json         print two lines of JSON as pocketsphinx 5 does
//	sphinx FILE  the wrapper an operator would write: see sphinx
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
	case "json":
		// As pocketsphinx 5's single prints: one JSON object a line.
		fmt.Println(`{"b":0.000,"d":1.210,"p":0.980,"t":"two three","w":[{"b":0.1,"d":0.4,"p":1,"t":"two"}]}`)
		fmt.Println(`{"b":1.300,"d":0.500,"p":0.900,"t":"four"}`)
	case "sphinx":
		return sphinx(args[0])
	}
	return 0
}

// sphinx is the wrapper the live test runs as its command, and what an
// operator's script does (docs/voice.md): ffmpeg makes the voice note
// 16 kHz mono WAV, pocketsphinx prints what it heard. The 5.x CLI
// (pocketsphinx single FILE) prints JSON with the text in "t"; Debian 12's
// 0.8 has pocketsphinx_continuous, which prints the text.
func sphinx(file string) int {
	dir, err := os.MkdirTemp("", "stt-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	wav := filepath.Join(dir, "a.wav")
	// Half a second of silence first: the recogniser misses a word that
	// starts the file.
	if out, err := exec.Command("ffmpeg", "-loglevel", "error", "-i", file, "-af", "adelay=500:all=1,apad=pad_dur=0.5",
		"-ar", "16000", "-ac", "1", "-f", "wav", wav).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "ffmpeg: %v: %s\n", err, out)
		return 1
	}
	if _, err := exec.LookPath("pocketsphinx_continuous"); err == nil {
		cmd := exec.Command("pocketsphinx_continuous", "-infile", wav, "-logfn", os.DevNull)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return 1
		}
		return 0
	}
	out, err := exec.Command("pocketsphinx", "single", wav).Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pocketsphinx:", err)
		return 1
	}
	for _, line := range strings.Split(string(out), "\n") {
		var v struct {
			T string `json:"t"`
		}
		if json.Unmarshal([]byte(line), &v) == nil {
			fmt.Println(v.T)
		}
	}
	return 0
}
