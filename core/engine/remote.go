package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"sync"

	"github.com/agentbridge/agentbridge/core"
	"github.com/agentbridge/agentbridge/internal/isolate"
)

// BridgeID names a bridge on what it starts elsewhere (the
// io.agentbridge.bridge label of its containers and pods): the first 12 hex
// digits of the SHA-256 of its store file's absolute path, so two bridges
// sharing a container engine can tell theirs apart, and a bridge keeps its
// id across restarts.
func BridgeID(storePath string) string {
	if abs, err := filepath.Abs(storePath); err == nil {
		storePath = abs
	}
	return shortHash(storePath)
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:6])
}

// remoteFor names the container or pod the turn's agent will start when
// its profile runs agentbridge isolate, for the journal to record before
// it starts — so a crash at any later moment leaves nothing Recover does
// not know of — and returns the environment that hands the name to the
// wrapper (zero and nil for any other profile).
func (e *Engine) remoteFor(r *turnRun) (core.RemoteRef, []string) {
	rm, env, ok := isolate.Plan(r.prof.Args, r.t.key.Slug(), r.t.id, e.opts.BridgeID)
	if !ok {
		return core.RemoteRef{}, nil
	}
	return core.RemoteRef(rm), env
}

// removeRemotes stops and removes, all at once, the containers and pods
// interrupted turns ran in.
func (e *Engine) removeRemotes(ctx context.Context, entries []core.JournalEntry) {
	var wg sync.WaitGroup
	for _, j := range entries {
		if j.Remote.Name != "" {
			wg.Go(func() { e.removeRemote(ctx, j.TurnID, j.Remote) })
		}
	}
	wg.Wait()
}

// removeRemote stops and removes a turn's container or pod if it is still
// there, bounded in time, with its anonymous volumes; the conversation's
// named workspace stays.
func (e *Engine) removeRemote(ctx context.Context, turn string, r core.RemoteRef) {
	removed, err := isolate.Remove(ctx, isolate.Remote(r))
	switch {
	case err != nil:
		e.log.WarnContext(ctx, "could not remove a turn's container", "turn", turn, "runtime", r.Runtime, "remote", r.Name, "err", err)
	case removed:
		e.log.InfoContext(ctx, "removed a turn's container left running", "turn", turn, "runtime", r.Runtime, "remote", r.Name)
	}
}
