package agentproc

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// scanSeeds are lines around the fast path's edges: escapes, duplicates,
// wrong types, invalid UTF-8, whitespace, trailing bytes.
var scanSeeds = []string{
	`{"type":"partial","text":"hello"}`,
	`{"type":"partial","text":"chunk 17 "}`,
	` { "type" : "partial" , "text" : "sp" } `,
	"{\t\"type\":\"partial\",\"text\":\"tab\"}\r",
	`{"text":"first","type":"partial"}`,
	`{"type":"partial","text":"a\nb\"c\\d\/e\tf\bg\fh\ri"}`,
	`{"type":"partial","text":"\u00e9\ud83d\ude80 \ud800 \udc00x \ud800\u0041"}`,
	`{"type":"p\u0061rtial","text":"escaped type"}`,
	`{"type":"partial","text":"x","role":"thinking","session_id":"s-1"}`,
	`{"type":"partial","text":"x","role":"output"}`,
	`{"type":"partial","text":"x","role":"c\u0068at"}`,
	`{"type":"partial","text":"x","role":""}`,
	`{"type":"partial","text":"x","role":42}`,
	`{"type":"partial","text":"x","session_id":""}`,
	`{"type":"partial","text":"x","session_id":"s\u002f1"}`,
	`{"type":"partial","text":"one","text":"two"}`,
	`{"type":"partial","type":"result","text":"dup type"}`,
	`{"type":"partial","text":42}`,
	`{"type":"partial","text":null}`,
	`{"type":"partial","text":"x",}`,
	`{"type":"partial","text":"x"}x`,
	`{"type":"partial","text":"x"}{}`,
	`{"type":"partial","text":"x"`,
	`{"type":"partial","text":"x\`,
	`{"type":"partial","text":"x\q"}`,
	`{"type":"partial","text":"x\u12"}`,
	"{\"type\":\"partial\",\"text\":\"ctl\x01\"}",
	"{\"type\":\"partial\",\"text\":\"bad \xff\xfe utf8 \xc3\"}",
	"{\"type\":\"partial\",\"text\":\"ok é 你好 🚀\x7f\"}",
	"{\"type\":\"partial\",\"text\":\"x\",\"session_id\":\"s-\xff\"}",
	"{\"type\":\"partial\",\"t\xc3\xa9xt\":\"x\"}",
	`{"type":"partial","Text":"case"}`,
	`{"TYPE":"partial","text":"case"}`,
	`{"type":"partial","extra":"x"}`,
	`{"type":"result","text":"done","session_id":"s1"}`,
	`{"type":"result","text":"done","usage":{"input_tokens":3}}`,
	`{"type":"result"}`,
	`{"type":"error","message":"boom","text":"ignored"}`,
	`{"type":"error","message":true}`,
	`{"type":"permission_request","request_id":"1","tool_name":"Bash","input":{}}`,
	`{"type":"session","id":"abc"}`,
	`{"type":"text","text":"old"}`,
	`{"type":""}`,
	`{}`,
	`{ }`,
	`null`,
	`"partial"`,
	``,
	`{"type":"partial","message":"m","text":"t"}`,
}

// FuzzScanLineMatchesClassify is the differential test of the fast path:
// whenever scanLine accepts a line, Classify must say the same about it
// (P-OUT-1, P-OUT-2, P-PART-2), with or without a previous session id.
func FuzzScanLineMatchesClassify(f *testing.F) {
	for _, line := range conformanceLines(f) {
		f.Add([]byte(line), "")
	}
	for _, s := range scanSeeds {
		f.Add([]byte(s), "")
		f.Add([]byte(s), "s-1")
	}
	f.Fuzz(func(t *testing.T, line []byte, prev string) {
		s, ok := scanLine(line, prev)
		if !ok {
			return
		}
		l := Classify(line)
		got := Line{Kind: s.kind, Value: s.text, SessionID: s.sessionID}
		if s.kind == KindPartial {
			got.Role = s.role
		}
		want := Line{Kind: l.Kind, Value: l.Value, Role: l.Role, SessionID: l.SessionID}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("scanLine(%q) differs from Classify (-classify +scan):\n%s", line, diff)
		}
		if l.Usage != nil {
			t.Fatalf("scanLine accepted %q, which has a usage object", line)
		}
	})
}

// TestScanLineFastPath pins which lines take the fast path, so a change
// that quietly sends every partial to Classify shows up here and not only
// in the benchmarks.
func TestScanLineFastPath(t *testing.T) {
	fast := []string{
		`{"type":"partial","text":"hello"}`,
		` { "type" : "partial" , "text" : "sp" } `,
		`{"type":"partial","text":"a\nb\"c"}`,
		`{"type":"partial","text":"\u00e9"}`,
		`{"type":"partial","text":"x","role":"thinking","session_id":"s-1"}`,
		`{"type":"result","text":"done"}`,
		`{"type":"error","message":"boom"}`,
		"{\"type\":\"partial\",\"text\":\"bad \xff\"}",
	}
	slow := []string{
		`{"type":"partial","text":"one","text":"two"}`,
		`{"type":"partial","text":42}`,
		`{"type":"partial","extra":"x"}`,
		`{"type":"result","usage":{}}`,
		`{"type":"permission_request","request_id":"1","tool_name":"Bash","input":{}}`,
		`{"type":"session","id":"abc"}`,
		`{"type":"partial","text":"x",}`,
		`{"type":"partial","text":"x"}x`,
		`{}`,
		``,
	}
	for _, l := range fast {
		if _, ok := scanLine([]byte(l), ""); !ok {
			t.Errorf("scanLine(%q) took the slow path", l)
		}
	}
	for _, l := range slow {
		if _, ok := scanLine([]byte(l), ""); ok {
			t.Errorf("scanLine(%q) took the fast path", l)
		}
	}
}

// TestScanLineReusesSessionID checks that a repeated session id is not a
// new string per line.
func TestScanLineReusesSessionID(t *testing.T) {
	line := []byte(`{"type":"partial","text":"hello","session_id":"sess-1"}`)
	prev := "sess-1"
	allocs := testing.AllocsPerRun(100, func() {
		s, ok := scanLine(line, prev)
		if !ok || s.sessionID != prev {
			t.Fatalf("scanLine = %+v, %v", s, ok)
		}
	})
	if allocs > 1 { // the text
		t.Errorf("scanLine allocated %v times per line, want 1 (the text)", allocs)
	}
}
