package wal

import (
	"encoding/binary"
	"fmt"

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

// truncate is TruncateBelow in the commit goroutine.
func (l *Log) truncate(index uint64) error {
	if err := l.failure(); err != nil {
		return fmt.Errorf("%w: %w", ErrFailed, err)
	}
	hs := l.hs
	if index <= hs.FirstIndex {
		return nil
	}
	if index > hs.Applied+1 {
		return fmt.Errorf("%w: truncate below %d, above applied+1 (%d)", ErrInvalid, index, hs.Applied+1)
	}
	err := l.db.Update(func(txn *badger.Txn) error {
		return txn.Set(keyFirst, encodeUint(keyFirst, kindFirst, index))
	})
	if err == nil {
		err = l.sync()
	}
	if err != nil {
		l.mu.Lock()
		if l.failed == nil {
			l.failed = err
		}
		l.mu.Unlock()
		return fmt.Errorf("%w: truncate: %w", ErrFailed, err)
	}
	l.mu.Lock()
	l.hs.FirstIndex = index
	l.mu.Unlock()
	l.whs.FirstIndex = index
	// The new FirstIndex is durable, so what follows only reclaims space;
	// if it fails or we crash, the next truncation retries it.
	if err := l.dropBuckets(index >> bucketShift); err != nil {
		l.opts.Logger.Warn("wal: dropping truncated buckets", "dir", l.dir, "below", index, "err", err)
	}
	return nil
}

// dropBuckets drops every non-empty bucket below bucket `below`, finding
// them by seeking (empty ranges cost one seek, not one call per bucket).
func (l *Log) dropBuckets(below uint64) error {
	for {
		prefixes, err := l.nonEmptyBuckets(below, dropChunk)
		if err != nil || len(prefixes) == 0 {
			return err
		}
		if err := l.db.DropPrefix(prefixes...); err != nil {
			return fmt.Errorf("drop %d buckets: %w", len(prefixes), err)
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
