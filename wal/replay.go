package wal

import (
	"fmt"
	"os"
	"slices"

	"github.com/dgraph-io/badger/v4"
)

// openSegments opens the segment files, replays into Badger the frames
// after m/segpos (the groups a crash kept from Badger's memtables), cuts
// off a torn tail of the newest segment, starts a fresh segment for
// writes and deletes the segments nothing refers to. It runs in Open,
// after load, and leaves l.hs and l.last as Badger holds them after the
// replay.
func (l *Log) openSegments() error {
	l.ahs = l.hs
	var pos segPos
	var havePos bool
	err := l.db.View(func(txn *badger.Txn) error {
		rec, ok, err := getValue(txn, keySegPos)
		if err != nil || !ok {
			return err
		}
		havePos = true
		if pos, err = decodeSegPos(rec); err != nil {
			return err
		}
		m, err := loadSegMax(txn)
		l.segs.maxIndex = m
		return err
	})
	if err != nil {
		return err
	}
	ids, err := segFiles(l.dir)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := l.segs.openMode(id, l.readOnly); err != nil {
			return err
		}
	}
	if havePos && !slices.Contains(ids, pos.seg) {
		return fmt.Errorf("%w: segment %d, where the log's replay starts (m/segpos), is missing", ErrCorrupt, pos.seg)
	}
	l.apos = pos
	// What a process crash left in the page cache is whole but may not be
	// on disk yet: sync it before Badger gets it, or a power cut later
	// could keep Badger's copy and lose the segment's.
	for _, id := range ids {
		if (!havePos || id >= pos.seg) && !l.opts.NoSync && !l.readOnly {
			if err := fdatasync(l.segs.files[id]); err != nil {
				return fmt.Errorf("wal: sync segment %d: %w", id, err)
			}
		}
	}
	replayed := 0
	for i, id := range ids {
		if havePos && id < pos.seg {
			continue
		}
		off := uint64(0)
		if havePos && id == pos.seg {
			off = pos.off
		}
		n, err := l.replaySegment(id, off, i == len(ids)-1)
		if err != nil {
			return err
		}
		replayed += n
	}
	if replayed > 0 {
		l.opts.Logger.Info("wal: replayed groups Badger had not kept", "dir", l.dir, "groups", replayed)
	}
	l.hs = l.ahs
	if err := l.db.View(func(txn *badger.Txn) (err error) {
		l.last, err = lastAccepted(txn)
		return err
	}); err != nil {
		return err
	}
	if l.readOnly { // readonly.go: no segment to write to, nothing to delete
		l.last = max(l.last, l.ovLast)
		return nil
	}
	next := uint64(1)
	if len(ids) > 0 {
		next = ids[len(ids)-1] + 1
		if fi, err := l.segs.files[next-1].Stat(); err == nil && fi.Size() == 0 {
			next-- // an empty newest segment (an Open or a rotation without writes after it) is reused
		}
	}
	var f *os.File
	if f = l.segs.files[next]; f == nil {
		if f, err = l.segs.create(next); err != nil {
			return err
		}
	}
	l.segID, l.segFile, l.segOff = next, f, 0
	l.stats.segments.Add(1)
	l.collectSegments()
	return l.failure()
}

// replaySegment applies the frames of segment id from off on and returns
// how many it applied. Where the frames stop before the end of the file,
// walkSegment (scan.go) tells a torn tail from damage: damage (a valid
// frame after the bad bytes) fails Open with a *DamageError in any
// segment. A torn tail of the newest segment (last) was never answered (a
// group is answered after its sync, which covers every earlier frame) and
// is cut off. In an older segment, synced before the next one began, bad
// bytes are corruption; zeros up to its end are left and logged (a log
// written before torn tails of zeros were cut may hold them).
func (l *Log) replaySegment(id, off uint64, last bool) (int, error) {
	f := l.segs.files[id]
	path := l.segs.path(id)
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("wal: stat segment %d: %w", id, err)
	}
	if uint64(fi.Size()) < off {
		return 0, fmt.Errorf("%w: segment %d (file %s) is %d bytes, the log's replay starts at %d: answered data is missing", ErrCorrupt, id, path, fi.Size(), off)
	}
	n := 0
	apply := l.applyFrame
	if l.readOnly {
		apply = l.holdReplayed // readonly.go
	}
	tail, err := walkSegment(f, path, uint64(fi.Size()), id, off, func(es []entry, refs []uint64, next uint64) error {
		if err := apply(es, refs, segPos{id, next}); err != nil {
			return fmt.Errorf("wal: replay segment %d at offset %d: %w", id, off, err)
		}
		n++
		off = next
		return nil
	})
	switch {
	case err != nil:
		return n, err
	case tail == nil:
		return n, nil
	case last && l.readOnly:
		l.opts.Logger.Info("wal: a torn tail (groups never answered) left as is: opened read-only",
			"dir", l.dir, "segment", path, "offset", tail.off, "bytes", fi.Size()-int64(tail.off), "reason", tail.reason)
		return n, nil
	case last:
		l.opts.Logger.Warn("wal: cutting off a torn tail (groups never answered; nothing valid follows)",
			"dir", l.dir, "segment", path, "offset", tail.off, "bytes", fi.Size()-int64(tail.off), "reason", tail.reason)
		if err := f.Truncate(int64(tail.off)); err != nil {
			return n, fmt.Errorf("wal: cut segment %d: %w", id, err)
		}
		if !l.opts.NoSync {
			if err := fdatasync(f); err != nil {
				return n, fmt.Errorf("wal: sync segment %d: %w", id, err)
			}
		}
		return n, nil
	case tail.zeros:
		l.opts.Logger.Warn("wal: zeros after the last frame of an older segment",
			"dir", l.dir, "segment", path, "offset", tail.off, "bytes", fi.Size()-int64(tail.off))
		return n, nil
	default:
		return n, fmt.Errorf("%w: segment %d (file %s) at offset %d: %w", ErrCorrupt, id, path, tail.off, tail.reason)
	}
}

// collectSegments deletes the segments below the one Badger has applied
// up to whose every instance is below FirstIndex, once Badger holds what
// they held durably (commit goroutine with nothing in flight: after a
// truncation and at a segment's rotation; or Open).
// A failure is logged (a failed sync also fails the log); the segments
// stay until the next try.
func (l *Log) collectSegments() {
	var dead []uint64
	for _, id := range l.segs.ids() {
		if id >= l.apos.seg || id >= l.segID {
			break
		}
		if l.segs.maxOf(id) < l.ahs.FirstIndex {
			dead = append(dead, id)
		}
	}
	if len(dead) == 0 {
		return
	}
	if err := l.syncBadger(); err != nil {
		l.fail(fmt.Errorf("sync before deleting segments: %w", err))
		return
	}
	var es []entry
	for _, id := range dead {
		if err := l.segs.remove(id); err != nil {
			l.opts.Logger.Warn("wal: deleting a segment", "dir", l.dir, "segment", id, "err", err)
			continue
		}
		es = append(es, entry{key: segMaxKey(id)}) // nil value: delete
	}
	if err := l.writeBadger(es); err != nil {
		l.fail(err)
	}
	l.opts.Logger.Debug("wal: deleted segments", "dir", l.dir, "segments", dead)
}
