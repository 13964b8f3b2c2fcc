package engine

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/agentbridge/agentbridge/core"
)

// journalTextEvery is how often a running turn's journal entry is rewritten
// when only its reply's text changed. Recovery shows the text as of the
// last write, so a few seconds of it may be missing after a crash; a disk
// sync per edit would cost far more.
const journalTextEvery = 5 * time.Second

// turnJournal keeps a running turn's journal entry up to date off the
// turn's path. Changes recovery depends on — the agent's process group, the
// reply's message, a prompt opening or closing — are written at once by its
// own goroutine; text changes at most every journalTextEvery. The store's
// group commit shares each write's sync with other turns.
type turnJournal struct {
	store core.Store
	log   *slog.Logger

	mu    sync.Mutex
	entry core.JournalEntry
	dirty bool // entry differs from what was last written
	// writing is held through each write, so two writes of the entry
	// cannot land out of order.
	writing sync.Mutex

	urgent chan struct{} // capacity 1
	stop   chan struct{}
	done   chan struct{}
}

// startJournal starts keeping entry, which is already on disk.
func startJournal(ctx context.Context, st core.Store, log *slog.Logger, entry core.JournalEntry) *turnJournal {
	j := &turnJournal{store: st, log: log, entry: entry, urgent: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go j.loop(context.WithoutCancel(ctx))
	return j
}

func (j *turnJournal) loop(ctx context.Context) {
	defer close(j.done)
	tick := time.NewTicker(journalTextEvery)
	defer tick.Stop()
	for {
		select {
		case <-j.urgent:
		case <-tick.C:
		case <-j.stop:
			return
		}
		j.write(ctx)
	}
}

// write writes the entry if it changed since the last write.
func (j *turnJournal) write(ctx context.Context) {
	j.writing.Lock()
	defer j.writing.Unlock()
	j.mu.Lock()
	e, dirty := j.entry, j.dirty
	e.Prompts = slices.Clone(e.Prompts)
	j.dirty = false
	j.mu.Unlock()
	if !dirty {
		return
	}
	if err := j.store.JournalPut(ctx, e); err != nil {
		j.log.WarnContext(ctx, "journal update failed", "err", err)
		return
	}
	j.log.DebugContext(ctx, "journal updated", "reply", e.Reply.Ref.ID, "placeholder", e.Placeholder,
		"prompts", len(e.Prompts), "agent_pgid", e.Agent.PID, "running", e.Running)
}

// flush writes the entry now, on the caller's goroutine: for a change
// that must be on disk before the turn goes on.
func (j *turnJournal) flush(ctx context.Context) {
	j.write(context.WithoutCancel(ctx))
}

// update changes the entry; urgent changes are written at once.
func (j *turnJournal) update(urgent bool, fn func(e *core.JournalEntry)) {
	j.mu.Lock()
	fn(&j.entry)
	j.dirty = true
	j.mu.Unlock()
	if urgent {
		select {
		case j.urgent <- struct{}{}:
		default:
		}
	}
}

// reply notes what the reply's last message shows (stream.Options.OnShow).
func (j *turnJournal) reply(shown core.Shown, placeholder bool) {
	j.mu.Lock()
	moved := shown.Ref != j.entry.Reply.Ref || placeholder != j.entry.Placeholder
	j.mu.Unlock()
	j.update(moved, func(e *core.JournalEntry) { e.Reply, e.Placeholder = shown, placeholder })
}

// prompt notes a permission prompt shown (open) or settled.
func (j *turnJournal) prompt(shown core.Shown, open bool) {
	j.update(true, func(e *core.JournalEntry) {
		e.Prompts = slices.DeleteFunc(e.Prompts, func(p core.Shown) bool { return p.Ref == shown.Ref })
		if open {
			e.Prompts = append(e.Prompts, shown)
		}
	})
}

// current returns the entry as it stands.
func (j *turnJournal) current() core.JournalEntry {
	j.mu.Lock()
	defer j.mu.Unlock()
	e := j.entry
	e.Prompts = slices.Clone(e.Prompts)
	return e
}

// close stops the writer and waits for a write in progress, so the turn's
// JournalDelete cannot be overtaken by a late write.
func (j *turnJournal) close() {
	close(j.stop)
	<-j.done
}
