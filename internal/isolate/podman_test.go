package isolate_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/internal/isolate"
	"github.com/agentbridge/agentbridge/internal/isolate/enginetest"
)

// These tests run the wrapper against a real Podman with the test agent's
// image (enginetest); each uses a workspace of its own, so they run in
// parallel.

func workspace(t *testing.T, e enginetest.Engine) string {
	var b [4]byte
	rand.Read(b[:])
	ws := "it-" + hex.EncodeToString(b[:])
	t.Cleanup(func() { e.RemoveVolume(isolate.VolumeName(ws)) })
	return ws
}

func turnLine(msg string) string {
	return `{"type":"turn","message":"` + msg + `","session_id":"","protocol_version":"0.4"}` + "\n"
}

// TestPodmanWorkspacePersists: a turn runs in a container, and the next
// turn of the conversation finds what the first wrote in its workspace;
// each container is gone once its turn ended, the named volume stays.
func TestPodmanWorkspacePersists(t *testing.T) {
	t.Parallel()
	e := enginetest.Podman(t)
	ws := workspace(t, e)
	var names []string
	for _, tc := range []struct{ msg, want string }{{"note:alpha", "notes: alpha "}, {"note:beta", "notes: alpha beta "}} {
		s := parse(t, e.Runtime, "--image", e.Image, "--workspace", ws, "--grace", "1s")
		names = append(names, s.Name)
		var out, errb bytes.Buffer
		if code := isolate.Run(t.Context(), s, strings.NewReader(turnLine(tc.msg)), &out, &errb); code != 0 || !strings.Contains(out.String(), tc.want) {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q; want 0 and %q", tc.msg, code, out.String(), errb.String(), tc.want)
		}
	}
	for _, n := range names {
		if e.Exists(t, n) {
			t.Errorf("container %s left after its turn", n)
		}
	}
	if !slices.Contains(e.Volumes(t), isolate.VolumeName(ws)) {
		t.Errorf("the workspace volume %s is gone", isolate.VolumeName(ws))
	}
}

// TestPodmanStop: a stopped turn (/stop, the timeout and shutdown all end
// the wrapper's ctx with SIGTERM) stops and removes its container before
// the wrapper returns, with the container's anonymous volume — also an
// agent that ignores SIGTERM, which only the engine's SIGKILL after
// --grace ends. The conversation's named volume stays.
func TestPodmanStop(t *testing.T) {
	t.Parallel()
	e := enginetest.Podman(t)
	for _, verb := range []string{"hang", "ignore-term"} {
		t.Run(verb, func(t *testing.T) {
			t.Parallel()
			ws := workspace(t, e)
			s := parse(t, e.Runtime, "--image", e.Image, "--workspace", ws, "--grace", "1s")
			stdinR, stdinW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer stdinW.Close()
			defer stdinR.Close()
			outR, outW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer outR.Close()
			ctx, stop := context.WithCancel(t.Context())
			defer stop()
			done := make(chan int, 1)
			go func() {
				done <- isolate.Run(ctx, s, stdinR, outW, io.Discard)
				outW.Close()
			}()
			if _, err := stdinW.Write([]byte(turnLine(verb))); err != nil {
				t.Fatal(err)
			}
			if err := outR.SetReadDeadline(time.Now().Add(60 * time.Second)); err != nil {
				t.Fatal(err)
			}
			if line, err := bufio.NewReader(outR).ReadString('\n'); err != nil || !strings.Contains(line, "working") {
				t.Fatalf("first line %q, %v; want the agent working", line, err)
			}
			mounts := e.Mounts(t, s.Name)
			anon := slices.DeleteFunc(slices.Clone(mounts), func(v string) bool { return v == isolate.VolumeName(ws) })
			if len(anon) != 1 || len(mounts) != 2 {
				t.Fatalf("mounts %q: want the workspace and one anonymous volume (/cache)", mounts)
			}
			stop()
			if code := <-done; code != 143 {
				t.Errorf("exit %d, want 143", code)
			}
			if e.Exists(t, s.Name) {
				t.Errorf("container %s still there after the stop", s.Name)
			}
			vols := e.Volumes(t)
			if slices.Contains(vols, anon[0]) {
				t.Errorf("anonymous volume %s left behind", anon[0])
			}
			if !slices.Contains(vols, isolate.VolumeName(ws)) {
				t.Errorf("the workspace volume %s is gone", isolate.VolumeName(ws))
			}
		})
	}
}

// errorEvent returns the message of the one protocol error event in out.
func errorEvent(t *testing.T, out string) string {
	t.Helper()
	var ev struct{ Type, Message string }
	if err := json.Unmarshal([]byte(out), &ev); err != nil || ev.Type != "error" || strings.Count(out, "\n") != 1 {
		t.Fatalf("stdout %q: want one error event line (%v)", out, err)
	}
	return ev.Message
}

// TestPodmanImageMissing: an image the engine does not have (nor can
// pull) is reported as the turn's error event, worded for the chat, not
// as "exited with status 125"; the engine's words go to stderr (the log).
func TestPodmanImageMissing(t *testing.T) {
	t.Parallel()
	e := enginetest.Podman(t)
	var out, errb bytes.Buffer
	code := isolate.Main(t.Context(), []string{e.Runtime, "--image", "localhost/agentbridge-no-such-image:0", "--", "shim", "claude"},
		strings.NewReader(turnLine("hello")), &out, &errb)
	want := `The bridge is misconfigured: the agent image "localhost/agentbridge-no-such-image:0" is not available to podman (the operator has been told)`
	if msg := errorEvent(t, out.String()); code != 125 || msg != want {
		t.Errorf("exit %d, error %q; want 125, %q", code, msg, want)
	}
	if !strings.Contains(errb.String(), "has no image") {
		t.Errorf("stderr %q: want the detail for the operator", errb.String())
	}
}
