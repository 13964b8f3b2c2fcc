package stream

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/core/render"
)

// The decision's tests drive decide the way loop does, with every write
// succeeding at once unless a test says otherwise: no platform, no clock.

func testSettings(maxText int) *settings {
	return &settings{
		lim:   core.Limits{MaxText: maxText, EditInterval: time.Second, Dialect: render.Plain},
		opts:  Options{Placeholder: "thinking…", Heartbeat: 20 * time.Second, ReplyTo: "q1"},
		start: t0,
	}
}

// presentation is a reply under test and the messages "posted" so far.
type presentation struct {
	c     *settings
	r     reply
	posts int
	ids   []string // the message each action of the last settle wrote ("" for none)
}

func newPresentation(c *settings) *presentation {
	return &presentation{c: c, r: newReply(c.lim, 0)}
}

// decide makes one decision for v.
func (p *presentation) decide(v view) action {
	var a action
	p.r, a = decide(p.r, p.c, v)
	return a
}

// ok records write a as shown; a post becomes message m1, m2, … It
// returns the message's id.
func (p *presentation) ok(a action, now time.Time) string {
	ref := core.MessageRef{}
	if a.send {
		p.posts++
		ref.ID = "m" + strconv.Itoa(p.posts)
	} else {
		ref = p.r.sent[a.idx].ref
	}
	p.r.record(&a, ref, outcome{kind: shown, reached: true}, now)
	return ref.ID
}

// settle decides and "writes" until the reply shows v: it returns the
// actions taken, ending with the idle or finish one.
func (p *presentation) settle(t *testing.T, v view) []action {
	t.Helper()
	var acts []action
	p.ids = p.ids[:0]
	for range 50 {
		a := p.decide(v)
		acts = append(acts, a)
		p.ids = append(p.ids, "")
		switch a.kind {
		case write:
			p.ids[len(p.ids)-1] = p.ok(a, v.now)
		case idle, finish:
			return acts
		}
	}
	t.Fatalf("no rest after 50 decisions: %s", describeAll(acts))
	return nil
}

// texts returns what the current group's messages show.
func (p *presentation) texts() []string {
	var out []string
	for _, m := range p.r.sent {
		out = append(out, m.text)
	}
	return out
}

func describe(a action) string {
	var b strings.Builder
	switch a.kind {
	case idle:
		b.WriteString("idle")
		if !a.until.IsZero() {
			fmt.Fprintf(&b, " until +%v", a.until.Sub(t0))
		}
	case write:
		op := "edit"
		if a.send {
			op = "send"
		}
		fmt.Fprintf(&b, "%s #%d %q", op, a.idx, a.post.Text)
		if a.post.Priority != core.PriorityFinal {
			b.WriteString(" interim")
		}
		if a.post.Priority == core.PriorityFull {
			b.WriteString(" full")
		}
		if a.placeholder {
			b.WriteString(" placeholder")
		}
		if a.post.ReplyTo != "" {
			b.WriteString(" reply-to " + a.post.ReplyTo)
		}
	case nextGroup:
		b.WriteString("next group")
	case finish:
		b.WriteString("finish")
	}
	if len(a.finalize) > 0 {
		var ids []string
		for _, m := range a.finalize {
			ids = append(ids, m.ref.ID)
		}
		b.WriteString(" finalize " + strings.Join(ids, ","))
	}
	return b.String()
}

func describeAll(acts []action) string {
	var out []string
	for _, a := range acts {
		out = append(out, describe(a))
	}
	return strings.Join(out, "; ")
}

func streaming(out string, now time.Time) view {
	return view{output: out, lastVisible: now, now: now}
}

const (
	paraA = "aaaa aaaa aaaa aaaa" // 19 characters: two with a blank line fill a 40-character message
	paraB = "bbbb bbbb bbbb bbbb"
	paraC = "cccc cccc cccc cccc"
)

// TestDecide: what the presenter does next, from the reply's state (built
// by the steps before) and the turn as it stands.
func TestDecide(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(*settings)
		before []view                          // each shown in turn (every write succeeding)
		v      view                            // then one decision
		want   string                          // describe of it
		check  func(*testing.T, *presentation) // the state after it, if it matters
	}{
		{
			name: "nothing yet, no placeholder",
			v:    streaming("", at(time.Second)),
			want: "idle",
		},
		{
			name: "first output is posted as the reply to the question",
			v:    streaming("hello", at(time.Second)),
			want: `send #0 "hello" interim reply-to q1`,
		},
		{
			name:  "placeholder not due yet",
			setup: func(c *settings) { c.opts.PlaceholderDelay = time.Second },
			v:     streaming("", at(500*time.Millisecond)),
			want:  "idle until +1s",
		},
		{
			name:  "placeholder due",
			setup: func(c *settings) { c.opts.PlaceholderDelay = time.Second },
			v:     streaming("", at(time.Second)),
			want:  `send #0 "thinking…" interim placeholder reply-to q1`,
		},
		{
			name:   "placeholder shown waits for its heartbeat",
			setup:  func(c *settings) { c.opts.PlaceholderDelay = time.Second },
			before: []view{streaming("", at(time.Second))},
			v:      streaming("", at(5*time.Second)),
			want:   "idle until +20s",
		},
		{
			name:   "heartbeat edits the placeholder with the elapsed time",
			setup:  func(c *settings) { c.opts.PlaceholderDelay = time.Second },
			before: []view{streaming("", at(time.Second))},
			v:      streaming("", at(20*time.Second)),
			want:   `edit #0 "thinking… (20 s)" interim placeholder`,
		},
		{
			name:   "an open prompt replaces the placeholder's text",
			setup:  func(c *settings) { c.opts.PlaceholderDelay = time.Second },
			before: []view{streaming("", at(time.Second))},
			v:      view{waiting: true, now: at(2 * time.Second)},
			want:   `edit #0 "` + waitingText + `" interim placeholder`,
		},
		{
			name:  "an open prompt holds back the placeholder",
			setup: func(c *settings) { c.opts.PlaceholderDelay = time.Second },
			v:     view{waiting: true, now: at(time.Minute)},
			want:  "idle",
		},
		{
			name:   "text replaces the placeholder in place",
			setup:  func(c *settings) { c.opts.PlaceholderDelay = time.Second },
			before: []view{streaming("", at(time.Second))},
			v:      streaming("answer", at(3*time.Second)),
			want:   `edit #0 "answer" interim`,
			check: func(t *testing.T, p *presentation) {
				p.ok(p.decide(streaming("answer", at(3*time.Second))), at(3*time.Second))
				if p.r.placeholder {
					t.Error("the reply still counts as a placeholder after the answer replaced it")
				}
			},
		},
		{
			name:   "shown text waits for more",
			before: []view{streaming("hello", at(0))},
			v:      view{output: "hello", lastVisible: at(0), now: at(time.Second)},
			want:   "idle until +20s", // the quiet line's first beat
		},
		{
			name:   "a quiet agent gets the quiet line",
			before: []view{streaming("hello", at(0))},
			v:      view{output: "hello", lastVisible: at(0), now: at(25 * time.Second)},
			want:   `edit #0 "hello\n\n⏳ still working… (20 s)" interim`,
		},
		{
			name:   "growing text edits its message",
			before: []view{streaming("hello", at(0))},
			v:      streaming("hello world", at(time.Second)),
			want:   `edit #0 "hello world" interim`,
		},
		{
			name:   "overflow posts a new message and finalizes the full one",
			before: []view{streaming(paraA+"\n\n"+paraB, at(0))},
			v:      streaming(paraA+"\n\n"+paraB+"\n\n"+paraC, at(time.Second)),
			want:   `send #1 "` + paraC + `" interim finalize m1`,
			check: func(t *testing.T, p *presentation) {
				if p.r.finalized != 1 {
					t.Errorf("finalized = %d, want 1", p.r.finalized)
				}
			},
		},
		{
			name: "only the first message that differs is edited",
			before: []view{
				streaming(paraA+"\n\n"+paraB, at(0)),
				streaming(paraA+"\n\n"+paraB+"\n\ncccc cccc", at(time.Second)),
			},
			v:    streaming(paraA+"\n\n"+paraB+"\n\ncccc cccc cccc", at(2*time.Second)),
			want: `edit #1 "cccc cccc cccc" interim`,
		},
		{
			// m1 shows 35 characters; the splitter would now cut it after
			// paraA, at the blank line, moving shown words to m2.
			name:   "never cut a shown message shorter",
			before: []view{streaming("aaaa aaaa aaaa\n\nbbbb bbbb bbbb bbbb", at(0))},
			v:      streaming("aaaa aaaa aaaa\n\nbbbb bbbb bbbb bbbb cccc cccc", at(time.Second)),
			want:   "next group finalize m1",
			check: func(t *testing.T, p *presentation) {
				if p.r.win.from != 35 || len(p.r.sent) != 0 {
					t.Fatalf("next group %+v with %d messages, want one from offset 35, empty", p.r.win, len(p.r.sent))
				}
				if a := p.decide(streaming("aaaa aaaa aaaa\n\nbbbb bbbb bbbb bbbb cccc cccc", at(time.Second))); describe(a) != `send #0 "cccc cccc" interim` {
					t.Errorf("then %s, want the rest in a new message", describe(a))
				}
			},
		},
		{
			// m1 shows "cc" of "cccc": it completes the word rather than
			// lose what it showed of it.
			name:   "a frozen message completes the word it showed in part",
			before: []view{streaming("aaaa aaaa aaaa\n\nbbbb bbbb bbbb bbbb cc", at(0))},
			v:      streaming("aaaa aaaa aaaa\n\nbbbb bbbb bbbb bbbb cccc dddd dddd", at(time.Second)),
			want:   `edit #0 "aaaa aaaa aaaa\n\nbbbb bbbb bbbb bbbb cccc" interim`,
			check: func(t *testing.T, p *presentation) {
				if p.r.win.to != 40 {
					t.Errorf("group closes at %d, want 40, after the word", p.r.win.to)
				}
				p.ok(p.decide(streaming("aaaa aaaa aaaa\n\nbbbb bbbb bbbb bbbb cccc dddd dddd", at(time.Second))), at(time.Second))
				acts := p.settle(t, streaming("aaaa aaaa aaaa\n\nbbbb bbbb bbbb bbbb cccc dddd dddd", at(2*time.Second)))
				if got := describeAll(acts); got != `next group finalize m1; send #0 "dddd dddd" interim; idle until +22s` {
					t.Errorf("then %s", got)
				}
			},
		},
		{
			name:   "a shown message may grow past what the splitter packed",
			before: []view{streaming("aaaa aaaa aaaa\n\nbbbb", at(0))},
			v:      streaming("aaaa aaaa aaaa\n\nbbbb bbbb", at(time.Second)),
			want:   `edit #0 "aaaa aaaa aaaa\n\nbbbb bbbb" interim`,
		},
		{
			name:   "edit window: the group closes at a block boundary",
			setup:  func(c *settings) { c.lim.EditWindow = 10 * time.Minute },
			before: []view{streaming("para one\n\npara two", at(0))},
			v:      streaming("para one\n\npara two\n\npara three", at(9*time.Minute+11*time.Second)),
			want:   "next group finalize m1",
			check: func(t *testing.T, p *presentation) {
				if p.r.win.from != len("para one\n\npara two\n\n") {
					t.Errorf("next group from %d, want after the blank line", p.r.win.from)
				}
				acts := p.settle(t, streaming("para one\n\npara two\n\npara three", at(9*time.Minute+12*time.Second)))
				if got := describeAll(acts); got != `send #0 "para three" interim; idle until +9m32s` {
					t.Errorf("then %s", got)
				}
			},
		},
		{
			name:   "edit window: the final text goes in place, not alone in a new message",
			setup:  func(c *settings) { c.lim.EditWindow = 10 * time.Minute },
			before: []view{streaming("para one\n\npara two\n\n", at(0))},
			v:      view{output: "para one\n\npara two\n\n", final: &Final{Footer: "9 tokens"}, now: at(9*time.Minute + 11*time.Second)},
			want:   `edit #0 "para one\n\npara two\n\n9 tokens"`,
		},
		{
			name:   "edit window: not yet closing",
			setup:  func(c *settings) { c.lim.EditWindow = 10 * time.Minute },
			before: []view{streaming("para one\n\npara two", at(0))},
			v:      streaming("para one\n\npara two\n\npara three", at(9*time.Minute+10*time.Second)),
			want:   `edit #0 "para one\n\npara two\n\npara three" interim`,
		},
		{
			name:   "edit window: nowhere to cut yet",
			setup:  func(c *settings) { c.lim.EditWindow = 10 * time.Minute },
			before: []view{streaming("one long paragraph", at(0))},
			v:      streaming("one long paragraph goes on", at(9*time.Minute+11*time.Second)),
			want:   `edit #0 "one long paragraph goes on" interim`,
			check: func(t *testing.T, p *presentation) {
				if !p.r.groupStart.Equal(at(9*time.Minute+11*time.Second)) || p.r.win.to >= 0 {
					t.Errorf("group %+v started %v; want it open, looked at again an edit window later", p.r.win, p.r.groupStart.Sub(t0))
				}
			},
		},
		{
			name:   "the final text goes in place, not interim",
			before: []view{streaming("hello", at(0))},
			v:      view{output: "hello", final: &Final{Footer: "12 tokens"}, now: at(time.Second)},
			want:   `edit #0 "hello\n\n12 tokens"`,
		},
		{
			name: "finish once the final text is shown",
			before: []view{
				streaming(paraA+"\n\n"+paraB+"\n\n"+paraC, at(0)),
				{output: paraA + "\n\n" + paraB + "\n\n" + paraC, final: &Final{Notice: "Stopped."}, now: at(time.Second)},
			},
			v:    view{output: paraA + "\n\n" + paraB + "\n\n" + paraC, final: &Final{Notice: "Stopped."}, now: at(time.Second)},
			want: "finish finalize m2",
			check: func(t *testing.T, p *presentation) {
				if got := p.texts(); len(got) != 2 || got[1] != paraC+"\n\nStopped." {
					t.Errorf("messages %q, want the notice after the last paragraph", got)
				}
			},
		},
		{
			name:  "a reply without text says so",
			setup: func(c *settings) { c.lim.MaxText = 100 },
			v:     view{final: &Final{Footer: "3 tokens"}, now: at(time.Second)},
			want:  `send #0 "(the agent finished without a reply)\n\n3 tokens" reply-to q1`,
		},
		{
			name:   "the reply-to goes on the first message only",
			before: []view{streaming(paraA+"\n\n"+paraB, at(0))},
			v:      streaming(paraA+"\n\n"+paraB+"\n\n"+paraC, at(time.Second)),
			want:   `send #1 "` + paraC + `" interim finalize m1`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testSettings(40)
			if tt.setup != nil {
				tt.setup(c)
			}
			p := newPresentation(c)
			for _, v := range tt.before {
				p.settle(t, v)
			}
			if got := describe(p.decide(tt.v)); got != tt.want {
				t.Errorf("decide = %s\nwant     %s", got, tt.want)
			}
			if tt.check != nil {
				tt.check(t, p)
			}
		})
	}
}

// TestDecideKeepsWhatWasShown: however the output arrives (a word at a
// time, or bursts longer than a message between two writes) and however
// the reply ends, no write takes a word away from a message that showed
// it, no message is written after it was finalized, the messages show
// every word of the output once, in order, and the reply's ending (notice,
// footer) is alone in a message only after one that showed all its text
// before the end.
func TestDecideKeepsWhatWasShown(t *testing.T) {
	for seed := range 300 {
		rng := rand.New(rand.NewPCG(uint64(seed), 1))
		var paras []string
		n := 0
		for range 2 + rng.IntN(8) {
			var words []string
			for range 1 + rng.IntN(40) {
				words = append(words, fmt.Sprintf("w%03d", n))
				n++
			}
			paras = append(paras, strings.Join(words, " "))
		}
		full := strings.Join(paras, "\n\n")
		final := []*Final{{}, {Footer: "12 tokens · 3.4 s"}, {Notice: "Stopped.", Footer: "12 tokens"}}[rng.IntN(3)]

		p := newPresentation(testSettings(200))
		shown := map[string][]string{} // message → the words it shows
		finalized := map[string]bool{}
		check := func(acts []action) {
			for i, a := range acts {
				for _, m := range a.finalize {
					finalized[m.ref.ID] = true
				}
				if a.kind != write {
					continue
				}
				id := p.ids[i]
				if finalized[id] {
					t.Fatalf("seed %d: message %s written after it was finalized: %q", seed, id, a.post.Text)
				}
				words := strings.Fields(a.post.Text)
				old := shown[id]
				for _, w := range old[:max(len(old)-1, 0)] { // the last one may have been cut mid-word
					if !slices.Contains(words, w) {
						t.Fatalf("seed %d: message %s showed %q, then lost it: %q", seed, id, w, a.post.Text)
					}
				}
				shown[id] = words
			}
		}
		var before map[string][]string // what the messages showed before the end
		end := func(v view) view {
			v.final, before = final, maps.Clone(shown)
			return v
		}
		now := t0
		for pos := 0; pos < len(full); {
			step := 1 + rng.IntN(80)
			if rng.IntN(4) == 0 {
				step = 1 + rng.IntN(500) // a burst
			}
			pos = min(pos+step, len(full))
			now = now.Add(time.Second)
			v := streaming(full[:pos], now)
			if pos == len(full) && rng.IntN(2) == 0 {
				v = end(v) // the end comes with the last output
			}
			check(p.settle(t, v))
		}
		if before == nil {
			check(p.settle(t, end(view{output: full, now: now.Add(time.Second)})))
		} else {
			check(p.settle(t, view{output: full, final: final, now: now.Add(time.Second)}))
		}
		output := func(words []string) []string {
			return slices.DeleteFunc(slices.Clone(words), func(w string) bool { return !strings.HasPrefix(w, "w") })
		}
		for i := 2; i <= p.posts; i++ {
			id, prev := "m"+strconv.Itoa(i), "m"+strconv.Itoa(i-1)
			if len(output(shown[id])) == 0 && !slices.Equal(output(before[prev]), output(shown[prev])) {
				t.Errorf("seed %d: the ending %q alone in %s after %s, which showed %q before the end and %q after",
					seed, shown[id], id, prev, before[prev], shown[prev])
			}
		}

		var all []string
		for i := 1; i <= p.posts; i++ {
			all = append(all, shown["m"+strconv.Itoa(i)]...)
		}
		got := strings.Join(all, " ")
		for _, e := range []string{final.Notice, final.Footer} {
			if e != "" {
				got = strings.Replace(got, " "+e, "", 1)
			}
		}
		if want := strings.Join(strings.Fields(full), " "); got != want {
			t.Fatalf("seed %d: messages show\n%q\nwant\n%q", seed, got, want)
		}
	}
}

// TestRecord: how the reply's state follows a write's outcome.
func TestRecord(t *testing.T) {
	base := func() *presentation {
		p := newPresentation(testSettings(40))
		p.settle(t, streaming(paraA+"\n\n"+paraB+"\n\n"+paraC, at(0)))
		return p
	}
	edit1 := action{kind: write, idx: 1, post: core.Post{Text: "x", Priority: core.PriorityInterim}}
	tests := []struct {
		name  string
		o     outcome
		check func(*testing.T, reply)
	}{
		{"markup rejected", outcome{kind: plain, reached: true}, func(t *testing.T, r reply) {
			if !r.plain {
				t.Error("not plain after the platform rejected the markup")
			}
		}},
		{"too long", outcome{kind: smaller, reached: true}, func(t *testing.T, r reply) {
			if r.maxText != 30 {
				t.Errorf("maxText = %d, want 30", r.maxText)
			}
		}},
		{"message gone", outcome{kind: gone, reached: true}, func(t *testing.T, r reply) {
			if len(r.sent) != 1 || r.finalized != 1 {
				t.Errorf("%d messages, %d finalized; want the gone one and those after it forgotten", len(r.sent), r.finalized)
			}
		}},
		{"rate limited", outcome{kind: wait, after: time.Second}, func(t *testing.T, r reply) {
			if len(r.sent) != 2 || r.sent[1].text != paraC {
				t.Errorf("messages %+v changed by a refused write", r.sent)
			}
		}},
		{"failed", outcome{kind: failed, reached: true}, func(t *testing.T, r reply) {
			if r.sent[1].text != paraC {
				t.Errorf("message 1 shows %q after a failed edit", r.sent[1].text)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := base()
			if _, last := p.r.record(&edit1, p.r.sent[1].ref, tt.o, at(time.Second)); last {
				t.Error("a failed write reported as shown")
			}
			tt.check(t, p.r)
		})
	}
}

// TestDecideBurstKeepsWhatWasShown: output that fills more than one
// message between two writes goes out piece by piece, and the freeze then
// guards the message each piece went to, not an earlier one (which once
// cut a message back to what it showed before the burst).
func TestDecideBurstKeepsWhatWasShown(t *testing.T) {
	const a34 = "aaaa aaaa aaaa aaaa aaaa aaaa aaaa"
	d35 := strings.Repeat("dddd ", 6) + "dddd"
	p := newPresentation(testSettings(40))
	p.settle(t, streaming(a34, at(0)))
	burst := a34 + " aaaa\n\nbbbb bbbb\n\n" + d35
	got := describeAll(p.settle(t, streaming(burst, at(time.Second))))
	// The full pieces' text is final: every piece but the last is full.
	want := `edit #0 "` + a34 + ` aaaa" interim full; send #1 "bbbb bbbb" interim full finalize m1; send #2 "` + d35 + `" interim finalize m2; idle until +21s`
	if got != want {
		t.Errorf("burst: %s\nwant   %s", got, want)
	}
	if p.r.shownTo != len(burst) || p.r.shownLen != len(d35) {
		t.Errorf("shownTo, shownLen = %d, %d; want %d, %d", p.r.shownTo, p.r.shownLen, len(burst), len(d35))
	}
}

// TestPieceEnd: where a full piece that more text follows ends in the
// output.
func TestPieceEnd(t *testing.T) {
	c := testSettings(40)
	r := newReply(c.lim, 0)
	d35 := strings.Repeat("dddd ", 6) + "dddd"
	out := "aaaa aaaa aaaa aaaa aaaa aaaa aaaa aaaa\n\nbbbb bbbb\n\n" + d35
	v := streaming(out, at(0))
	f := r.frame(c, &v)
	if len(f.want) != 3 {
		t.Fatalf("pieces %q, want 3", f.want)
	}
	for i, wantTo := range []int{len("aaaa aaaa aaaa aaaa aaaa aaaa aaaa aaaa\n\n"), len(out) - len(d35)} {
		if to, n := r.pieceEnd(c, &v, i, f.want[i], f.to); to != wantTo || n != render.Length(f.want[i]) {
			t.Errorf("piece %d %q ends at %d (length %d), want %d", i, f.want[i], to, n, wantTo)
		}
	}
	// A piece with final parts in it does not end in the output.
	v.final = &Final{Notice: strings.Repeat("nnnn ", 9)}
	f = r.frame(c, &v)
	last := len(f.want) - 2
	if to, n := r.pieceEnd(c, &v, last, f.want[last], f.to); to != 0 || n != 0 {
		t.Errorf("piece %q with the notice ends at %d (length %d), want unknown (0, 0)", f.want[last], to, n)
	}
}

// TestHeadingTail: an interim frame holds back a heading that ends the
// output until its block starts, so a message kept as shown never ends
// with a heading (issue 15).
func TestHeadingTail(t *testing.T) {
	for _, tc := range []struct {
		out  string
		from int
		want int
	}{
		{"text\n\n## Part 2\n\n", 0, 6},
		{"text\n\n## Part 2", 0, 6},
		{"text\n\n## Part 2\n\nmore", 0, -1},
		{"## Part 2\n", 0, -1},          // nothing before it
		{"text\n\n#hashtag\n", 0, -1},   // not a heading
		{"text\n\n    # code\n", 0, -1}, // indented code
		{"```\n# comment\n", 0, -1},     // inside a fence
		{"a\n\nb\n\n# H\n", 3, 6},
	} {
		if got := headingTail(tc.out, tc.from, len(tc.out)); got != tc.want {
			t.Errorf("headingTail(%q, %d) = %d, want %d", tc.out, tc.from, got, tc.want)
		}
	}
}
