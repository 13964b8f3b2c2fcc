package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/agentbridge/agentbridge/core"
	bolt "go.etcd.io/bbolt"
)

// ActiveSession returns the active session name of conv, "" when none was
// chosen yet.
func (s *Store) ActiveSession(ctx context.Context, conv core.ConversationKey) (string, error) {
	var rec activeRec
	if _, err := s.lookup(ctx, "active session", bucketActive, convKey(conv), &rec); err != nil {
		return "", err
	}
	return rec.Name, nil
}

// SetActiveSession makes name the active session of conv; "" forgets the
// choice.
func (s *Store) SetActiveSession(ctx context.Context, conv core.ConversationKey, name string) error {
	return s.update(ctx, "set active session", func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketActive)
		if name == "" {
			return b.Delete(convKey(conv))
		}
		v, err := encode(activeRec{head: head{recordVersion}, Name: name})
		if err != nil {
			return err
		}
		return b.Put(convKey(conv), v)
	})
}

// Session returns conv's session called name; ok is false if there is none.
func (s *Store) Session(ctx context.Context, conv core.ConversationKey, name string) (core.Session, bool, error) {
	var rec sessionRec
	found, err := s.lookup(ctx, "session", bucketSessions, sessionKey(conv, name), &rec)
	if !found || err != nil {
		return core.Session{}, false, err
	}
	return rec.session(), true, nil
}

// PutSession creates or replaces conv's session sess.Name.
func (s *Store) PutSession(ctx context.Context, conv core.ConversationKey, sess core.Session) error {
	return s.batch(ctx, "put session", func(tx *bolt.Tx) error {
		return putSession(tx, conv, sess)
	})
}

func putSession(tx *bolt.Tx, conv core.ConversationKey, sess core.Session) error {
	v, err := encode(toSessionRec(sess))
	if err != nil {
		return err
	}
	return tx.Bucket(bucketSessions).Put(sessionKey(conv, sess.Name), v)
}

// Sessions lists conv's sessions ordered by name (byte order), nil when
// there are none.
func (s *Store) Sessions(ctx context.Context, conv core.ConversationKey) ([]core.Session, error) {
	var out []core.Session
	err := s.view(ctx, "sessions", func(tx *bolt.Tx) error {
		prefix := convKey(conv)
		c := tx.Bucket(bucketSessions).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var rec sessionRec
			if err := decode(v, &rec); err != nil {
				return fmt.Errorf("session %q: %w", k[len(prefix):], err)
			}
			out = append(out, rec.session())
		}
		return nil
	})
	return out, err
}

// ResetSession forgets the agent session ids of conv's session name, of
// every profile (its name, profile and turn count stay), and every tool
// grant made in it. A session that does not exist only loses its grants.
func (s *Store) ResetSession(ctx context.Context, conv core.ConversationKey, name string) error {
	return s.update(ctx, "reset session", func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketSessions).Get(sessionKey(conv, name)); v != nil {
			var rec sessionRec
			if err := decode(v, &rec); err != nil {
				return err
			}
			sess := rec.session()
			sess.Agents = nil
			if err := putSession(tx, conv, sess); err != nil {
				return err
			}
		}
		return deletePrefix(tx.Bucket(bucketGrants), grantPrefix(conv, name))
	})
}

// DeleteSession deletes conv's session name, with every tool grant made in
// it; found reports whether the session existed.
func (s *Store) DeleteSession(ctx context.Context, conv core.ConversationKey, name string) (found bool, err error) {
	err = s.update(ctx, "delete session", func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSessions)
		key := sessionKey(conv, name)
		if found = b.Get(key) != nil; found {
			if err := b.Delete(key); err != nil {
				return err
			}
		}
		return deletePrefix(tx.Bucket(bucketGrants), grantPrefix(conv, name))
	})
	return found, err
}

// deletePrefix deletes every key of b that starts with prefix. Keys are
// collected first: deleting under a bbolt cursor can skip the next key.
func deletePrefix(b *bolt.Bucket, prefix []byte) error {
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// MarkSeen records messageID of platform and reports whether it was already
// recorded less than ttl ago. An older record counts as unseen and is
// replaced. The check and the write share one write transaction, so of
// concurrent calls with one id exactly one reports false. Every pruneEvery
// calls it also drops ids whose ttl (as given when they were recorded) has
// passed.
func (s *Store) MarkSeen(ctx context.Context, platform, messageID string, ttl time.Duration) (seen bool, err error) {
	err = s.batch(ctx, "mark seen", func(tx *bolt.Tx) error {
		seen, err = s.markSeen(tx, platform, messageID, ttl)
		return err
	})
	return seen, err
}

// Accept records messageID as seen and, if it was new, journals e, in one
// transaction.
func (s *Store) Accept(ctx context.Context, platform, messageID string, ttl time.Duration, e core.JournalEntry) (seen bool, err error) {
	err = s.batch(ctx, "accept", func(tx *bolt.Tx) error {
		seen, err = s.markSeen(tx, platform, messageID, ttl)
		if err != nil || seen {
			return err
		}
		return journalPut(tx, e)
	})
	return seen, err
}

// markSeen is MarkSeen inside tx. It is idempotent, as batch requires.
func (s *Store) markSeen(tx *bolt.Tx, platform, messageID string, ttl time.Duration) (bool, error) {
	b := tx.Bucket(bucketSeen)
	key := seenKey(platform, messageID)
	now := s.now().UnixNano()
	if v := b.Get(key); v != nil {
		var rec seenRec
		if err := decode(v, &rec); err != nil {
			// A dedup cache heals itself: overwrite the bad record.
			s.log.Warn("store: replacing damaged seen record", "platform", platform, "id", messageID, "err", err)
		} else if now-rec.At < int64(ttl) {
			return true, nil
		}
	}
	exp := now + int64(ttl)
	if ttl > 0 && exp < now {
		exp = math.MaxInt64 // overflow: keep forever
	}
	v, err := encode(seenRec{head: head{recordVersion}, At: now, Exp: exp})
	if err != nil {
		return false, err
	}
	if err := b.Put(key, v); err != nil {
		return false, err
	}
	if s.marks.Add(1)%s.pruneEvery == 0 {
		_, err = s.prune(tx)
	}
	return false, err
}

// prune deletes the seen ids whose expiry has passed and returns how many.
func (s *Store) prune(tx *bolt.Tx) (int, error) {
	now := s.now().UnixNano()
	b := tx.Bucket(bucketSeen)
	var expired [][]byte
	err := b.ForEach(func(k, v []byte) error {
		var rec seenRec
		if decode(v, &rec) != nil || rec.Exp <= now {
			expired = append(expired, bytes.Clone(k))
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, k := range expired {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(expired), nil
}

// Grant remembers that tool may run without asking user in conv's
// session.
func (s *Store) Grant(ctx context.Context, conv core.ConversationKey, session, user, tool string) error {
	return s.update(ctx, "grant", func(tx *bolt.Tx) error {
		v, err := encode(grantRec{head: head{recordVersion}, At: s.now()})
		if err != nil {
			return err
		}
		return tx.Bucket(bucketGrants).Put(grantKey(conv, session, user, tool), v)
	})
}

// Granted reports whether Grant was called for conv's session, user and
// tool since the session was last reset.
func (s *Store) Granted(ctx context.Context, conv core.ConversationKey, session, user, tool string) (bool, error) {
	var ok bool
	err := s.view(ctx, "granted", func(tx *bolt.Tx) error {
		ok = tx.Bucket(bucketGrants).Get(grantKey(conv, session, user, tool)) != nil
		return nil
	})
	return ok, err
}

// JournalPut records a turn in flight, replacing the entry with the same
// TurnID (even if its StartedAt changed).
func (s *Store) JournalPut(ctx context.Context, e core.JournalEntry) error {
	return s.batch(ctx, "journal put", func(tx *bolt.Tx) error {
		return journalPut(tx, e)
	})
}

func journalPut(tx *bolt.Tx, e core.JournalEntry) error {
	b := tx.Bucket(bucketJournal)
	key := journalKey(e.StartedAt, e.TurnID)
	if err := deleteTurn(b, e.TurnID, key); err != nil {
		return err
	}
	v, err := encode(toJournalRec(e))
	if err != nil {
		return err
	}
	return b.Put(key, v)
}

// JournalDelete removes a finished turn; an unknown turn is not an error.
func (s *Store) JournalDelete(ctx context.Context, turnID string) error {
	return s.batch(ctx, "journal delete", func(tx *bolt.Tx) error {
		return deleteTurn(tx.Bucket(bucketJournal), turnID, nil)
	})
}

// deleteTurn deletes the journal entries of turnID except the one under
// keep. The journal holds only turns in flight, so a scan is cheap and
// spares an index that would have to be kept in step.
func deleteTurn(b *bolt.Bucket, turnID string, keep []byte) error {
	var keys [][]byte
	err := b.ForEach(func(k, _ []byte) error {
		if len(k) >= 12 && string(k[12:]) == turnID && !bytes.Equal(k, keep) {
			keys = append(keys, bytes.Clone(k))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// Journal lists the turns in flight, oldest first (ties by turn id).
func (s *Store) Journal(ctx context.Context) ([]core.JournalEntry, error) {
	var out []core.JournalEntry
	err := s.view(ctx, "journal", func(tx *bolt.Tx) error {
		return tx.Bucket(bucketJournal).ForEach(func(k, v []byte) error {
			var rec journalRec
			if err := decode(v, &rec); err != nil {
				return fmt.Errorf("journal entry %q: %w", k, err)
			}
			out = append(out, rec.entry())
			return nil
		})
	})
	return out, err
}

// RetryPut keeps r under token and drops the retries offered more than
// core.RetryKeep ago. Retries are few (one per interrupted turn), so the
// prune is a scan.
func (s *Store) RetryPut(ctx context.Context, token string, r core.Retry) error {
	return s.batch(ctx, "retry put", func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRetries)
		v, err := encode(toRetryRec(r))
		if err != nil {
			return err
		}
		if err := b.Put([]byte(token), v); err != nil {
			return err
		}
		limit := s.now().Add(-core.RetryKeep).UnixNano()
		var old [][]byte
		err = b.ForEach(func(k, v []byte) error {
			var rec retryRec
			if decode(v, &rec) != nil || rec.At < limit {
				old = append(old, bytes.Clone(k))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range old {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}

// Retry returns the retry kept under token; one offered more than
// core.RetryKeep ago counts as gone.
func (s *Store) Retry(ctx context.Context, token string) (core.Retry, bool, error) {
	var rec retryRec
	found, err := s.lookup(ctx, "retry", bucketRetries, []byte(token), &rec)
	if !found || err != nil || time.Unix(0, rec.At).Before(s.now().Add(-core.RetryKeep)) {
		return core.Retry{}, false, err
	}
	return rec.retry(), true, nil
}

// Cursor returns the adapter position saved under name, "" when none.
func (s *Store) Cursor(ctx context.Context, name string) (string, error) {
	var rec cursorRec
	if _, err := s.lookup(ctx, "cursor", bucketCursors, []byte(name), &rec); err != nil {
		return "", err
	}
	return rec.Value, nil
}

// lookup decodes the record stored under key in bucket into rec; found is
// false when there is none.
func (s *Store) lookup(ctx context.Context, op string, bucket, key []byte, rec versioned) (found bool, err error) {
	err = s.view(ctx, op, func(tx *bolt.Tx) error {
		v := tx.Bucket(bucket).Get(key)
		if v == nil {
			return nil
		}
		found = true
		return decode(v, rec)
	})
	return found, err
}

// SetCursor saves an adapter position under name, which must not be empty.
func (s *Store) SetCursor(ctx context.Context, name, value string) error {
	return s.update(ctx, "set cursor", func(tx *bolt.Tx) error {
		v, err := encode(cursorRec{head: head{recordVersion}, Value: value})
		if err != nil {
			return err
		}
		return tx.Bucket(bucketCursors).Put([]byte(name), v)
	})
}

// RecordUsage appends ev to the usage log, keyed by its time (and a
// sequence number, so events of one nanosecond stay apart), and drops
// events older than core.UsageWindow before it: the log holds about a
// day of turns.
func (s *Store) RecordUsage(ctx context.Context, ev core.UsageEvent) error {
	return s.batch(ctx, "record usage", func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketUsage)
		v, err := encode(usageEventRec{head: head{recordVersion}, At: ev.At.UnixNano(), Platform: ev.Platform, User: ev.User, Profile: ev.Profile, Usage: toUsageRec(ev.Usage)})
		if err != nil {
			return err
		}
		seq, err := b.NextSequence()
		if err != nil {
			return err
		}
		if err := b.Put(usageKey(ev.At, seq), v); err != nil {
			return err
		}
		return deleteBefore(b, usageKey(ev.At.Add(-core.UsageWindow), 0))
	})
}

// UsageSince returns the usage events at or after since, oldest first.
func (s *Store) UsageSince(ctx context.Context, since time.Time) ([]core.UsageEvent, error) {
	var out []core.UsageEvent
	err := s.view(ctx, "usage", func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketUsage).Cursor()
		for k, v := c.Seek(usageKey(since, 0)); k != nil; k, v = c.Next() {
			var rec usageEventRec
			if err := decode(v, &rec); err != nil {
				return fmt.Errorf("usage event %x: %w", k, err)
			}
			out = append(out, core.UsageEvent{At: time.Unix(0, rec.At), Platform: rec.Platform, User: rec.User, Profile: rec.Profile, Usage: rec.Usage.usage()})
		}
		return nil
	})
	return out, err
}

// usageKey orders usage events by time: big-endian Unix nanoseconds (times
// before 1970 count as 1970), then the bucket's sequence number.
func usageKey(at time.Time, seq uint64) []byte {
	var ns uint64
	if at.After(time.Unix(0, 0)) { // UnixNano of the zero time overflows
		ns = uint64(at.UnixNano())
	}
	k := binary.BigEndian.AppendUint64(nil, ns)
	return binary.BigEndian.AppendUint64(k, seq)
}

// deleteBefore deletes b's keys that sort before limit. Keys are collected
// first: deleting under a bbolt cursor can skip the next key.
func deleteBefore(b *bolt.Bucket, limit []byte) error {
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.First(); k != nil && bytes.Compare(k, limit) < 0; k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// ScheduleRun returns when the named schedule last ran (or was first
// seen) and the latest missed run it skipped; ok is false when the store
// has no record of it.
func (s *Store) ScheduleRun(ctx context.Context, name string) (last, skipped time.Time, ok bool, err error) {
	var rec scheduleRec
	found, err := s.lookup(ctx, "schedule run", bucketSchedule, []byte(name), &rec)
	if err != nil {
		return time.Time{}, time.Time{}, false, fmt.Errorf("schedule %q: %w", name, err)
	}
	return rec.Last, rec.Skipped, found, nil
}

// SetScheduleRun records the named schedule's last run and skipped run
// (zero for none).
func (s *Store) SetScheduleRun(ctx context.Context, name string, last, skipped time.Time) error {
	return s.update(ctx, "set schedule run", func(tx *bolt.Tx) error {
		v, err := encode(scheduleRec{head: head{recordVersion}, Last: last, Skipped: skipped})
		if err != nil {
			return err
		}
		return tx.Bucket(bucketSchedule).Put([]byte(name), v)
	})
}
