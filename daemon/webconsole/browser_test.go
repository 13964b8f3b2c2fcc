package webconsole

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// ScreenshotsEnv names a directory: when set, the browser test saves a
// screenshot of each page there (docs/console holds the README's).
const ScreenshotsEnv = "AGENTBRIDGE_CONSOLE_SCREENSHOTS"

// browser starts a headless Chromium for the test, or skips it, loudly,
// when none is installed (.ci/run installs Debian's chromium).
func browser(t *testing.T) context.Context {
	t.Helper()
	var path string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Log("SKIPPING THE BROWSER TEST: no chromium on PATH (apt-get install chromium; .ci/run does)")
		t.Skip("chromium not installed")
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1000, 800),
	}
	// A bound on the whole browser session: a hung browser fails the test
	// instead of the package's timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		bcancel()
		acancel()
		cancel()
	})
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return bctx
}

// TestBrowserStop drives the console in Chromium: log in, see a running
// turn appear through the event stream (no reload), press Stop, see it
// gone — and the chat told as by /stop.
func TestBrowserStop(t *testing.T) {
	r := newRig(t, nil)
	ctx := browser(t)
	shots := os.Getenv(ScreenshotsEnv)
	shot := func(name string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			if shots == "" {
				return nil
			}
			b, err := chromedp.FullScreenshot(100)(ctx, tg)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(shots, name+".png"), b, 0o644)
		})
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(r.srv.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS("#token")), // sent to the login form
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.SendKeys(chromedp.CSS("#name"), "ada"),
		chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#idle")),
	); err != nil {
		t.Fatalf("log in: %v", err)
	}
	r.send("hang")
	// The turn appears without a reload: the stream replaced #live.
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("article.turn pre.reply")), shot("live")); err != nil {
		t.Fatalf("the running turn did not appear: %v", err)
	}
	reply, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("article.turn pre.reply")))
	if err != nil {
		t.Fatal(err)
	}
	updated, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS("#live"), "data-updated"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(reply, "working") || updated.Value == "" {
		t.Errorf("reply %q, updated by the stream %q", reply, updated.Value)
	}
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS("button.stop")),
		chromedp.WaitVisible(chromedp.CSS("#idle")),
	); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if !r.plat.Wait(ctx, func() bool { return hasText(r.plat.Texts(conv), "Stopped.") }) {
		t.Errorf("the chat was not told: %q", r.plat.Texts(conv))
	}
	if shots != "" {
		r.send("fail")
		eventually(t, "a failure", func() bool { return len(r.eng.Failures()) > 0 })
		if err := chromedp.Do(ctx,
			chromedp.Navigate(r.srv.URL+"/history"), chromedp.WaitVisible(chromedp.CSS("#failures")), shot("history"),
			chromedp.Navigate(r.srv.URL+"/usage"), chromedp.WaitVisible(chromedp.CSS("svg.chart")), shot("usage"),
		); err != nil {
			t.Fatalf("screenshots: %v", err)
		}
	}
}
