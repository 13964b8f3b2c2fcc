package core

import "testing"

func TestParseAnswer(t *testing.T) {
	for line, want := range map[string]Answer{
		"a": AnswerAllow, "y": AnswerAllow, " Yes ": AnswerAllow, "ALLOW": AnswerAllow,
		"d": AnswerDeny, "n": AnswerDeny, "no": AnswerDeny, "Deny": AnswerDeny,
		"s": AnswerAllowSession, "session": AnswerAllowSession, "allow for this session": AnswerAllowSession,
	} {
		if got, ok := ParseAnswer(line); !ok || got != want {
			t.Errorf("ParseAnswer(%q) = %v, %v; want %v", line, got, ok, want)
		}
	}
	for _, line := range []string{"", "maybe", "yess", "a d", "/stop"} {
		if got, ok := ParseAnswer(line); ok {
			t.Errorf("ParseAnswer(%q) = %v, want no answer", line, got)
		}
	}
}
