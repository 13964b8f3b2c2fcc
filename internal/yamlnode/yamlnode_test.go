package yamlnode

import (
	"errors"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestDescribe(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"k: {a: 1}", "a mapping"},
		{"k: [1]", "a list"},
		{"k: 12", `the integer "12"`},
		{"k: 1.5", `the number "1.5"`},
		{"k: yes please", `the string "yes please"`},
		{"k: true", `the boolean "true"`},
		{"k: ~", "nothing"},
		{"k: !!binary aGk=", `a value tagged "!!binary"`},
		{"k: xoxb-2712345678-7712345678901-AbCdEfGh", "the string (38 characters, not shown)"},
	} {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(tc.src), &doc); err != nil {
			t.Fatal(err)
		}
		if got := Describe(doc.Content[0].Content[1]); got != tc.want {
			t.Errorf("Describe(%s) = %q, want %q", tc.src, got, tc.want)
		}
	}
}

func TestSyntaxError(t *testing.T) {
	var doc yaml.Node
	err := yaml.Unmarshal([]byte("a: 1\nb: 2\n\tc: 3\n"), &doc)
	if err == nil {
		t.Fatal("no syntax error")
	}
	line, problem := SyntaxError(err)
	if line != 2 || problem == "" || strings.HasPrefix(problem, "yaml:") {
		t.Errorf("SyntaxError(%v) = %d, %q; want line 2 and the problem alone", err, line, problem)
	}
	if line, problem := SyntaxError(errors.New("yaml: something odd")); line != 0 || problem != "something odd" {
		t.Errorf("without a line: %d, %q", line, problem)
	}
}

// The wording both decoders give: a misspelt field names the known one it
// is closest to (within two edits), a field set twice its first line.
func TestWording(t *testing.T) {
	known := []string{"queue_depth", "permission", "timeout_secs"}
	for _, tc := range []struct{ name, want string }{
		{"queue_dept", "unknown field; did you mean queue_depth?"},
		{"permision", "unknown field; did you mean permission?"},
		{"timeout", "unknown field"},
		{"colour", "unknown field"},
		{strings.Repeat("x", 100), "unknown field"},
	} {
		if got := UnknownField(tc.name, known); got != tc.want {
			t.Errorf("UnknownField(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := SetTwice(3); got != "set twice (first at line 3)" {
		t.Errorf("SetTwice = %q", got)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte("[1]"), &doc); err != nil {
		t.Fatal(err)
	}
	if got := Expected("a string", doc.Content[0]); got != "expected a string, got a list" {
		t.Errorf("Expected = %q", got)
	}
}
