package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// schemaPrefix starts the schema marker; the number after it is the schema
// version. A store file without the marker belongs to someone else.
const schemaPrefix = "agentbridge/"

// Bucket names and the meta key of the schema marker.
var (
	bucketMeta     = []byte("meta")
	bucketSessions = []byte("sessions")
	bucketActive   = []byte("active")
	bucketSeen     = []byte("seen")
	bucketGrants   = []byte("grants")
	bucketJournal  = []byte("journal")
	bucketCursors  = []byte("cursors")
	bucketUsage    = []byte("usage")     // schema 3
	bucketSchedule = []byte("schedules") // schema 4
	bucketRetries  = []byte("retries")   // schema 6
	keySchema      = []byte("schema")

	// v1Buckets are the buckets of schema 1 besides meta.
	v1Buckets = [][]byte{bucketSessions, bucketActive, bucketSeen, bucketGrants, bucketJournal, bucketCursors}
	// dataBuckets are the buckets every current store holds besides meta.
	dataBuckets = append(v1Buckets[:len(v1Buckets):len(v1Buckets)], bucketUsage, bucketSchedule, bucketRetries)
)

// migrations[i] upgrades a store from schema version i to i+1; version 0 is
// a bbolt file without any bucket (a new file). All pending migrations run
// in one transaction on Open, so a crash leaves the file at its old version.
var migrations = []func(tx *bolt.Tx) error{
	createV1,
	sessionsPerProfile,
	usageLog,
	addSchedules,
	grantsPerUser,
	addRetries,
}

// schemaVersion is the version this code writes.
func schemaVersion() int { return len(migrations) }

// schemaMarker is the marker of version v.
func schemaMarker(v int) string { return schemaPrefix + strconv.Itoa(v) }

// createV1 creates the buckets of schema version 1.
func createV1(tx *bolt.Tx) error {
	for _, name := range append([][]byte{bucketMeta}, v1Buckets...) {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	return nil
}

// sessionsPerProfile (schema 2) rewrites every session record from one
// agent id to an id per profile (sessionRecV1.upgrade). Journal records
// only gained optional fields and stay as they are.
func sessionsPerProfile(tx *bolt.Tx) error {
	b := tx.Bucket(bucketSessions)
	type kv struct{ k, v []byte }
	var out []kv
	err := b.ForEach(func(k, v []byte) error {
		var old sessionRecV1
		if err := json.Unmarshal(v, &old); err != nil || old.V != 1 {
			return fmt.Errorf("%w: session %q: not a version 1 record", ErrCorrupt, k)
		}
		nv, err := encode(old.upgrade())
		if err != nil {
			return err
		}
		out = append(out, kv{bytes.Clone(k), nv})
		return nil
	})
	if err != nil {
		return err
	}
	// Written after the scan: putting under a cursor may skip keys.
	for _, r := range out {
		if err := b.Put(r.k, r.v); err != nil {
			return err
		}
	}
	return nil
}

// usageLog (schema 3) adds the bucket of usage events (RecordUsage);
// session records only gained an optional usage field.
func usageLog(tx *bolt.Tx) error {
	if _, err := tx.CreateBucketIfNotExists(bucketUsage); err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketUsage, err)
	}
	return nil
}

// addSchedules (schema 4) adds the bucket of each schedule's last run.
func addSchedules(tx *bolt.Tx) error {
	if _, err := tx.CreateBucketIfNotExists(bucketSchedule); err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketSchedule, err)
	}
	return nil
}

// grantsPerUser (schema 5) drops every "allow for this session" grant:
// grants now belong to the person who made them, and older ones do not say
// who that was (people are asked again).
func grantsPerUser(tx *bolt.Tx) error {
	if err := tx.DeleteBucket(bucketGrants); err != nil {
		return fmt.Errorf("drop bucket %s: %w", bucketGrants, err)
	}
	if _, err := tx.CreateBucket(bucketGrants); err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketGrants, err)
	}
	return nil
}

// addRetries (schema 6) adds the bucket of "↻ Retry" buttons offered
// after interrupted turns (RetryPut); journal records only gained optional
// fields.
func addRetries(tx *bolt.Tx) error {
	if _, err := tx.CreateBucketIfNotExists(bucketRetries); err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketRetries, err)
	}
	return nil
}

// readSchema returns the schema version of the store in tx: 0 for a bbolt
// file with no buckets at all, ErrForeign for one whose layout is not ours.
func readSchema(tx *bolt.Tx) (int, error) {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		var names []string
		err := tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			names = append(names, strconv.Quote(string(name)))
			return nil
		})
		if err != nil {
			return 0, err
		}
		if len(names) > 0 {
			return 0, fmt.Errorf("%w: no schema marker; buckets %s", ErrForeign, strings.Join(names, ", "))
		}
		return 0, nil
	}
	marker := string(meta.Get(keySchema))
	num, ok := strings.CutPrefix(marker, schemaPrefix)
	v, err := strconv.Atoi(num)
	if !ok || err != nil || v < 1 || strconv.Itoa(v) != num {
		return 0, fmt.Errorf("%w: schema marker %q", ErrForeign, marker)
	}
	return v, nil
}

// migrate brings the store in tx to schemaVersion and reports the version
// it found.
func migrate(tx *bolt.Tx) (from int, err error) {
	from, err = readSchema(tx)
	if err != nil {
		return 0, err
	}
	if from > schemaVersion() {
		return from, fmt.Errorf("%w: file has schema %d, this program knows up to %d", ErrNewerSchema, from, schemaVersion())
	}
	for v := from; v < schemaVersion(); v++ {
		if err := migrations[v](tx); err != nil {
			return from, fmt.Errorf("migrate schema %d to %d: %w", v, v+1, err)
		}
	}
	if from < schemaVersion() {
		if err := tx.Bucket(bucketMeta).Put(keySchema, []byte(schemaMarker(schemaVersion()))); err != nil {
			return from, fmt.Errorf("write schema marker: %w", err)
		}
	}
	for _, name := range dataBuckets {
		if tx.Bucket(name) == nil {
			return from, fmt.Errorf("%w: bucket %s missing", ErrCorrupt, name)
		}
	}
	return from, nil
}

// walk reads every key of every bucket so that a damaged page shows up on
// Open (as a panic the caller recovers into ErrCorrupt) instead of in the
// middle of a turn. It returns the number of keys read.
func walk(tx *bolt.Tx) (int, error) {
	n := 0
	var visit func(b *bolt.Bucket) error
	visit = func(b *bolt.Bucket) error {
		return b.ForEach(func(k, v []byte) error {
			n++
			if v == nil {
				if nb := b.Bucket(k); nb != nil {
					return visit(nb)
				}
			}
			return nil
		})
	}
	err := tx.ForEach(func(_ []byte, b *bolt.Bucket) error { return visit(b) })
	return n, err
}
