package store

import (
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// A schedule's last and skipped runs survive a reopen; an unknown schedule
// has no record.
func TestScheduleRunRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s := openAt(t, path, Options{})
	ctx := t.Context()
	if _, _, ok, err := s.ScheduleRun(ctx, "daily"); err != nil || ok {
		t.Fatalf("ScheduleRun of a new schedule = ok %v, %v; want no record", ok, err)
	}
	last := time.Date(2026, 3, 8, 9, 0, 0, 0, time.UTC)
	skipped := last.Add(24 * time.Hour)
	if err := s.SetScheduleRun(ctx, "daily", last, skipped); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openAt(t, path, Options{})
	gotLast, gotSkipped, ok, err := s.ScheduleRun(ctx, "daily")
	if err != nil || !ok || !gotLast.Equal(last) || !gotSkipped.Equal(skipped) {
		t.Errorf("ScheduleRun after reopen = %v, %v, %v, %v; want %v, %v", gotLast, gotSkipped, ok, err, last, skipped)
	}
	if err := s.SetScheduleRun(ctx, "daily", skipped, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, gotSkipped, _, _ := s.ScheduleRun(ctx, "daily"); !gotSkipped.IsZero() {
		t.Errorf("skipped = %v after clearing it; want zero", gotSkipped)
	}
}

// A schema 3 file (no schedules bucket) opens with an empty
// schedules bucket and its sessions intact.
func TestMigrateV3AddsSchedules(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v2.db")
	withBolt(t, path, func(tx *bolt.Tx) error {
		if err := createV1(tx); err != nil {
			return err
		}
		if err := sessionsPerProfile(tx); err != nil {
			return err
		}
		if err := usageLog(tx); err != nil {
			return err
		}
		if err := tx.Bucket(bucketSessions).Put(sessionKey(convA, "default"), []byte(`{"v":2,"name":"default","agents":{"demo":"d-1"},"profile":"demo","turns":1,"updated_at":"2026-02-03T04:05:06Z"}`)); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keySchema, []byte("agentbridge/3"))
	})
	s := openAt(t, path, Options{})
	sess, ok, err := s.Session(t.Context(), convA, "default")
	if err != nil || !ok || sess.AgentID("demo") != "d-1" {
		t.Errorf("session after migration = %+v, %v, %v", sess, ok, err)
	}
	if _, _, ok, err := s.ScheduleRun(t.Context(), "daily"); err != nil || ok {
		t.Errorf("ScheduleRun after migration = %v, %v; want an empty bucket", ok, err)
	}
	var marker string
	s.db.View(func(tx *bolt.Tx) error {
		marker = string(tx.Bucket(bucketMeta).Get(keySchema))
		return nil
	})
	if want := schemaMarker(schemaVersion()); marker != want {
		t.Errorf("marker = %q, want %s", marker, want)
	}
}
