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
