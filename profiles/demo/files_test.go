package demo

import (
	"bytes"
	"encoding/base64"
	"image/png"
	"strings"
	"testing"
)

// fileTurn runs msg and returns its events, checking that exactly one
// partial carries one attachment, with text streamed before and after it
// (the file shows between the two), and returns that attachment's bytes.
func fileTurn(t *testing.T, msg, wantName, wantMIME, wantKind string) []byte {
	t.Helper()
	evs, err := runTurn(t, t.TempDir(), msg, "")
	if err != nil {
		t.Fatalf("%q: %v", msg, err)
	}
	at := -1
	for i, e := range evs {
		if len(e.Attachments) == 0 {
			continue
		}
		if at >= 0 || e.Type != "partial" || len(e.Attachments) != 1 {
			t.Fatalf("%q: want one partial with one attachment, got event %d: %+v", msg, i, e)
		}
		at = i
	}
	if at < 0 {
		t.Fatalf("%q sent no file: %+v", msg, evs)
	}
	if before, after := output(evs[:at]), output(evs[at+1:]); strings.TrimSpace(before) == "" || strings.TrimSpace(after) == "" {
		t.Errorf("%q: text before the file %q, after it %q; want a line on each side", msg, before, after)
	}
	if last := evs[len(evs)-1]; last.Type != "result" {
		t.Errorf("%q ended with %s, want result", msg, last.Type)
	}
	a := evs[at].Attachments[0]
	if a.Filename != wantName || a.MIMEType != wantMIME || a.Kind != wantKind {
		t.Errorf("%q: attachment %s (%s, %s), want %s (%s, %s)", msg, a.Filename, a.MIMEType, a.Kind, wantName, wantMIME, wantKind)
	}
	b64, ok := strings.CutPrefix(a.URL, "data:"+wantMIME+";base64,")
	if !ok {
		t.Fatalf("%q: url %.40s… is not a base64 data: URL of %s", msg, a.URL, wantMIME)
	}
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || int64(len(data)) != a.Size {
		t.Fatalf("%q: data %d bytes (%v), size says %d", msg, len(data), err, a.Size)
	}
	return data
}

// TestDrawChartSendsPNG: "draw a chart" sends a PNG it drew, a few KB,
// that decodes as an image.
func TestDrawChartSendsPNG(t *testing.T) {
	data := fileTurn(t, "draw a chart", "chart.png", "image/png", "image")
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("chart.png does not decode: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 100 || b.Dy() < 100 {
		t.Errorf("chart is %v, want a visible picture", b)
	}
	if len(data) < 200 || len(data) > 16<<10 {
		t.Errorf("chart.png is %d bytes, want a few KB", len(data))
	}
}

// TestSendNotesSendsText: "send the notes" sends notes.txt, plain text
// naming what the session remembers.
func TestSendNotesSendsText(t *testing.T) {
	data := fileTurn(t, "send the notes", "notes.txt", "text/plain", "file")
	if !strings.HasPrefix(string(data), "Notes from the agentbridge demo agent") {
		t.Errorf("notes.txt = %q", data)
	}
}

// TestAttachmentUpstreamNames: a turn attachment named the upstream way
// (filename, mime_type) is shown by those names, ahead of name and mime.
func TestAttachmentUpstreamNames(t *testing.T) {
	line := `{"type":"turn","message":"","session_id":"","protocol_version":"0.4",` +
		`"attachments":[{"kind":"file","url":"file:///tmp/r.pdf","filename":"report.pdf","mime_type":"application/pdf","name":"old.pdf","mime":"x/y","size":9}]}` + "\n"
	var out bytes.Buffer
	if err := Run(t.Context(), strings.NewReader(line), &out, t.TempDir(), 0); err != nil {
		t.Fatal(err)
	}
	if got, want := output(parseEvents(t, out.Bytes())), "- You attached `report.pdf` (file, application/pdf, 9 bytes).\n"; !strings.Contains(got, want) {
		t.Errorf("answer %q lacks %q", got, want)
	}
}
