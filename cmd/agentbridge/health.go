package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

const healthUsage = `usage: agentbridge health [--timeout D] [URL]

Checks a running serve's health endpoint (metrics.listen in its config) and
exits 0 when it answers 200, 1 otherwise. It is the images' HEALTHCHECK: the
slim image has no curl. URL defaults to http://127.0.0.1:9090/healthz.

flags:
`

// defaultHealthURL matches the metrics.listen the deployment configs use.
const defaultHealthURL = "http://127.0.0.1:9090/healthz"

// cmdHealth probes a health URL once.
func cmdHealth(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("health", healthUsage, stderr)
	timeout := fs.Duration("timeout", 5*time.Second, "give up after this `duration`")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 {
		return usageErrorf("health: want at most one URL, got %d arguments", fs.NArg())
	}
	url := defaultHealthURL
	if fs.NArg() == 1 {
		url = fs.Arg(0)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return usageErrorf("health: %v", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health: %s answered %s", url, resp.Status)
	}
	fmt.Fprintf(stdout, "%s", body)
	return nil
}
