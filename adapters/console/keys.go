package console

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge/core"
)

// Button keys: the letter shown and typed for each of a post's buttons
// ("[A]llow / [D]eny / Allow for this [s]ession"), and which button a typed
// line presses.

// keyLine shows p's buttons with their keys: "[A]llow / [D]eny".
func (p *post) keyLine() string {
	labels := make([]string, len(p.keys))
	for i, k := range p.keys {
		labels[i] = k.display(p.buttons[i].Label)
	}
	return strings.Join(labels, " / ")
}

// pressed returns the index of the button that text presses — its key,
// or a word core.ParseAnswer reads as the button's answer — or -1.
func (p *post) pressed(text string) int {
	for i, k := range p.keys {
		if strings.EqualFold(text, k.key) {
			return i
		}
	}
	if ans, ok := core.ParseAnswer(text); ok {
		for i, b := range p.buttons {
			if b.Answer == ans {
				return i
			}
		}
	}
	return -1
}

// buttonKey is the key that presses one button, and where it sits in the
// label (-1: not in it).
type buttonKey struct {
	key string
	pos int
}

// display shows label with its key marked: "[A]llow", or "✅ [1]" when the
// key is not a letter of the label.
func (k buttonKey) display(label string) string {
	if k.pos < 0 {
		return strings.TrimSpace(label + " [" + k.key + "]")
	}
	_, size := utf8.DecodeRuneInString(label[k.pos:])
	return label[:k.pos] + "[" + label[k.pos:k.pos+size] + "]" + label[k.pos+size:]
}

// buttonKeys picks a key per button: the first unused of the first letter
// of its first word, the first letter of its last word, any other letter of
// the label; failing all, a digit.
func buttonKeys(bs []core.Button) []buttonKey {
	used := make(map[string]bool)
	keys := make([]buttonKey, len(bs))
	for i, b := range bs {
		keys[i] = buttonKey{pos: -1}
		for _, pos := range keyCandidates(b.Label) {
			r, _ := utf8.DecodeRuneInString(b.Label[pos:])
			k := string(unicode.ToLower(r))
			if !used[k] {
				used[k] = true
				keys[i] = buttonKey{key: k, pos: pos}
				break
			}
		}
		for d := '1'; keys[i].key == "" && d <= '9'; d++ {
			if k := string(d); !used[k] {
				used[k] = true
				keys[i].key = k
			}
		}
	}
	return keys
}

// keyCandidates lists byte offsets of letters in label, in preference order.
func keyCandidates(label string) []int {
	var letters, wordFirst []int // every letter; first letter of each word
	inWord, seenInWord := false, false
	for i, r := range label {
		if unicode.IsSpace(r) {
			inWord = false
			continue
		}
		if !inWord {
			inWord, seenInWord = true, false
		}
		if unicode.IsLetter(r) {
			letters = append(letters, i)
			if !seenInWord {
				wordFirst = append(wordFirst, i)
				seenInWord = true
			}
		}
	}
	var out []int
	if len(wordFirst) > 0 {
		out = append(out, wordFirst[0], wordFirst[len(wordFirst)-1])
	}
	return append(out, letters...)
}
