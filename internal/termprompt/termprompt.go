// Package termprompt asks a person at a terminal to allow or deny an
// agent's permission requests, one at a time (agentbridge run).
package termprompt

import (
	"bufio"
	"fmt"
	"io"
	"sync"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/internal/termtext"
)

// Prompter asks on the terminal about each permission request, one at a
// time. Its goroutine reads answers from stdin; Close stops it.
type Prompter struct {
	stderr   io.Writer
	requests chan *agentproc.PermissionRequest
	lines    chan string
	done     chan struct{}
	wg       sync.WaitGroup
}

// New returns a prompter reading answers from stdin and asking on stderr.
func New(stdin io.Reader, stderr io.Writer) *Prompter {
	p := &Prompter{
		stderr:   stderr,
		requests: make(chan *agentproc.PermissionRequest, 16),
		lines:    make(chan string),
		done:     make(chan struct{}),
	}
	// The line reader may stay blocked on a terminal read after the turn;
	// it ends with the process (run exits right after). A reader that
	// reaches EOF ends by itself.
	go func() {
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			select {
			case p.lines <- sc.Text():
			case <-p.done:
				return
			}
		}
		close(p.lines)
	}()
	p.wg.Go(p.loop)
	return p
}

// Ask queues a request; it never blocks the runner's event goroutine.
func (p *Prompter) Ask(r *agentproc.PermissionRequest) {
	select {
	case p.requests <- r:
	default:
		_ = r.Respond(agentproc.Decision{Message: "too many permission requests at once"})
	}
}

func (p *Prompter) loop() {
	granted := map[string]bool{} // tools allowed for the rest of the run
	for {
		var r *agentproc.PermissionRequest
		select {
		case r = <-p.requests:
		case <-p.done:
			return
		}
		select {
		case <-r.Done(): // answered meanwhile (timeout, turn end)
			continue
		default:
		}
		if granted[r.Tool] {
			_ = r.Respond(agentproc.Decision{Allow: true})
			fmt.Fprintf(p.stderr, "\npermission: %s allowed (allowed for this session earlier)\n", termtext.Visible(r.Tool))
			continue
		}
		desc := r.Description
		if desc != "" {
			desc = " — " + desc
		}
		// The agent wrote all three: shown, never obeyed, so it cannot
		// erase the question or dress it up as another.
		fmt.Fprintf(p.stderr, "\npermission: %s\n  input: %s\n%s? ", termtext.Visible(r.Tool+desc), termtext.Visible(string(r.Input)), choices)
		if !p.answer(r, granted) {
			return
		}
	}
}

// choices is the question, in the words core.ParseAnswer reads, as the
// terminal chat shows it.
const choices = "[A]llow / [D]eny / Allow for this [s]ession (or y / n)"

// answer reads lines until one is an answer to r, asking again after any
// other, and responds. It reports false when the prompter is closing.
func (p *Prompter) answer(r *agentproc.PermissionRequest, granted map[string]bool) bool {
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				if err := r.Respond(agentproc.Decision{Message: "denied: no answer (end of input)"}); err == nil {
					fmt.Fprintln(p.stderr, "\n(denied: end of input)")
				}
				return true
			}
			ans, known := core.ParseAnswer(line)
			if !known {
				fmt.Fprintf(p.stderr, "Please answer %s: ", choices)
				continue
			}
			d := agentproc.Decision{Allow: true}
			switch ans {
			case core.AnswerDeny:
				d = agentproc.Decision{Message: "denied by the user"}
			case core.AnswerAllowSession:
				// A run is one turn of one session: the rest of it.
				granted[r.Tool] = true
			}
			if err := r.Respond(d); err != nil {
				fmt.Fprintln(p.stderr, "(already answered:", describeAnswer(r)+")")
			}
			return true
		case <-r.Done():
			fmt.Fprintln(p.stderr, "\n(", describeAnswer(r), ")")
			return true
		case <-p.done:
			return false
		}
	}
}

// Close stops asking; requests not yet answered are left to their timeout
// or the turn's end.
func (p *Prompter) Close() {
	close(p.done)
	p.wg.Wait()
}

func describeAnswer(r *agentproc.PermissionRequest) string {
	d, src := r.Answer()
	verdict := "denied"
	if d.Allow {
		verdict = "allowed"
	}
	switch src {
	case agentproc.AnsweredByPermissionTimeout:
		return verdict + ": no answer in time"
	case agentproc.AnsweredByTurnEnd:
		return verdict + ": the turn ended"
	}
	return verdict
}
