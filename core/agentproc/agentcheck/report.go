package agentcheck

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Status is a rule's outcome in a report.
type Status string

// Statuses, worst first.
const (
	Fail         Status = "fail"          // a MUST or MUST NOT rule is broken
	Warn         Status = "warn"          // a SHOULD rule is not met
	Pass         Status = "pass"          // the probes exercised the rule and it held
	NotExercised Status = "not_exercised" // no probe made the agent do what the rule is about
)

// rank orders statuses from best to worst for merging findings.
func (s Status) rank() int {
	switch s {
	case Fail:
		return 3
	case Warn:
		return 2
	case Pass:
		return 1
	}
	return 0
}

// Result is one rule's line of a report.
type Result struct {
	ID       string   `json:"id"`
	Level    Level    `json:"level"`
	Status   Status   `json:"status"`
	Words    string   `json:"words"`
	Evidence []string `json:"evidence"`
}

// TurnRecord is what one probe turn sent and what the agent did, for the
// JSON report.
type TurnRecord struct {
	Name       string   `json:"name"`
	TurnLine   string   `json:"turn_line"`
	DurationMS int64    `json:"duration_ms"`
	ExitCode   int      `json:"exit_code"` // the agent's own; 128+N when a signal N ended it
	Signal     string   `json:"signal,omitempty"`
	Killed     string   `json:"killed,omitempty"` // why the checker SIGKILLed it, if it did
	Lines      []string `json:"lines"`            // stdout lines, each "+MSms " and the line (clipped)
	Answers    []string `json:"answers,omitempty"`
	Stderr     string   `json:"stderr,omitempty"`
}

// Report is the outcome of a check.
type Report struct {
	Profile    string       `json:"profile"`
	Command    []string     `json:"command"`
	Messages   []string     `json:"messages"`
	OK         bool         `json:"ok"` // no MUST broken: the command exits 0
	Counts     Counts       `json:"counts"`
	Rules      []Result     `json:"rules"`
	Turns      []TurnRecord `json:"turns"`
	DurationMS int64        `json:"duration_ms"`
}

// Counts are how many rules ended in each status.
type Counts struct {
	Pass         int `json:"pass"`
	Fail         int `json:"fail"`
	Warn         int `json:"warn"`
	NotExercised int `json:"not_exercised"`
}

// Failed returns the ids of the rules that failed, in report order.
func (r *Report) Failed() []string { return r.ids(Fail) }

// Warned returns the ids of the rules with warnings, in report order.
func (r *Report) Warned() []string { return r.ids(Warn) }

func (r *Report) ids(s Status) []string {
	var out []string
	for _, res := range r.Rules {
		if res.Status == s {
			out = append(out, res.ID)
		}
	}
	return out
}

// Result returns the line of rule id.
func (r *Report) Result(id string) (Result, bool) {
	for _, res := range r.Rules {
		if res.ID == id {
			return res, true
		}
	}
	return Result{}, false
}

// WriteJSON writes the report as one indented JSON object.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report for a terminal: one line per rule — status,
// id, the rule's words — with its evidence indented below, then a summary.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "agentbridge check %s (%s): %d probe turns in %.1fs\n\n",
		r.Profile, strings.Join(r.Command, " "), len(r.Turns), float64(r.DurationMS)/1000)
	for _, res := range r.Rules {
		label := map[Status]string{Fail: "FAIL", Warn: "warn", Pass: "pass", NotExercised: "not exercised"}[res.Status]
		fmt.Fprintf(&b, "%-13s  %-9s  %s: %s\n", label, res.ID, res.Level, res.Words)
		for _, e := range res.Evidence {
			fmt.Fprintf(&b, "%26s%s\n", "", e)
		}
	}
	verdict := "no MUST broken"
	if !r.OK {
		verdict = "MUST broken: " + strings.Join(r.Failed(), ", ")
	}
	fmt.Fprintf(&b, "\n%d pass, %d fail, %d warn, %d not exercised — %s\n",
		r.Counts.Pass, r.Counts.Fail, r.Counts.Warn, r.Counts.NotExercised, verdict)
	_, err := io.WriteString(w, b.String())
	return err
}
