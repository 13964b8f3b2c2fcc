// Package yamlnode holds what the bridge's two YAML decoders, for the
// config file (package config) and for agent profiles (core/agentproc),
// share: the wording of their errors (a wrong type, an unknown field with
// the known one it is closest to, a field set twice), how a node is named
// in an error, how a value is quoted without echoing a secret, and where a
// syntax error is.
package yamlnode

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Describe names what a node holds for a type error. Only short values are
// quoted: anything long enough to be a credential is never echoed.
func Describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.DocumentNode:
		return "a document"
	case yaml.ScalarNode:
		switch tag := n.ShortTag(); tag {
		case "!!str":
			return "the string " + Quote(n.Value)
		case "!!int":
			return "the integer " + Quote(n.Value)
		case "!!float":
			return "the number " + Quote(n.Value)
		case "!!bool":
			return "the boolean " + Quote(n.Value)
		case "!!null":
			return "nothing"
		default:
			return "a value tagged " + Quote(tag)
		}
	}
	return "an unknown node"
}

// Expected is the problem of a node that is not the want expected ("a
// list", "true or false").
func Expected(want string, n *yaml.Node) string {
	return "expected " + want + ", got " + Describe(n)
}

// UnknownField is the problem of a field name that is not among known,
// naming the known one it is likely a typo of.
func UnknownField(name string, known []string) string {
	best, bestDist := "", 3
	for _, k := range known {
		if dist := editDistance(name, k); dist < bestDist {
			best, bestDist = k, dist
		}
	}
	if best == "" {
		return "unknown field"
	}
	return "unknown field; did you mean " + best + "?"
}

// SetTwice is the problem of a field set a second time; first is the line
// of the first.
func SetTwice(first int) string {
	return fmt.Sprintf("set twice (first at line %d)", first)
}

// editDistance is the Levenshtein distance of two short strings.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64 // not a typo of a field name
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Quote quotes v for an error message unless it is long enough to be a
// secret pasted into the wrong field.
func Quote(v string) string {
	if n := utf8.RuneCountInString(v); n > 24 {
		return fmt.Sprintf("(%d characters, not shown)", n)
	}
	return strconv.Quote(v)
}

// SyntaxError splits a yaml.v3 parser error ("yaml: line N: problem") into
// its line and problem; line is 0 when the error names none.
func SyntaxError(err error) (line int, problem string) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		num, problem, ok := strings.Cut(rest, ": ")
		if line, err := strconv.Atoi(num); ok && err == nil && line > 0 {
			return line, problem
		}
	}
	return 0, msg
}
