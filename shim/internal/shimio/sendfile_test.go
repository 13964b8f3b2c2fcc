package shimio

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentbridge/agentbridge/shim/sendfile"
)

// decodeEvents reads the emitter's lines, each file as its name.
func decodeEvents(t *testing.T, out []byte) []map[string]any {
	t.Helper()
	var evs []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line %q: %v", sc.Bytes(), err)
		}
		if atts, ok := ev["attachments"].([]any); ok {
			var names []any
			for _, a := range atts {
				names = append(names, a.(map[string]any)["filename"])
			}
			ev["attachments"] = names
		}
		evs = append(evs, ev)
	}
	return evs
}

// TestFilesGoOutInOrder (X-FILE-1): a file the CLI sent is written before
// the next event — after the text so far, before the text after it, its
// caption on a line of its own — and one sent last goes before the
// result, so none is lost at the end of a turn; Begin makes the spool
// (0700) and the CLI's environment names it.
func TestFilesGoOutInOrder(t *testing.T) {
	var out bytes.Buffer
	em := NewEmitter(&out)
	st, err := Begin(em, "test", CLI{Bin: "true"}, strings.NewReader(`{"type":"turn","message":"hi"}`+"\n"), &bytes.Buffer{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sf := st.SendFile
	if sf == nil {
		t.Fatal("send_file is off by default")
	}
	if fi, err := os.Stat(sf.Dir()); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("spool %v (%v), want a 0700 directory", fi, err)
	}
	env := strings.Join(sf.env(), "\n")
	if !strings.Contains(env, sendfile.SpoolEnv+"="+sf.Dir()) || !strings.Contains(env, sendfile.RootEnv+"=") {
		t.Errorf("the CLI's environment %q does not name the spool and the root", env)
	}
	put := func(name, caption string) {
		t.Helper()
		if err := sf.spool.Put(sendfile.Entry{Attachment: sendfile.NewAttachment(name, "", []byte("x")), Caption: caption}); err != nil {
			t.Fatal(err)
		}
	}
	_ = em.Partial("Here it is", "")
	put("chart.png", "Weekly")
	put("data.csv", "")
	_ = em.Partial("Done.", "")
	put("last.txt", "")
	_ = em.Result("Here it is Done.", nil)
	_ = em.Partial("after the end", "")
	want := []map[string]any{
		{"type": "partial", "text": "Here it is"},
		{"type": "partial", "text": "\n\nWeekly\n", "attachments": []any{"chart.png"}},
		{"type": "partial", "text": "", "attachments": []any{"data.csv"}},
		{"type": "partial", "text": "Done."},
		{"type": "partial", "text": "", "attachments": []any{"last.txt"}},
		{"type": "result", "text": "Here it is Done."},
	}
	if diff := cmp.Diff(want, decodeEvents(t, out.Bytes())); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	sf.Close()
	if _, err := os.Stat(sf.Dir()); !os.IsNotExist(err) {
		t.Errorf("the spool outlived Close (stat: %v)", err)
	}
}

// TestFilesBeforeError: files sent before a failure still go out, before
// the error (after it the bridge shows nothing, P-ERR-1).
func TestFilesBeforeError(t *testing.T) {
	var out bytes.Buffer
	em := NewEmitter(&out)
	st, err := Begin(em, "test", CLI{Bin: "true"}, strings.NewReader(`{"type":"turn","message":"hi"}`+"\n"), &bytes.Buffer{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.SendFile.Close()
	if err := st.SendFile.spool.Put(sendfile.Entry{Attachment: sendfile.NewAttachment("a.txt", "", []byte("x"))}); err != nil {
		t.Fatal(err)
	}
	_ = em.Error("boom", nil)
	want := []map[string]any{
		{"type": "partial", "text": "", "attachments": []any{"a.txt"}},
		{"type": "error", "message": "boom"},
	}
	if diff := cmp.Diff(want, decodeEvents(t, out.Bytes())); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestSendFileOff: --send-file=false registers nothing and makes no spool.
func TestSendFileOff(t *testing.T) {
	em := NewEmitter(&bytes.Buffer{})
	st, err := Begin(em, "test", CLI{Bin: "true"}, strings.NewReader(`{"type":"turn","message":"hi"}`+"\n"), &bytes.Buffer{}, []string{"--send-file=false"}, nil)
	if err != nil || st.SendFile != nil {
		t.Fatalf("Begin = %+v, %v; want no send_file", st.SendFile, err)
	}
}

// TestPromptNamesAttachments: the prompt names a turn attachment by its
// upstream fields (filename, mime_type), else by name and mime.
func TestPromptNamesAttachments(t *testing.T) {
	tr := Turn{Message: "look", Attachments: []Attachment{
		{Kind: "image", URL: "file:///in/a.png", Filename: "a.png", MIMEType: "image/png", Name: "old", MIME: "x/y"},
		{Kind: "file", URL: "file:///in/b.txt", Name: "b.txt", MIME: "text/plain"},
	}}
	want := "look\n\nAttached files:\n- /in/a.png (image, a.png, image/png)\n- /in/b.txt (file, b.txt, text/plain)"
	if got := tr.Prompt(); got != want {
		t.Errorf("Prompt() = %q, want %q", got, want)
	}
}
