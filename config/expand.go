package config

import (
	"errors"
	"slices"
	"strings"
)

// varRef is one ${NAME} reference and what the environment said about it.
type varRef struct {
	name  string
	set   bool
	empty bool
}

// expandVars replaces each ${NAME} in s with NAME's value. Only that exact
// form is special, so a "$" elsewhere in a secret stays literal (unlike
// os.ExpandEnv, which also rewrites $NAME). Unset variables expand to "";
// refs lists each variable once, in order of first use. Errors never quote s.
func expandVars(s string, lookup func(string) (string, bool)) (string, []varRef, error) {
	var b strings.Builder
	var refs []varRef
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), refs, nil
		}
		b.WriteString(s[:i])
		rest := s[i+2:]
		j := strings.IndexByte(rest, '}')
		if j < 0 {
			return "", nil, errors.New("unterminated ${ reference: write ${NAME}")
		}
		name := rest[:j]
		if !validVarName(name) {
			return "", nil, errors.New("malformed ${...} reference: a variable name is letters, digits and _, not starting with a digit")
		}
		v, ok := lookup(name)
		b.WriteString(v)
		if !slices.ContainsFunc(refs, func(r varRef) bool { return r.name == name }) {
			refs = append(refs, varRef{name: name, set: ok, empty: ok && v == ""})
		}
		s = rest[j+1:]
	}
}

func validVarName(name string) bool {
	if name == "" || (name[0] >= '0' && name[0] <= '9') {
		return false
	}
	for _, c := range []byte(name) {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
