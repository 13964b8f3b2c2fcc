package store

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/agentbridge/agentbridge/core"
	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"
)

// TestMigrateV1SessionsToPerProfileIDs opens a file as schema 1 wrote it
// (one agent id per session, with the profile that saved it) and checks
// that each id is filed under its profile, that an id without a profile is
// dropped rather than resumed by a stranger, and that the v1 journal still
// reads.
func TestMigrateV1SessionsToPerProfileIDs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v1.db")
	withBolt(t, path, func(tx *bolt.Tx) error {
		if err := createV1(tx); err != nil {
			return err
		}
		if err := tx.Bucket(bucketMeta).Put(keySchema, []byte("agentbridge/1")); err != nil {
			return err
		}
		s := tx.Bucket(bucketSessions)
		for k, v := range map[string]string{
			"default": `{"v":1,"name":"default","agent_id":"demo-485bc65220c3","profile":"demo","turns":4,"updated_at":"2026-02-03T04:05:06Z"}`,
			"orphan":  `{"v":1,"name":"orphan","agent_id":"who-knows","turns":1,"updated_at":"2026-02-03T04:05:06Z"}`,
			"fresh":   `{"v":1,"name":"fresh","profile":"claude","turns":0,"updated_at":"0001-01-01T00:00:00Z"}`,
		} {
			if err := s.Put(sessionKey(convA, k), []byte(v)); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketJournal).Put(journalKey(t0, "t1"),
			[]byte(`{"v":1,"turn_id":"t1","conv":{"platform":"slack","channel":"C1"},"message_id":"m1","reply_conv":{"platform":"slack","channel":"C1"},"reply_id":"r1","started_at":"2026-02-03T04:05:06.000000007Z"}`))
	})

	s := openAt(t, path, Options{})
	got, err := s.Sessions(t.Context(), convA)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	want := []core.Session{
		{Name: "default", Agents: map[string]string{"demo": "demo-485bc65220c3"}, Profile: "demo", Turns: 4, UpdatedAt: at},
		{Name: "fresh", Profile: "claude"},
		{Name: "orphan", Turns: 1, UpdatedAt: at},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sessions after migration (-want +got):\n%s", diff)
	}
	j, err := s.Journal(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	c := core.ConversationKey{Platform: "slack", Channel: "C1"}
	wantJ := []core.JournalEntry{{TurnID: "t1", Conv: c, MessageID: "m1", Reply: core.Shown{Ref: core.MessageRef{Conv: c, ID: "r1"}}, StartedAt: t0}}
	if diff := cmp.Diff(wantJ, j); diff != "" {
		t.Errorf("v1 journal after migration (-want +got):\n%s", diff)
	}
	var marker string
	s.db.View(func(tx *bolt.Tx) error {
		marker = string(tx.Bucket(bucketMeta).Get(keySchema))
		return nil
	})
	if want := schemaMarker(schemaVersion()); marker != want {
		t.Errorf("schema marker after migration = %q, want %s", marker, want)
	}
}

// A schema 4 file's grants named no person, so nobody can tell whose they
// were: schema 5 drops them, and grants are per person from then on.
func TestMigrateV4DropsUnownedGrants(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v4.db")
	withBolt(t, path, func(tx *bolt.Tx) error {
		for _, m := range migrations[:4] {
			if err := m(tx); err != nil {
				return err
			}
		}
		// A schema 4 grant: conversation, session, then the tool.
		if err := tx.Bucket(bucketGrants).Put(append(grantPrefix(convA, "default"), "Bash"...), []byte(`{"v":1}`)); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keySchema, []byte("agentbridge/4"))
	})
	s := openAt(t, path, Options{})
	ctx := t.Context()
	n := 0
	s.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketGrants).Stats().KeyN
		return nil
	})
	if n != 0 {
		t.Errorf("%d grants after migration; want the unowned one dropped", n)
	}
	if err := s.Grant(ctx, convA, "default", "alice", "Bash"); err != nil {
		t.Fatal(err)
	}
	for user, want := range map[string]bool{"alice": true, "bob": false, "": false} {
		if ok, err := s.Granted(ctx, convA, "default", user, "Bash"); err != nil || ok != want {
			t.Errorf("Granted for %q = %v, %v; want %v", user, ok, err, want)
		}
	}
}
