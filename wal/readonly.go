package wal

import (
	"fmt"
	"os"
)

// OpenReadOnly opens the log in dir for reading only (binlogd log): it
// writes nothing there. Badger is opened read-only and the segments for
// reading; the frames Badger lacks (after m/segpos) are replayed into the
// overlay that holds unapplied groups instead of into Badger; a torn tail
// is left where it is (Open cuts it). Reads, HardState and LastIndex
// answer as after Open; writes fail with ErrReadOnly. The directory's
// lock is taken as by Open, so a running node's log gives ErrLocked.
// Errors otherwise as for Open, and ErrInvalid when dir holds no log.
func OpenReadOnly(dir string, opts Options) (*Log, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	lk, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	db, release, err := openBadger(dir, opts, true) // badgeropen.go
	if err != nil {
		unlockDir(lk)
		return nil, err
	}
	l := &Log{dir: dir, opts: opts, db: db, lock: lk, readOnly: true, releaseRO: release,
		maxTxnSize: db.MaxBatchSize(), maxTxnCount: db.MaxBatchCount(), valueThreshold: db.Opts().ValueThreshold}
	l.segs = newSegments(dir)
	err = l.load()
	if err == nil {
		err = l.openSegments()
	}
	if err != nil {
		l.segs.closeAll()
		db.Close()
		release()
		unlockDir(lk)
		return nil, fmt.Errorf("wal: open %s: %w", dir, err)
	}
	return l, nil
}

// holdReplayed is applyFrame for a read-only log: the frame's accepted
// records go into the overlay (read.go reads them from there as from a
// group not yet applied), its metadata into l.ahs.
func (l *Log) holdReplayed(es []entry, refs []uint64, end segPos) error {
	b := l.newFrameTxn(end.seg)
	if err := b.add(es, refs); err != nil {
		return err
	}
	l.ov.mu.Lock()
	if l.ov.recs == nil {
		l.ov.recs = map[uint64][]byte{}
	}
	for _, e := range es {
		if index, ok := indexOfKey(e.key); ok && index >= b.hs.FirstIndex {
			l.ov.recs[index] = e.val
			l.ovLast = max(l.ovLast, index)
		}
	}
	l.ov.mu.Unlock()
	l.ahs, l.apos = b.hs, end
	if b.marked {
		l.setMembershipSaved()
	}
	return nil
}

// closeReadOnly is Close for a read-only log (no goroutines to stop).
func (l *Log) closeReadOnly() error {
	err := l.db.Close()
	l.releaseRO()
	if serr := l.segs.closeAll(); err == nil {
		err = serr
	}
	if uerr := unlockDir(l.lock); err == nil {
		err = uerr
	}
	if err != nil {
		return fmt.Errorf("wal: close %s: %w", l.dir, err)
	}
	return nil
}
