package engine

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/agentproc"
	"github.com/agentbridge/agentbridge/core/render"
)

// Button choices, appended to a prompt's token in Button.Value.
const (
	choiceAllow   = "a"
	choiceDeny    = "d"
	choiceSession = "s"
)

// previewRunes bounds the tool input shown in a prompt.
const previewRunes = 600

// flushWait bounds how long a prompt waits for the reply's pending text
// (what the agent said before asking) to be shown above it.
const flushWait = 3 * time.Second

// prompt is a permission request shown with buttons, waiting for an answer.
type prompt struct {
	req     *agentproc.PermissionRequest
	turn    *turn
	session string
	ref     core.MessageRef
	text    string // the prompt as sent, without buttons

	mu      sync.Mutex
	outcome string // who decided what (Markdown); set once, by the first accepted press
	told    bool   // the prompt already says outcome (a press edits it before the agent hears)
	settled bool   // ask has seen the request answered: no press may claim it any more
	// shown is closed once ask knows whether the prompt was posted, and
	// ref (its message) if it was: a press is matched against ref only
	// then, so none is taken while the message is still unknown.
	shown chan struct{}
	// pressed is closed once whoever claimed outcome (a press, or
	// DenyPrompts) has done its edit of the prompt, so that ask's own edit
	// (a timeout that won the race to answer) lands after it, never under it.
	pressed chan struct{}
}

// ask shows req as a prompt and waits until it is answered by anyone: a
// press, the runner's permission timeout, or the end of the turn. It then
// edits the prompt to say what happened and removes its buttons. The
// reply's text so far is shown first, so the prompt comes after what the
// agent said before asking.
func (e *Engine) ask(ctx context.Context, t *turn, session string, req *agentproc.PermissionRequest) {
	log := e.log.With("conv", t.msg.Conv, "turn", t.id, "tool", req.Tool, "request", req.ID)
	if e.granted(ctx, t, session, req) {
		return
	}

	e.mu.Lock()
	why, unanswerable := e.unanswerable[t.plat.Name()]
	e.mu.Unlock()
	if unanswerable {
		req.Respond(agentproc.Decision{Message: why})
		e.opts.Observer.Permission(t.plat.Name(), "denied")
		return
	}

	lim := t.plat.Limits()
	token := newToken()
	text := promptText(req, t.requester(), lim)
	buttons := []core.Button{
		{Label: "Allow", Value: token + ":" + choiceAllow, Style: core.StylePrimary, Answer: core.AnswerAllow},
		{Label: "Deny", Value: token + ":" + choiceDeny, Style: core.StyleDanger, Answer: core.AnswerDeny},
		{Label: "Allow for this session", Value: token + ":" + choiceSession, Answer: core.AnswerAllowSession},
	}
	pr := &prompt{req: req, turn: t, session: session, text: text, shown: make(chan struct{}), pressed: make(chan struct{})}
	e.mu.Lock()
	e.prompts[token] = pr
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.prompts, token)
		e.mu.Unlock()
	}()

	// After the reply's text so far; its placeholder does not say
	// "thinking…" while the agent waits for a person.
	ref, closed, err := t.pres.Ask(ctx, core.Post{Text: text, Buttons: buttons, ReplyTo: t.msg.ID}, flushWait)
	defer closed()
	pr.mu.Lock()
	pr.ref = ref
	pr.mu.Unlock()
	close(pr.shown)
	if err != nil {
		log.ErrorContext(ctx, "permission prompt could not be shown; denying", "err", err)
		req.Respond(agentproc.Decision{Message: "the bridge could not show the permission prompt to the user"})
		return
	}
	shown := core.Shown{Ref: ref, Text: text}
	t.journal.prompt(shown, true)
	defer t.journal.prompt(shown, false)

	<-req.Done()
	d, source := req.Answer()
	pr.mu.Lock()
	pr.settled = true
	claimed := pr.outcome != ""
	pr.mu.Unlock()
	if claimed {
		<-pr.pressed
	}
	pr.mu.Lock()
	outcome, told := pr.outcome, pr.told
	pr.mu.Unlock()
	result := "denied"
	switch {
	case source == agentproc.AnsweredByPermissionTimeout:
		result = "timeout"
	case source == agentproc.AnsweredByTurnEnd:
		result = "turn_ended"
	case d.Allow:
		result = "allowed"
	}
	e.opts.Observer.Permission(t.plat.Name(), result)
	switch {
	case source == agentproc.AnsweredByPermissionTimeout:
		outcome = "⌛ No answer in time — denied."
	case source == agentproc.AnsweredByTurnEnd:
		outcome = "— The turn ended before an answer."
	case outcome == "" && d.Allow:
		outcome = "✅ Allowed."
	case outcome == "":
		outcome = "❌ Denied."
	}
	if told && source == agentproc.AnsweredByCaller {
		return
	}
	e.showOutcome(ctx, pr, ref, outcome)
}

// granted answers req with allow when the person whose message started t
// allowed its tool for this session before (D-PERM-3; a grant covers the
// requests of whoever made it, nobody else's), and says so in the reply,
// so nothing runs unseen. It reports whether it answered.
func (e *Engine) granted(ctx context.Context, t *turn, session string, req *agentproc.PermissionRequest) bool {
	who := t.msg.From
	if t.sub != nil || who.ID == "" {
		return false // nobody's message: only an approver may allow, each time
	}
	log := e.log.With("conv", t.msg.Conv, "turn", t.id, "tool", req.Tool, "request", req.ID)
	ok, err := e.store.Granted(ctx, t.key, session, who.ID, req.Tool)
	if err != nil {
		log.WarnContext(ctx, "grant lookup failed; asking", "err", err)
	}
	if !ok {
		return false
	}
	// Before the answer, so it comes before what the agent says next.
	t.pres.Partial(core.RoleOutput, "\n\n"+autoAllowed(req.Tool, who)+"\n\n")
	if err := req.Respond(agentproc.Decision{Allow: true}); err != nil && !errors.Is(err, agentproc.ErrAlreadyAnswered) {
		log.WarnContext(ctx, "auto-allow failed", "err", err)
	}
	log.InfoContext(ctx, "permission auto-allowed for this session", "user", who.ID)
	e.opts.Observer.Permission(t.plat.Name(), "auto_allowed")
	return true
}

// autoAllowed is the reply's line (Markdown) for a request allowed by
// who's grant.
func autoAllowed(tool string, who core.User) string {
	return "✅ " + render.EscapeMarkdown(tool) + " — allowed for this session by " + nameMD(who)
}

// showOutcome edits the prompt to say how it was answered, without its
// buttons.
func (e *Engine) showOutcome(ctx context.Context, pr *prompt, ref core.MessageRef, outcome string) {
	t := pr.turn
	final := pr.text + "\n\n" + render.Render(outcome, t.plat.Limits().Dialect)
	if err := t.pres.Amend(ctx, ref, core.Post{Text: final}); err != nil {
		e.log.WarnContext(ctx, "permission prompt could not be updated", "conv", t.msg.Conv, "turn", t.id, "err", err)
	}
}

func newToken() string {
	var b [12]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// promptText renders the prompt for the platform: tool, description, and an
// escaped, truncated preview of the input.
func promptText(req *agentproc.PermissionRequest, requester string, lim core.Limits) string {
	var md strings.Builder
	fmt.Fprintf(&md, "🔐 **Permission needed:** %s", render.EscapeMarkdown(req.Tool))
	if req.Description != "" {
		fmt.Fprintf(&md, "\n\n%s", render.EscapeMarkdown(req.Description))
	}
	if preview := inputPreview(req.Input); preview != "" {
		// A fence of four backticks cannot be closed by the preview, which
		// has no run of four (see inputPreview).
		fmt.Fprintf(&md, "\n\n````\n%s\n````", preview)
	}
	fmt.Fprintf(&md, "\n\n%s", render.EscapeMarkdown(requester))
	max := lim.MaxText
	if max <= 0 {
		max = 4000
	}
	parts := render.Split(md.String(), lim.Dialect, max-200)
	if len(parts) == 0 {
		return render.EscapeMarkdown(req.Tool)
	}
	return parts[0]
}

func inputPreview(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "{}" || string(raw) == "null" {
		return ""
	}
	// Re-encode without HTML escaping: agents written in Go send ">" as
	// "\u003e", which a person should not have to read.
	var v any
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if json.Unmarshal(raw, &v) != nil || enc.Encode(v) != nil {
		buf.Reset()
		buf.Write(raw)
	}
	s := strings.TrimSpace(buf.String())
	s = strings.ReplaceAll(s, "````", "`\u200b`\u200b`\u200b`")
	if r := []rune(s); len(r) > previewRunes {
		s = string(r[:previewRunes]) + "\n… (truncated)"
	}
	return s
}

// textNotWaiting answers a press on a prompt that is not waiting (here).
const textNotWaiting = "This request is no longer waiting for an answer."

// on reports whether press a, handed over by p, was made on pr: on the
// prompt's message in its conversation's channel, through the
// platform account that showed it. A token is only as secret as the
// buttons that carry it, so a press carrying it from anywhere else is not
// an answer.
func (pr *prompt) on(ctx context.Context, p core.Platform, a core.Action) bool {
	c := pr.turn.msg.Conv
	if p.Name() != pr.turn.plat.Name() || a.Conv.Platform != c.Platform || a.Conv.Workspace != c.Workspace || a.Conv.Channel != c.Channel {
		return false
	}
	// A press on the prompt comes after its message exists, so ask is at
	// most a moment from recording it; wait for that rather than take a
	// press on any message.
	wait := time.NewTimer(pressWait)
	defer wait.Stop()
	select {
	case <-pr.shown:
	case <-wait.C:
		return false
	case <-ctx.Done():
		return false
	}
	pr.mu.Lock()
	ref := pr.ref
	pr.mu.Unlock()
	return ref.ID != "" && a.Ref.ID == ref.ID
}

// pressWait bounds how long a press waits for ask to record the prompt's
// message (see on).
const pressWait = 10 * time.Second

// handleAction answers a button press: of a permission prompt, an /agent
// menu or a ↻ Retry — the one place a button's value is routed.
func (e *Engine) handleAction(ctx context.Context, p core.Platform, a core.Action) {
	if name, ok := strings.CutPrefix(a.Value, agentButton); ok {
		e.agentPress(ctx, p, a, name)
		return
	}
	if id, ok := strings.CutPrefix(a.Value, nextButton); ok {
		e.nextPress(ctx, p, a, id)
		return
	}
	ps := e.cfg().platform(p.Name())
	to := core.Message{Conv: a.Conv}
	answer := func(text string) { e.pressAnswer(ctx, p, a, text) }
	if token, ok := strings.CutPrefix(a.Value, retryButton); ok {
		e.retryPress(ctx, p, a, token, answer)
		return
	}
	token, choice, _ := strings.Cut(a.Value, ":")
	e.mu.Lock()
	pr := e.prompts[token]
	e.mu.Unlock()
	if pr != nil && !pr.on(ctx, p, a) {
		// A prompt's token pressed elsewhere (another conversation or
		// platform account) answers nothing, and the presser learns no
		// more than for an unknown token, once in a while.
		e.log.WarnContext(ctx, "permission press from outside the prompt's conversation refused", "conv", a.Conv, "user", a.From.ID, "prompt_conv", pr.turn.msg.Conv)
		e.refuse(ctx, p, a.Reply, to, a.From.ID, textNotWaiting)
		return
	}
	if pr == nil {
		answer(textNotWaiting)
		return
	}
	t := pr.turn
	// D-PERM-2: only the requester or an approver may answer; a submitted
	// turn has no requester.
	requester := t.sub == nil && a.From.ID == t.msg.From.ID
	if !requester && !ps.approver(a.From.ID) {
		e.log.InfoContext(ctx, "permission press refused", "conv", a.Conv, "user", a.From.ID)
		answer("Only the person who asked, or an approver, can answer this request.")
		return
	}
	who := nameMD(a.From)
	var d agentproc.Decision
	var outcome string
	switch choice {
	case choiceAllow:
		d, outcome = agentproc.Decision{Allow: true}, "✅ Allowed by "+who+"."
	case choiceSession:
		// The grant is the presser's: it covers their later requests.
		if err := e.store.Grant(ctx, t.key, pr.session, a.From.ID, pr.req.Tool); err != nil {
			e.log.ErrorContext(ctx, "grant failed", "err", err)
			answer("⚠️ Could not remember the approval (storage error); allowing just this once.")
		}
		d, outcome = agentproc.Decision{Allow: true}, "✅ Allowed for this session by "+who+"."
	case choiceDeny:
		d, outcome = agentproc.Decision{Message: "denied by " + displayName(a.From)}, "❌ Denied by "+who+"."
	default:
		answer("Unknown choice.")
		return
	}
	pr.mu.Lock()
	claimed, settled := pr.outcome != "", pr.settled
	if !claimed && !settled {
		pr.outcome = outcome
	}
	ref := pr.ref
	pr.mu.Unlock()
	if settled && !claimed {
		answer("Too late: this request was already closed.")
		return
	}
	if claimed {
		answer("This request was already answered.")
		return
	}
	// The outcome goes on the prompt before the agent hears it, so what it
	// says next comes out after it (on accepted the press on ref, so it is
	// known).
	e.showOutcome(ctx, pr, ref, outcome)
	pr.mu.Lock()
	pr.told = true
	pr.mu.Unlock()
	close(pr.pressed)
	// Respond fails only if the timeout or the end of the turn answered
	// first; ask reports that source (editing the prompt again), not this
	// outcome.
	if err := pr.req.Respond(d); err != nil {
		answer("Too late: this request was already closed.")
		return
	}
}

// DenyPrompts denies every permission request waiting for an answer on
// platform, and every later one, telling the agent why: for when nobody is
// left to answer, such as the terminal chat reaching the end of its input.
func (e *Engine) DenyPrompts(platform, why string) {
	e.mu.Lock()
	e.unanswerable[platform] = why
	e.mu.Unlock()
	e.denyPrompts(func(pr *prompt) bool { return pr.turn.plat.Name() == platform }, why)
}

// denyPrompts denies the open prompts which holds for, telling the agent
// why; each prompt says "❌ Denied: why."
func (e *Engine) denyPrompts(which func(*prompt) bool, why string) {
	e.mu.Lock()
	var waiting []*prompt
	for _, pr := range e.prompts {
		if which(pr) {
			waiting = append(waiting, pr)
		}
	}
	e.mu.Unlock()
	for _, pr := range waiting {
		pr.mu.Lock()
		claim := pr.outcome == "" && !pr.settled
		if claim {
			// ask edits this outcome onto the prompt: nothing to wait for.
			pr.outcome = "❌ Denied: " + render.EscapeMarkdown(why) + "."
			close(pr.pressed)
		}
		pr.mu.Unlock()
		if claim {
			pr.req.Respond(agentproc.Decision{Message: why})
		}
	}
}
