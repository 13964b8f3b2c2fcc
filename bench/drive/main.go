// Command drive runs AgentProc turns in-process through agentproc.Run, for
// bench/runner.sh:
//
//	drive stream --profile P             one turn; count partial events and text bytes via OnEvent
//	drive overhead --agent PATH [-n N]   per-turn time of Run vs a bare exec of the same agent
//
// It prints one line of key=value figures.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agentbridge/agentbridge/core/agentproc"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "drive:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: drive stream --profile P | drive overhead --agent PATH [-n N]")
	}
	switch args[0] {
	case "stream":
		return stream(ctx, args[1:], stdout)
	case "overhead":
		return overhead(ctx, args[1:], stdout)
	}
	return fmt.Errorf("unknown mode %q", args[0])
}

// stream runs one turn and reports what OnEvent saw.
func stream(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("stream", flag.ContinueOnError)
	profile := fs.String("profile", "", "profile YAML")
	if err := fs.Parse(args); err != nil {
		return err
	}
	p, err := agentproc.LoadProfile(*profile)
	if err != nil {
		return fmt.Errorf("stream: %w", err)
	}
	var events, textBytes int64
	start := time.Now()
	o, err := agentproc.Run(ctx, p, agentproc.Turn{Message: "go"}, agentproc.Options{OnEvent: func(e agentproc.Event) {
		if e.Kind == agentproc.EventPartial {
			events++
			textBytes += int64(len(e.Text))
		}
	}})
	elapsed := time.Since(start)
	if err != nil {
		return fmt.Errorf("stream: %w", err)
	}
	if o.Failed() {
		return fmt.Errorf("stream: turn failed: %s (stderr %q)", o.Failure(), o.Stderr)
	}
	s := elapsed.Seconds()
	fmt.Fprintf(stdout, "events=%d text_bytes=%d run_seconds=%.4f events_per_s=%.0f text_mb_per_s=%.1f\n",
		events, textBytes, s, float64(events)/s, float64(textBytes)/1e6/s)
	return nil
}

// overhead alternates bare execs of the agent (turn line on stdin, stdout
// read to EOF) with agentproc.Run turns of the same agent, and reports the
// medians and their difference.
func overhead(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("overhead", flag.ContinueOnError)
	agent := fs.String("agent", "", "agent executable")
	n := fs.Int("n", 200, "turns of each kind")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *agent == "" || *n < 1 {
		return errors.New("overhead: --agent and a positive -n are required")
	}
	p := &agentproc.Profile{Name: "overhead", Command: *agent, Timeout: time.Minute, KillGrace: time.Second, Streaming: true}
	turn := []byte(`{"type":"turn","message":"hi","session_id":"","session_name":"default","attachments":[],"protocol_version":"0.4"}` + "\n")
	var bare, runner []time.Duration
	for i := 0; i < *n && ctx.Err() == nil; i++ {
		t0 := time.Now()
		cmd := exec.CommandContext(ctx, *agent)
		cmd.Stdin = bytes.NewReader(turn)
		var out bytes.Buffer
		cmd.Stdout = &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("overhead: bare exec: %w", err)
		}
		bare = append(bare, time.Since(t0))
		if !strings.Contains(out.String(), `"result"`) {
			return fmt.Errorf("overhead: bare exec printed %q", out.String())
		}

		t0 = time.Now()
		o, err := agentproc.Run(ctx, p, agentproc.Turn{Message: "hi"}, agentproc.Options{})
		if err != nil {
			return fmt.Errorf("overhead: %w", err)
		}
		runner = append(runner, time.Since(t0))
		if o.Reply != "ok" {
			return fmt.Errorf("overhead: turn replied %q: %s", o.Reply, o.Failure())
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("overhead: %w", err)
	}
	mb, mr := median(bare), median(runner)
	fmt.Fprintf(stdout, "turns=%d bare_median_ms=%.3f run_median_ms=%.3f overhead_median_ms=%.3f\n",
		len(bare), ms(mb), ms(mr), ms(mr-mb))
	return nil
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
