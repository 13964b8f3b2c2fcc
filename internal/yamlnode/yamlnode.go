// Package yamlnode holds what the bridge's two YAML decoders, for the
// config file (package config) and for agent profiles (core/agentproc),
// share: how a node is named in an error, how a value is quoted without
// echoing a secret, and where a syntax error is.
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
