package agentproc

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseAttachments: X-FILE-1's attachments array as the bridge reads
// it — well-formed entries whole, every other one kept with its problem,
// never dropped.
func TestParseAttachments(t *testing.T) {
	tests := []struct {
		line string
		want []Attachment
	}{
		{`{"type":"partial","text":"x"}`, nil},
		{`{"type":"partial","text":"x","attachments":null}`, nil},
		{`{"type":"partial","text":"x","attachments":[]}`, nil},
		{`{"type":"partial","text":"x","attachments":[{"kind":"image","url":"data:image/png;base64,AA==","filename":"a.png","mime_type":"image/png","size":1}]}`,
			[]Attachment{{Kind: "image", URL: "data:image/png;base64,AA==", Filename: "a.png", MIMEType: "image/png", Size: 1}}},
		{`{"type":"result","text":"","attachments":[{"url":"file:///tmp/x","name":"old.txt","mime":"text/plain"}]}`,
			[]Attachment{{Kind: "file", URL: "file:///tmp/x", Filename: "old.txt", MIMEType: "text/plain"}}},
		{`{"type":"partial","attachments":{"kind":"file"}}`, []Attachment{{Problem: "attachments is not an array"}}},
		{`{"type":"partial","attachments":["x"]}`, []Attachment{{Problem: "an attachment is not an object"}}},
		{`{"type":"partial","attachments":[{"kind":"file"}]}`, []Attachment{{Kind: "file", Problem: "url is missing"}}},
		{`{"type":"partial","attachments":[{"kind":"sticker","url":"data:,x"}]}`,
			[]Attachment{{Kind: "sticker", URL: "data:,x", Problem: `kind "sticker" is not image, file, audio or video`}}},
		{`{"type":"partial","attachments":[{"url":"data:,x","size":-1,"filename":7}]}`,
			[]Attachment{{Kind: "file", URL: "data:,x", Problem: "filename is not a string; size is not a whole number of bytes"}}},
	}
	for _, tt := range tests {
		got := Classify([]byte(tt.line)).Attachments
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.line, diff)
		}
	}
}

// FuzzClassifyAttachments: whatever a line's attachments hold, reading it
// neither panics nor yields an entry that is neither well formed (a
// known kind and a URL) nor marked with its problem (X-FILE-1).
func FuzzClassifyAttachments(f *testing.F) {
	for _, s := range []string{
		`{"type":"partial","text":"x","attachments":[{"kind":"image","url":"data:image/png;base64,AA=="}]}`,
		`{"type":"result","attachments":[{"url":"file:///x","size":1e3},{"kind":1},null,[],"s"]}`,
		`{"type":"partial","attachments":{}}`,
		`{"type":"partial","attachments":[{"kind":"video","url":"https://x","filename":"\u0000..\/x"}]}`,
	} {
		f.Add([]byte(s))
	}
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		l := Classify(line)
		for _, a := range l.Attachments {
			if a.Problem == "" && (a.URL == "" || !knownKind(a.Kind) || a.Size < 0) {
				t.Fatalf("Classify(%q): entry %+v has no problem but is not well formed", line, a)
			}
		}
		if len(l.Attachments) > MaxEventAttachments+1 {
			t.Fatalf("Classify(%q): %d attachments", line, len(l.Attachments))
		}
		if l.Kind != KindPartial && l.Kind != KindResult && l.Attachments != nil {
			t.Fatalf("Classify(%q): a %s with attachments", line, l.Kind)
		}
	})
}

// TestRunForwardsFiles: a partial's and a result's files reach the caller
// as EventFiles right after the partial's text, in the order the agent
// sent them — a non-streaming profile's too (X-FILE-1); after an error
// they do not (P-ERR-1).
func TestRunForwardsFiles(t *testing.T) {
	lines := []string{
		`{"type":"partial","text":"before "}`,
		`{"type":"partial","text":"chart:","attachments":[{"kind":"image","url":"data:,a"}]}`,
		`{"type":"partial","text":" after"}`,
		`{"type":"result","text":"","attachments":[{"kind":"file","url":"data:,b"}]}`,
	}
	for _, streaming := range []bool{true, false} {
		p := agentProfile(t, "lines", map[string]string{"AGENT_LINES": mustJSON(lines)})
		p.Streaming = streaming
		var got []string
		run(t, context.Background(), p, Turn{Message: "x"}, Options{OnEvent: func(ev Event) {
			switch ev.Kind {
			case EventPartial:
				got = append(got, ev.Text)
			case EventFiles:
				for _, f := range ev.Files {
					got = append(got, "["+f.URL+"]")
				}
			}
		}})
		want := []string{"before ", "chart:", "[data:,a]", " after", "[data:,b]"}
		if !streaming {
			want = []string{"[data:,a]", "[data:,b]"}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("streaming %v (-want +got):\n%s", streaming, diff)
		}
	}

	// A result whose text nothing streamed before it: its words come
	// before its file, as the body.
	p := agentProfile(t, "lines", map[string]string{"AGENT_LINES": mustJSON([]string{
		`{"type":"result","text":"Here is the chart.","attachments":[{"kind":"image","url":"data:,c"}]}`,
	})})
	var got []string
	o := run(t, context.Background(), p, Turn{Message: "x"}, Options{OnEvent: func(ev Event) {
		switch ev.Kind {
		case EventPartial:
			got = append(got, ev.Text)
		case EventFiles:
			got = append(got, "["+ev.Files[0].URL+"]")
		}
	}})
	if want := []string{"Here is the chart.", "[data:,c]"}; !slices.Equal(got, want) || o.Reply != "" || !o.PartialsSeen {
		t.Errorf("result with a file: events %q (Reply %q, PartialsSeen %v), want %q", got, o.Reply, o.PartialsSeen, want)
	}

	p = agentProfile(t, "lines", map[string]string{"AGENT_LINES": mustJSON([]string{
		`{"type":"error","message":"boom"}`,
		`{"type":"partial","text":"x","attachments":[{"kind":"image","url":"data:,a"}]}`,
	})})
	run(t, context.Background(), p, Turn{Message: "x"}, Options{OnEvent: func(ev Event) {
		if ev.Kind == EventFiles {
			t.Errorf("files forwarded after an error: %+v", ev.Files)
		}
	}})
}

// TestTurnAttachmentFields: the turn line carries each attachment under
// the upstream names (filename, mime_type) and the older ones (name,
// mime); an unknown kind goes as "other" and a URL of another scheme not
// at all (D-ATT-1).
func TestTurnAttachmentFields(t *testing.T) {
	p := agentProfile(t, "echo", nil)
	log, logs := newLog()
	o := run(t, context.Background(), p, Turn{Message: "x", Attachments: []Attachment{
		{Kind: "image", URL: "file:///tmp/a.png", Name: "a.png", MIME: "image/png", Size: 3},
		{Kind: "sticker", URL: "https://example.com/s", Filename: "s.webp", MIMEType: "image/webp"},
		{Kind: "file", URL: "ftp://example.com/x"},
	}}, Options{Log: log})
	var rep echoReport
	if err := json.Unmarshal([]byte(o.Reply), &rep); err != nil {
		t.Fatalf("echo report: %v (%q)", err, o.Reply)
	}
	var turn struct {
		Attachments []map[string]any `json:"attachments"`
	}
	if err := json.Unmarshal([]byte(rep.Turn), &turn); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"kind": "image", "url": "file:///tmp/a.png", "filename": "a.png", "name": "a.png", "mime_type": "image/png", "mime": "image/png", "size": 3.0},
		{"kind": "other", "url": "https://example.com/s", "filename": "s.webp", "name": "s.webp", "mime_type": "image/webp", "mime": "image/webp"},
	}
	if diff := cmp.Diff(want, turn.Attachments); diff != "" {
		t.Errorf("turn attachments (-want +got):\n%s", diff)
	}
	for _, w := range []string{"unknown kind passed on as other", "unsupported scheme not passed on"} {
		if !strings.Contains(logs.String(), w) {
			t.Errorf("no warning %q in\n%s", w, logs)
		}
	}
}

// TestIsolated: a profile that runs its agent through `agentbridge
// isolate` is not on the bridge's host (its file:// paths are the
// container's); any other is.
func TestIsolated(t *testing.T) {
	for _, tt := range []struct {
		p    Profile
		want bool
	}{
		{Profile{Command: "agentbridge", Args: []string{"isolate", "docker", "--", "shim", "claude"}}, true},
		{Profile{Command: "/usr/local/bin/agentbridge", Args: []string{"isolate", "kubernetes"}}, true},
		{Profile{Command: "agentbridge", Args: []string{"shim", "claude"}}, false},
		{Profile{Command: "python3", Args: []string{"isolate"}}, false},
	} {
		if got := tt.p.Isolated(); got != tt.want {
			t.Errorf("%s %q: Isolated = %v, want %v", tt.p.Command, tt.p.Args, got, tt.want)
		}
	}
}
