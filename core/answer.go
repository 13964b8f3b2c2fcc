package core

import "strings"

// Answer is what a person decides about a permission request. Platforms
// where people type rather than click (the terminal chat, agentbridge run)
// read it from a line with ParseAnswer, so every typed prompt accepts the
// same words.
type Answer int

// Answers. The zero value is no answer.
const (
	AnswerAllow        Answer = iota + 1 // allow this request
	AnswerDeny                           // deny this request
	AnswerAllowSession                   // allow this tool for the rest of the session
)

// answerWords are the typed forms of each answer, the first one the key
// shown in prompts.
var answerWords = map[Answer][]string{
	AnswerAllow:        {"a", "y", "yes", "allow"},
	AnswerDeny:         {"d", "n", "no", "deny"},
	AnswerAllowSession: {"s", "session", "allow for this session"},
}

// ParseAnswer reads a typed answer, ignoring case and surrounding space:
// a, y, yes or allow allows; d, n, no or deny denies; s, session or "allow
// for this session" allows for the session. Anything else is no answer.
func ParseAnswer(line string) (Answer, bool) {
	line = strings.ToLower(strings.TrimSpace(line))
	for a, words := range answerWords {
		for _, w := range words {
			if line == w {
				return a, true
			}
		}
	}
	return 0, false
}
