package platformtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/agentbridge/agentbridge/core"
)

// Hooks let TestPlatform look into a platform's fake and make it
// misbehave. Conv and Shown are required; a nil hook skips the checks that
// need it.
type Hooks struct {
	// Conv is a conversation the fake serves, where Send posts a real
	// message (not a preview such as a Telegram draft).
	Conv core.ConversationKey
	// Shown returns the text the fake holds for ref, and whether it has
	// that message at all.
	Shown func(ref core.MessageRef) (string, bool)
	// Requests returns how many requests the fake has received.
	Requests func() int
	// Missing is a message of Conv the fake does not have (deleted, or
	// never sent); the zero ref skips the not-found check.
	Missing core.MessageRef
	// RateLimitSend makes the fake answer the next send to Conv with a
	// 429 asking to wait retryAfter (whole seconds).
	RateLimitSend func(retryAfter time.Duration)
	// Unbudgeted says the platform has no rate budget of its own (a
	// terminal), so interim frames are never given a later turn.
	Unbudgeted bool

	// The file checks run when the platform is a core.FileSender and
	// ShownFile and Order are set.

	// ShownFile returns the name and bytes the fake holds for a file
	// SendFile posted as ref, and whether it has that file at all.
	ShownFile func(ref core.MessageRef) (name string, data []byte, ok bool)
	// Order returns the ids (MessageRef.ID) of the messages and files the
	// fake holds in Conv, in the order it received them.
	Order func() []string
	// RateLimitFile makes the fake answer the next upload to Conv with a
	// 429 asking to wait retryAfter (whole seconds).
	RateLimitFile func(retryAfter time.Duration)
}

// maxFrames bounds how many interim edits TestPlatform makes looking for
// the budget's refusal.
const maxFrames = 200

// TestPlatform checks that p, constructed against its fake but not
// running, keeps the contract core relies on (in the spirit of
// testing/fstest.TestFS): Limits does no I/O, a sent message can be
// edited, an identical edit is no error, a missing message is
// core.ErrNotFound, a final-priority write is not held behind queued
// interim frames, and the platform's 429 is a *core.RateLimitError with
// its Retry-After. Run it from the adapter's own tests.
func TestPlatform(t *testing.T, p core.Platform, h Hooks) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	// A write the adapter's own budget refuses (Turn) is made again when
	// its turn comes, as the presenter and the engine do.
	inTurn := func(write func() error) error {
		for {
			err := write()
			var rl *core.RateLimitError
			if !errors.As(err, &rl) || !rl.Turn {
				return err
			}
			select {
			case <-time.After(rl.RetryAfter):
			case <-ctx.Done():
				return err
			}
		}
	}
	edit := func(ref core.MessageRef, text string) error {
		return inTurn(func() error { return p.Edit(ctx, ref, core.Post{Text: text, Plain: true}) })
	}
	send := func(t *testing.T, text string) core.MessageRef {
		t.Helper()
		var ref core.MessageRef
		err := inTurn(func() (err error) {
			ref, err = p.Send(ctx, h.Conv, core.Post{Text: text, Plain: true})
			return err
		})
		if err != nil {
			t.Fatalf("Send %q: %v", text, err)
		}
		if ref.Conv != h.Conv || ref.ID == "" {
			t.Fatalf("Send %q returned ref %+v, want an id in %v", text, ref, h.Conv)
		}
		return ref
	}
	shows := func(t *testing.T, ref core.MessageRef, want string) {
		t.Helper()
		got, ok := h.Shown(ref)
		if !ok || !strings.Contains(got, want) {
			t.Errorf("message %s shows %q (exists: %v), want %q", ref.ID, got, ok, want)
		}
	}

	t.Run("Limits does no I/O", func(t *testing.T) {
		if h.Requests == nil {
			t.Skip("no Requests hook")
		}
		before := h.Requests()
		lim := p.Limits()
		if n := h.Requests() - before; n != 0 {
			t.Errorf("Limits made %d requests", n)
		}
		if lim.MaxText <= 0 {
			t.Errorf("Limits().MaxText = %d, want the platform's limit", lim.MaxText)
		}
	})

	t.Run("send and edit round trip", func(t *testing.T) {
		ref := send(t, "contract: sent")
		shows(t, ref, "contract: sent")
		if err := edit(ref, "contract: edited"); err != nil {
			t.Fatalf("Edit: %v", err)
		}
		shows(t, ref, "contract: edited")
	})

	t.Run("an identical edit is not a failure", func(t *testing.T) {
		ref := send(t, "contract: same")
		err := edit(ref, "contract: same")
		if err != nil && !errors.Is(err, core.ErrNotModified) {
			t.Errorf("identical Edit = %v, want nil or core.ErrNotModified", err)
		}
		shows(t, ref, "contract: same")
	})

	t.Run("a missing message is not found", func(t *testing.T) {
		if h.Missing == (core.MessageRef{}) {
			t.Skip("no Missing message")
		}
		err := edit(h.Missing, "contract: nobody sees this")
		if !errors.Is(err, core.ErrNotFound) {
			t.Errorf("Edit of a missing message = %v, want core.ErrNotFound", err)
		}
	})

	t.Run("final text goes before interim frames", func(t *testing.T) {
		if h.Unbudgeted {
			t.Skip("no rate budget")
		}
		frames, final := send(t, "contract: frames"), send(t, "contract: final")
		// Interim frames until the budget gives one a later turn: that
		// frame now waits in its queue.
		var queued *core.RateLimitError
		for i := 0; queued == nil; i++ {
			if i == maxFrames {
				t.Fatalf("%d interim edits in a row all went at once: no rate budget paces them", maxFrames)
			}
			err := p.Edit(ctx, frames, core.Post{Text: fmt.Sprintf("contract: frame %d", i), Plain: true, Priority: core.PriorityInterim})
			switch {
			case errors.As(err, &queued) && !queued.Turn:
				t.Fatalf("interim edit %d: the platform refused it (%v): the budget let too many through", i, err)
			case err != nil && queued == nil:
				t.Fatalf("interim edit %d: %v", i, err)
			}
		}
		err := p.Edit(ctx, final, core.Post{Text: "contract: the end", Plain: true, Priority: core.PriorityFinal})
		var rl *core.RateLimitError
		switch {
		case err == nil:
			shows(t, final, "contract: the end")
		case errors.As(err, &rl) && rl.Turn && rl.RetryAfter < queued.RetryAfter:
			// Its own turn, sooner than the queued frame's.
		default:
			t.Errorf("final edit behind a queued interim frame (its turn in %v) = %v, want it at once", queued.RetryAfter, err)
		}
	})

	fs, _ := p.(core.FileSender)
	files := fs != nil && h.ShownFile != nil && h.Order != nil
	sendFile := func(f core.File) (ref core.MessageRef, err error) {
		err = inTurn(func() (err error) {
			ref, err = fs.SendFile(ctx, h.Conv, f)
			return err
		})
		return ref, err
	}

	t.Run("a file goes between the texts sent around it", func(t *testing.T) {
		if !files {
			t.Skip("not a FileSender, or no ShownFile/Order hooks")
		}
		data := []byte("contract: the file's bytes\n")
		before := send(t, "contract: before the file")
		ref, err := sendFile(Spool(t, "notes.txt", "text/plain", "file", data))
		if err != nil {
			t.Fatalf("SendFile: %v", err)
		}
		if ref.Conv != h.Conv || ref.ID == "" {
			t.Fatalf("SendFile returned ref %+v, want an id in %v", ref, h.Conv)
		}
		after := send(t, "contract: after the file")
		name, got, ok := h.ShownFile(ref)
		if !ok || name != "notes.txt" || !bytes.Equal(got, data) {
			t.Errorf("file %s shows as %q with %q (exists: %v), want notes.txt with %q", ref.ID, name, got, ok, data)
		}
		order := h.Order()
		at := func(id string) int { return slices.Index(order, id) }
		if b, f, a := at(before.ID), at(ref.ID), at(after.ID); b < 0 || f < b || a < f {
			t.Errorf("order in the conversation %v: text before at %d, file at %d, text after at %d; want them in that order", order, b, f, a)
		}
	})

	t.Run("a file name is sanitised", func(t *testing.T) {
		if !files {
			t.Skip("not a FileSender, or no ShownFile/Order hooks")
		}
		data := []byte("contract: hostile name")
		hostile := "../../.ssh/\x1b[2J..evil\u202egpj.\x00" + strings.Repeat("x", 300) + ".txt"
		ref, err := sendFile(Spool(t, hostile, "text/plain", "file", data))
		if err != nil {
			t.Fatalf("SendFile: %v", err)
		}
		name, got, ok := h.ShownFile(ref)
		switch {
		case !ok || !bytes.Equal(got, data):
			t.Errorf("file %s: exists %v, bytes %q", ref.ID, ok, got)
		case strings.ContainsAny(name, "/\\") || strings.HasPrefix(name, "."):
			t.Errorf("name %q keeps a path or a leading dot", name)
		case strings.IndexFunc(name, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }) >= 0:
			t.Errorf("name %q keeps control or format characters", name)
		case !strings.HasSuffix(name, ".txt") || len(name) > 255:
			t.Errorf("name %q (%d bytes): want the .txt extension kept, at most 255 bytes", name, len(name))
		}
	})

	t.Run("a file over MaxFileBytes is refused before it is uploaded", func(t *testing.T) {
		if !files {
			t.Skip("not a FileSender, or no ShownFile/Order hooks")
		}
		max := p.Limits().MaxFileBytes
		if max <= 0 {
			t.Fatalf("Limits().MaxFileBytes = %d, want the platform's upload limit", max)
		}
		// A sparse file: the size is real, the disk is not spent.
		f := Spool(t, "big.bin", "application/octet-stream", "file", nil)
		if err := os.Truncate(f.Path, max+1); err != nil {
			t.Fatal(err)
		}
		f.Size = 10 // understated: the adapter must look at Path itself
		var before int
		if h.Requests != nil {
			before = h.Requests()
		}
		_, err := fs.SendFile(ctx, h.Conv, f)
		if err == nil {
			t.Fatalf("SendFile of %d bytes (limit %d) succeeded", max+1, max)
		}
		if h.Requests != nil {
			if n := h.Requests() - before; n != 0 {
				t.Errorf("an over-limit file made %d requests", n)
			}
		}
	})

	// Last: an adapter holds its budget for the Retry-After it was told.
	t.Run("a 429 on an upload is a rate limit with its Retry-After", func(t *testing.T) {
		if !files || h.RateLimitFile == nil {
			t.Skip("not a FileSender, or no RateLimitFile hook")
		}
		const retryAfter = time.Second
		h.RateLimitFile(retryAfter)
		data := []byte("contract: refused file")
		_, err := sendFile(Spool(t, "refused.txt", "text/plain", "file", data))
		var rl *core.RateLimitError
		if !errors.As(err, &rl) {
			t.Fatalf("SendFile answered 429 = %v, want a *core.RateLimitError", err)
		}
		if rl.RetryAfter < retryAfter || rl.Turn {
			t.Errorf("RetryAfter = %v, Turn = %v; want the platform's %v, not the budget's turn", rl.RetryAfter, rl.Turn, retryAfter)
		}
	})

	// Last: an adapter holds its budget for the Retry-After it was told.
	t.Run("a 429 is a rate limit with its Retry-After", func(t *testing.T) {
		if h.RateLimitSend == nil {
			t.Skip("no RateLimitSend hook")
		}
		const retryAfter = time.Second
		h.RateLimitSend(retryAfter)
		err := inTurn(func() error {
			_, err := p.Send(ctx, h.Conv, core.Post{Text: "contract: refused", Plain: true})
			return err
		})
		var rl *core.RateLimitError
		if !errors.As(err, &rl) {
			t.Fatalf("Send answered 429 = %v, want a *core.RateLimitError", err)
		}
		if rl.RetryAfter < retryAfter {
			t.Errorf("RetryAfter = %v, want the platform's %v", rl.RetryAfter, retryAfter)
		}
		if rl.Turn {
			t.Error("the platform's refusal is marked as the adapter's own budget's turn (Turn)")
		}
	})
}

// Spool writes data to a file of its own, as core spools a file an agent
// sends, and returns the core.File for it.
func Spool(t testing.TB, name, mime, kind string, data []byte) core.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "spooled")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return core.File{Name: name, MIME: mime, Kind: kind, Size: int64(len(data)), Path: path}
}
