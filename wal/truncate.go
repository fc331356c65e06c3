package wal

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// dropChunk bounds how many bucket prefixes one DropPrefix call takes.
const dropChunk = 64

// TruncateBelow drops every instance below index, which becomes the new
// FirstIndex; Get and Range below it then return ErrCompacted. index must
// be at most Applied+1 (the snapshot must cover what is dropped), else
// ErrInvalid. An index at or below FirstIndex is a no-op.
//
// It runs in the commit goroutine, between groups: the new FirstIndex is
// written and synced first, then whole buckets below it are dropped with
// Badger's DropPrefix (see doc.go). Saves queued meanwhile wait for it.
func (l *Log) TruncateBelow(index uint64) error {
	return l.submit(&op{truncate: index})
}

// TruncateWithBase is TruncateBelow that also stores base, the state
// machine's snapshot right after index-1, in the same durable write as
// the new FirstIndex: HardState().Base then lets a reader or a lagging
// peer start at FirstIndex although everything below is gone. The same
// rules apply (index <= Applied+1; at or below FirstIndex: no-op).
func (l *Log) TruncateWithBase(index uint64, base []byte) error {
	if len(base) > maxValueLen {
		return fmt.Errorf("%w: base snapshot of %d bytes", ErrInvalid, len(base))
	}
	return l.submit(&op{truncate: index, base: append([]byte{}, base...)})
}

// InstallSnapshot records, in ONE durable write, that snap is the state
// machine's state right after index (a snapshot received from a peer):
// Applied (with Snapshot = snap) and Chosen rise to index if lower, and
// the log starts at index+1 with Base = snap. Everything stored below
// index+1 is dropped: a lagging acceptor may hold values there that were
// never chosen, and they must not be read as the log. An index whose
// successor is at or below FirstIndex is a no-op.
func (l *Log) InstallSnapshot(index uint64, snap []byte) error {
	if len(snap) > maxValueLen {
		return fmt.Errorf("%w: snapshot of %d bytes", ErrInvalid, len(snap))
	}
	return l.submit(&op{truncate: index + 1, base: append([]byte{}, snap...), install: true})
}

// truncate is TruncateBelow (TruncateWithBase, InstallSnapshot) in the
// commit goroutine.
func (l *Log) truncate(index uint64, base []byte, install bool) error {
	if err := l.failure(); err != nil {
		return fmt.Errorf("%w: %w", ErrFailed, err)
	}
	hs := l.hs
	if index <= hs.FirstIndex {
		return nil
	}
	raise := install && index-1 > hs.Applied
	if index > hs.Applied+1 && !raise {
		return fmt.Errorf("%w: truncate below %d, above applied+1 (%d)", ErrInvalid, index, hs.Applied+1)
	}
	// FirstIndex and its base change together: a base never describes
	// another first index.
	err := l.db.Update(func(txn *badger.Txn) error {
		if err := txn.Set(keyBase, encodeSnapshotRecord(keyBase, kindBase, index-1, base)); err != nil {
			return err
		}
		if raise {
			if err := txn.Set(keyApplied, encodeApplied(index-1, base)); err != nil {
				return err
			}
			if hs.Chosen < index-1 {
				if err := txn.Set(keyChosen, encodeUint(keyChosen, kindChosen, index-1)); err != nil {
					return err
				}
			}
		}
		return txn.Set(keyFirst, encodeUint(keyFirst, kindFirst, index))
	})
	// Durable with everything applied before it (syncBadger), so that
	// Open's replay never starts before a truncation.
	l.noteWrite(fillBound{fillTruncate, fillTruncate}, true)
	if err == nil {
		err = l.syncBadger()
	}
	if err != nil {
		return l.fail(fmt.Errorf("truncate: %w", err))
	}
	if len(base) == 0 {
		base = nil
	}
	apply := func(h *HardState) {
		h.FirstIndex, h.Base = index, base
		if raise {
			h.Applied, h.Snapshot = index-1, base
			h.Chosen = max(h.Chosen, index-1)
		}
	}
	l.mu.Lock()
	apply(&l.hs)
	l.mu.Unlock()
	apply(&l.whs)
	apply(&l.ahs)
	// The new FirstIndex is durable, so what follows only reclaims space:
	// the segments behind it at once, Badger's buckets at a cheap moment
	// (reclaim.go); a failed or lost drop is retried.
	l.collectSegments()
	l.reclaimBelow(index >> bucketShift)
	return nil
}

// timedDrop is dropBuckets, counted in Stats when it dropped anything.
// DropPrefix blocks every write while it flushes the memtable and
// compacts level 0 and the tables holding the buckets, all in the
// foreground: hundreds of ms under load (paxosbench -compact).
func (l *Log) timedDrop(below uint64) error {
	t0 := time.Now()
	dropped, err := l.dropBuckets(below)
	if dropped {
		l.stats.drops.Add(1)
		l.stats.dropNanos.Add(int64(time.Since(t0)))
	}
	return err
}

// dropBuckets drops every non-empty bucket below bucket `below`, finding
// them by seeking (empty ranges cost one seek, not one call per bucket).
// It reports whether it called DropPrefix.
func (l *Log) dropBuckets(below uint64) (dropped bool, err error) {
	for {
		prefixes, err := l.nonEmptyBuckets(below, dropChunk)
		if err != nil || len(prefixes) == 0 {
			return dropped, err
		}
		dropped = true
		if err := l.db.DropPrefix(prefixes...); err != nil {
			return dropped, fmt.Errorf("drop %d buckets: %w", len(prefixes), err)
		}
	}
}

// nonEmptyBuckets lists up to n prefixes of buckets below `below` that
// hold at least one key, lowest first.
func (l *Log) nonEmptyBuckets(below uint64, n int) ([][]byte, error) {
	var out [][]byte
	err := l.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{prefixAccepted}})
		defer it.Close()
		for it.Seek(bucketPrefix(0)); it.Valid() && len(out) < n; {
			k := it.Item().Key()
			if len(k) < len(bucketPrefix(0)) {
				return fmt.Errorf("malformed accepted key %x", k)
			}
			b := binary.BigEndian.Uint64(k[1:])
			if b >= below {
				return nil
			}
			out = append(out, bucketPrefix(b))
			it.Seek(bucketPrefix(b + 1))
		}
		return nil
	})
	return out, err
}
