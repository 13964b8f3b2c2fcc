package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/core/outfile"
	"github.com/agentbridge/agentbridge/internal/termprompt"
	"github.com/agentbridge/agentbridge/internal/termtext"
	"github.com/agentbridge/agentbridge/profiles"
)

const runUsage = `usage: agentbridge run --profile PATH [--session-id ID] [--session-name NAME]
                       [--attach KIND=URL]... [--permission ask|allow|deny] [--save-dir DIR]
                       [--json] MESSAGE|-

Runs one AgentProc turn of the profile's agent. MESSAGE "-" reads the message
from stdin. Output partials stream to stdout (thinking to stderr), errors go
to stderr, and the exit status is the turn's (0, 1, 124, 130, 143, 127 when
the agent or the CLI behind a shim could not start, or the agent's own code).
Files the agent sends back are saved in --save-dir (never over an existing
file: name-1.ext, name-2.ext…), each named on stdout where it came.

flags:
`

// runAttachments collects repeated --attach KIND=URL flags.
type runAttachments []agentproc.Attachment

func (a *runAttachments) String() string { return fmt.Sprint(len(*a)) }

func (a *runAttachments) Set(v string) error {
	kind, url, ok := strings.Cut(v, "=")
	if !ok || kind == "" || url == "" {
		return fmt.Errorf("want KIND=URL, got %q", v)
	}
	*a = append(*a, agentproc.Attachment{Kind: kind, URL: url})
	return nil
}

// runJSON is the single object --json prints.
type runJSON struct {
	Reply     string           `json:"reply"`
	SessionID string           `json:"session_id"`
	Error     string           `json:"error"`
	ExitCode  int              `json:"exit_code"`
	Partials  []string         `json:"partials"`
	Usage     *agentproc.Usage `json:"usage"`
	// Truncated: the reply went past the reply limit (only when it did).
	Truncated bool `json:"truncated,omitempty"`
	// Files are the files the agent sent back, in order (only when it
	// sent any).
	Files []runFile `json:"files,omitempty"`
}

// runFile is a file the agent sent, as --json lists it: saved at Path, or
// not saved, Note saying why (a link, a refusal).
type runFile struct {
	Name     string `json:"name,omitempty"`
	Path     string `json:"path,omitempty"`
	Kind     string `json:"kind,omitempty"`
	MIMEType string `json:"mime_type,omitempty"`
	Size     int64  `json:"size,omitempty"`
	Note     string `json:"note,omitempty"`
}

// cmdRun runs one turn of an agent profile from the command line.
func cmdRun(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if err := closeToAgents(); err != nil {
		return err
	}
	fs := newFlagSet("run", runUsage, stderr)
	var (
		profilePath = fs.String("profile", "", "AgentProc profile YAML `path` (required)")
		sessionID   = fs.String("session-id", "", "agent session `id` to resume (default: a new session)")
		sessionName = fs.String("session-name", "", "session `name` passed to the agent (default \"default\")")
		permission  = fs.String("permission", "", "answer permission requests: `ask|allow|deny` (default ask on a terminal, deny otherwise)")
		asJSON      = fs.Bool("json", false, "print one JSON object with the outcome instead of the reply")
		saveDir     = fs.String("save-dir", ".", "`directory` to save the files the agent sends in")
		attachments runAttachments
	)
	fs.Var(&attachments, "attach", "attach a file as `KIND=URL` (repeatable)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *profilePath == "" {
		return usageErrorf("run: --profile is required")
	}
	if fs.NArg() != 1 {
		return usageErrorf("run: want exactly one MESSAGE (or - for stdin), got %d arguments", fs.NArg())
	}
	mode := *permission
	// denial tells the agent why a request was denied without asking.
	denial := "denied by agentbridge run --permission deny"
	if mode == "" {
		mode = "deny"
		denial = "denied: agentbridge run asks only on a terminal (--permission allow or ask changes that)"
		if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			mode = "ask"
		}
	}
	if mode != "ask" && mode != "allow" && mode != "deny" {
		return usageErrorf("run: --permission must be ask, allow or deny, got %q", mode)
	}
	message := fs.Arg(0)
	if message == "-" {
		if mode == "ask" && *permission == "ask" {
			return usageErrorf("run: --permission ask needs stdin for answers, so the message cannot come from stdin")
		}
		b, err := io.ReadAll(stdin)
		if err != nil {
			return fmt.Errorf("run: read message from stdin: %w", err)
		}
		message = strings.TrimSuffix(string(b), "\n")
		if mode == "ask" { // stdin is used up: nothing left to ask on
			mode = "deny"
			denial = "denied: the message came on stdin, so no one is there to ask"
		}
	}
	turn := agentproc.Turn{Message: message, SessionID: *sessionID, SessionName: *sessionName, Attachments: attachments}
	if turn.Message == "" && len(turn.Attachments) == 0 {
		return usageErrorf("run: empty turn: give a message or an --attach")
	}
	prof, err := profiles.Open(*profilePath, demoState())
	if err != nil {
		return usageErrorf("run: %v", err)
	}
	// Protocol warnings (malformed lines, a changed session id) help
	// whoever runs a profile by hand; the spec's rule ids are for the
	// bridge's logs, not this terminal.
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == "rule" {
				return slog.Attr{}
			}
			return a
		}}))

	// Ctrl-C cancels main's ctx; the agent gets the stop sequence and the
	// turn ends as 130 (D-STOP-1).
	turnCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancel(nil)
	stopInterrupt := context.AfterFunc(ctx, func() { cancel(agentproc.ErrInterrupted) })
	defer stopInterrupt()

	out := newRunOutput(stdout, stderr, *asJSON)
	files, err := newRunFiles(prof, turn, *saveDir)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	defer files.close()
	var prompter *termprompt.Prompter
	if mode == "ask" {
		prompter = termprompt.New(stdin, stderr)
		defer prompter.Close()
	}
	opts := agentproc.Options{
		Log:             log,
		CollectPartials: *asJSON,
		MaxReplyBytes:   agentproc.DefaultMaxReplyBytes, // as serve's and chat's replies
		OnEvent: func(e agentproc.Event) {
			switch e.Kind {
			case agentproc.EventPartial:
				out.partial(e.Role, e.Text)
			case agentproc.EventFiles:
				for _, line := range files.save(e.Files) {
					out.partial(core.RoleOutput, "\n"+line+"\n")
				}
			case agentproc.EventPermission:
				switch mode {
				case "allow":
					_ = e.Request.Respond(agentproc.Decision{Allow: true})
				case "deny":
					_ = e.Request.Respond(agentproc.Decision{Message: denial})
				case "ask":
					out.flush() // what the agent said before asking comes first
					prompter.Ask(e.Request)
				}
			}
		},
	}
	o, err := agentproc.Run(turnCtx, prof, turn, opts)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	out.finish()
	if failure := o.Failure(); failure != "" {
		fmt.Fprintln(stderr, "agentbridge: turn failed:", termtext.Visible(failure))
	}
	if *asJSON {
		j := runJSON{Reply: o.Reply, SessionID: o.SessionID, Error: o.Error, ExitCode: runStatus(o), Partials: o.Partials, Usage: o.Usage, Truncated: o.Truncated, Files: files.saved}
		if j.Partials == nil {
			j.Partials = []string{}
		}
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(j); err != nil {
			return fmt.Errorf("run: write json: %w", err)
		}
	} else {
		if reply := termtext.Visible(o.Reply); reply != "" {
			fmt.Fprint(stdout, reply)
			if !strings.HasSuffix(reply, "\n") {
				fmt.Fprintln(stdout)
			}
		}
		if cut := o.Truncation(); cut != "" {
			fmt.Fprintln(stdout, cut) // the reply's end, as in a chat
		}
		if o.SessionID != "" {
			fmt.Fprintln(stderr, "session:", termtext.Visible(o.SessionID))
		}
	}
	if code := runStatus(o); code != 0 {
		return exitCode(code)
	}
	return nil
}

// runStatus is run's exit status for a turn: the turn's (P-EXIT-1), except
// that an agent which reported an error and exited 127 — a shim whose CLI
// is not installed, or any agent that could not start what it runs — makes
// it 127, "could not start", as an agent that could not start itself does.
func runStatus(o agentproc.Outcome) int {
	if o.ExitCode == 1 && o.Errored && o.AgentExit == 127 {
		return 127
	}
	return o.ExitCode
}

// runOutput writes streamed partials: output to stdout, other roles (e.g.
// thinking) to stderr marked with their role. Stdout is buffered and
// flushed flushDelay after the first unflushed write: an agent streaming a
// million tiny partials then costs a few hundred writes, not a million,
// while a person watching sees no lag.
type runOutput struct {
	stdout, stderr io.Writer
	json           bool
	mu             sync.Mutex
	buf            *bufio.Writer // over stdout
	flushing       *time.Timer   // pending flush, nil when buf is clean
	lastRole       string        // role of the last chunk written, "" before any
	stdoutOpen     bool          // stdout has a chunk without its final newline
	stderrOpen     bool
}

const flushDelay = 10 * time.Millisecond

func newRunOutput(stdout, stderr io.Writer, asJSON bool) *runOutput {
	return &runOutput{stdout: stdout, stderr: stderr, json: asJSON, buf: bufio.NewWriterSize(stdout, 64<<10)}
}

func (w *runOutput) partial(role, text string) {
	if w.json {
		return // --json prints only the final object
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	// Text reaches a terminal or a plain file: its controls are shown,
	// not obeyed (--json keeps them, escaped, in the final object).
	text = termtext.Visible(text)
	if role == core.RoleOutput {
		w.endStderr()
		w.buf.WriteString(text)
		if w.flushing == nil {
			w.flushing = time.AfterFunc(flushDelay, w.flush)
		}
		w.stdoutOpen = text != "" && !strings.HasSuffix(text, "\n") || (w.stdoutOpen && text == "")
	} else {
		w.flushLocked() // keep stdout and stderr in order on a terminal
		if role != w.lastRole {
			w.endStderr()
			fmt.Fprintf(w.stderr, "[%s] ", termtext.Visible(role))
		}
		fmt.Fprint(w.stderr, text)
		w.stderrOpen = true
	}
	w.lastRole = role
}

func (w *runOutput) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
}

func (w *runOutput) flushLocked() {
	if w.flushing != nil {
		w.flushing.Stop()
		w.flushing = nil
	}
	w.buf.Flush()
}

func (w *runOutput) endStderr() {
	if w.stderrOpen {
		fmt.Fprintln(w.stderr)
		w.stderrOpen = false
	}
}

// finish ends the streamed lines so what follows starts on its own line.
func (w *runOutput) finish() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.endStderr()
	if w.stdoutOpen {
		w.buf.WriteString("\n")
		w.stdoutOpen = false
	}
	w.flushLocked()
}

// runFiles checks and saves the files a run's agent sends back
// (spec/protocol.md X-FILE-1), as the bridge checks them for a chat.
type runFiles struct {
	dir, spool string
	check      *outfile.Turn
	saved      []runFile
}

func newRunFiles(prof *agentproc.Profile, turn agentproc.Turn, dir string) (*runFiles, error) {
	spool, err := os.MkdirTemp("", "agentbridge-run-")
	if err != nil {
		return nil, fmt.Errorf("spool directory: %w", err)
	}
	return &runFiles{dir: dir, spool: spool, check: outfile.New(outfile.Policy{
		Platform:  "agentbridge run",
		HostFiles: !prof.Isolated(),
		Agent:     outfile.AccountOf(prof),
		Roots:     []string{prof.WorkDir(turn)},
		Private:   []string{prof.Path},
		Spool:     spool,
	})}, nil
}

// save checks and saves atts and returns the lines to show for them.
func (r *runFiles) save(atts []agentproc.Attachment) []string {
	var lines []string
	for _, a := range atts {
		res := r.check.Check(a)
		if res.File == nil {
			if res.Line != "" {
				lines = append(lines, res.Line)
				r.saved = append(r.saved, runFile{Name: outfile.Name(a.Filename), Kind: a.Kind, Note: res.Line})
			}
			continue
		}
		f := *res.File
		path, err := outfile.Save(r.dir, f)
		os.Remove(f.Path)
		if err != nil {
			line := "📎 " + f.Name + " could not be saved: " + err.Error()
			lines = append(lines, line)
			r.saved = append(r.saved, runFile{Name: f.Name, Kind: f.Kind, Note: line})
			continue
		}
		lines = append(lines, "📎 "+f.Name+" saved: "+path)
		r.saved = append(r.saved, runFile{Name: f.Name, Path: path, Kind: f.Kind, MIMEType: f.MIME, Size: f.Size})
	}
	return lines
}

func (r *runFiles) close() { os.RemoveAll(r.spool) }
