package transcribe_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/transcribe"
)

// TestLivePocketsphinx transcribes speech made by espeak-ng, as an OGG/Opus
// voice note the way Telegram sends one, with a real offline engine:
// ffmpeg and pocketsphinx behind the command engine. It skips, loudly,
// where the tools are missing (.ci/run installs them when it can).
func TestLivePocketsphinx(t *testing.T) {
	var missing []string
	for _, tool := range []string{"espeak-ng", "ffmpeg"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	_, errOld := exec.LookPath("pocketsphinx_continuous")
	_, errNew := exec.LookPath("pocketsphinx")
	if errOld != nil && errNew != nil {
		missing = append(missing, "pocketsphinx")
	}
	if len(missing) > 0 {
		t.Skipf("SKIPPED: the live transcription test needs %s (apt-get install espeak-ng ffmpeg pocketsphinx pocketsphinx-en-us)", strings.Join(missing, ", "))
	}
	dir := t.TempDir()
	wav, ogg := filepath.Join(dir, "speech.wav"), filepath.Join(dir, "voice.ogg")
	// Words pocketsphinx's default model hears in espeak-ng's voice every
	// time (tried: "hello world" came back as "well").
	if out, err := exec.Command("espeak-ng", "-s", "130", "-w", wav, "two three").CombinedOutput(); err != nil {
		t.Fatalf("espeak-ng: %v: %s", err, out)
	}
	if out, err := exec.Command("ffmpeg", "-loglevel", "error", "-i", wav, "-c:a", "libopus", "-b:a", "24k", ogg).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v: %s", err, out)
	}
	if _, err := os.Stat(ogg); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cmd  *transcribe.Command
	}{
		// The wrapper an operator would write (the test binary plays it).
		{"wrapper", command("sphinx", "{{FILE}}")},
		// No wrapper: the bridge makes the WAV with ffmpeg.
		{"{{WAV}}", sphinxOnWAV()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			text, err := tc.cmd.Transcribe(t.Context(), ogg, core.Attachment{Kind: "audio", Name: "voice.ogg", MIME: "audio/ogg"})
			if err != nil {
				t.Fatalf("Transcribe: %v", err)
			}
			t.Logf("pocketsphinx heard %q in %s", text, time.Since(start).Round(time.Millisecond))
			if w := strings.Fields(strings.ToLower(text)); !slices.Contains(w, "two") && !slices.Contains(w, "three") {
				t.Errorf("heard %q; want two or three of what espeak-ng said", text)
			}
		})
	}
}

// sphinxOnWAV runs pocketsphinx on the WAV the bridge makes: the 0.8 CLI
// Debian 12 ships, or the 5.x one.
func sphinxOnWAV() *transcribe.Command {
	if _, err := exec.LookPath("pocketsphinx_continuous"); err == nil {
		return &transcribe.Command{Argv: []string{"pocketsphinx_continuous", "-infile", "{{WAV}}", "-logfn", "/dev/null"}}
	}
	return &transcribe.Command{Argv: []string{"pocketsphinx", "single", "{{WAV}}"}}
}
