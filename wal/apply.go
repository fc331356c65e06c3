package wal

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// Applying frames to Badger: after a group's frame is durable in its
// segment, its entries go into Badger, each accepted record as a
// reference into the segment. Durable groups are held (their records
// readable from the overlay) until Options.ApplyGroups of them or
// applyHeldBytes of frames are waiting, and then go in as one
// transaction. Why: a Badger commit per group (a hand-off to Badger's
// writer goroutine, a memtable insert of the chosen index and segment
// position per group) was about a tenth of a binlogd's CPU under load,
// at one group per Paxos value (issue 19). Badger itself is never synced
// per group: the segments are the write-ahead log, and Open replays the
// frames after m/segpos, the end of the last frame Badger holds.
//
// For that replay to be enough, what Badger keeps after a crash must be
// the effect of a PREFIX of the applied frames. Badger replays each
// memtable file up to its first torn transaction, and every file on its
// own, so an older memtable file must be durable before a newer one
// receives anything: an apply that may rotate the memtable (memtable.go's
// fill bound) first fdatasyncs the current file. Truncations and segment
// collection make everything applied durable (syncBadger).
//
// The apply path runs in the completer goroutine, or in the commit
// goroutine when no group is in flight, or in Open; it owns l.ahs,
// l.apos, l.pending and the memtable tracking (l.mem, whose lock is only
// for reclaim.go's look at it).

// applyFrame writes es, found in segment end.seg at value offsets refs,
// into Badger, with m/segpos = end (replay: one frame at a time).
func (l *Log) applyFrame(es []entry, refs []uint64, end segPos) error {
	b := l.newFrameTxn(end.seg)
	if err := b.add(es, refs); err != nil {
		return err
	}
	return l.writeFrames(b, end)
}

// frameTxn gathers the Badger writes of consecutive frames of one segment
// for one transaction. Accepted records below FirstIndex are skipped;
// metadata only ever rises (a replayed frame may be older than what a
// truncation wrote since), and only its last record per key is kept.
type frameTxn struct {
	hs             HardState
	seg            uint64
	segMax, newMax uint64
	out            []entry
	meta           [4]int // position in out of the promised, chosen, applied and membership record (-1: none)
	size, count    int64  // Badger's estimate of the frames' own entries
	// marked: a frame carried m/membership (membership.go).
	marked bool
}

func (l *Log) newFrameTxn(seg uint64) *frameTxn {
	m := l.segs.maxOf(seg)
	return &frameTxn{hs: l.ahs, seg: seg, segMax: m, newMax: m, meta: [4]int{-1, -1, -1, -1}}
}

// putMeta adds metadata record e, replacing an earlier one of its key.
func (b *frameTxn) putMeta(slot int, e entry) {
	if i := b.meta[slot]; i >= 0 {
		b.out[i] = e
		return
	}
	b.meta[slot] = len(b.out)
	b.out = append(b.out, e)
}

// add takes the writes of one frame: es at value offsets refs.
func (b *frameTxn) add(es []entry, refs []uint64) error {
	hs := &b.hs
	for i, e := range es {
		if index, ok := indexOfKey(e.key); ok {
			if index < hs.FirstIndex {
				continue
			}
			b.out = append(b.out, entry{e.key, encodeRef(e.key, b.seg, refs[i], len(e.val))})
			b.newMax = max(b.newMax, index)
			continue
		}
		switch {
		case bytes.Equal(e.key, keyPromised):
			v, err := decodeBallot(keyPromised, e.val)
			if err != nil {
				return err
			}
			if !hs.Promised.Less(v) {
				continue
			}
			hs.Promised = v
			b.putMeta(0, e)
		case bytes.Equal(e.key, keyChosen):
			c, err := decodeUint(keyChosen, e.val, kindChosen)
			if err != nil {
				return err
			}
			if c <= hs.Chosen {
				continue
			}
			hs.Chosen = c
			b.putMeta(1, e)
		case bytes.Equal(e.key, keyApplied):
			a, snap, err := decodeApplied(e.val)
			if err != nil {
				return err
			}
			if a < hs.Applied {
				continue
			}
			hs.Applied, hs.Snapshot = a, snap
			if hs.Chosen < a {
				hs.Chosen = a
				b.putMeta(1, entry{keyChosen, encodeUint(keyChosen, kindChosen, a)})
			}
			b.putMeta(2, e)
		case bytes.Equal(e.key, keyMembership):
			// A binary from before the marker (December 2026) fails
			// here with "unexpected key" if it must replay this frame:
			// a newer one crashed before applying it to Badger, and the
			// older one was started on its log. A clean Close, or any
			// Open by a newer binary, applies it (no compatibility
			// machinery: downgrades are not supported across it).
			if err := checkMembership(e.val); err != nil {
				return err
			}
			b.marked = true
			b.putMeta(3, e)
		default:
			return fmt.Errorf("%w: unexpected key %q in a frame", ErrCorrupt, e.key)
		}
	}
	return nil
}

// writeFrames commits b with m/segpos = end, the end of its last frame.
func (l *Log) writeFrames(b *frameTxn, end segPos) error {
	out := append(b.out, entry{keySegPos, encodeSegPos(end)})
	if b.newMax > b.segMax {
		out = append(out, entry{segMaxKey(end.seg), encodeUint(segMaxKey(end.seg), kindSegMax, b.newMax)})
	}
	if err := l.writeBadger(out); err != nil {
		return err
	}
	if b.newMax > b.segMax {
		l.segs.setMax(end.seg, b.newMax)
	}
	l.ahs, l.apos = b.hs, end
	if b.marked { // applied frames are durable
		l.setMembershipSaved()
	}
	return nil
}

// applyGroups applies durable groups gs, oldest first, as few Badger
// transactions as fit: one per run of groups in one segment whose entries
// fit one transaction together.
func (l *Log) applyGroups(gs []*group) error {
	for len(gs) > 0 {
		b := l.newFrameTxn(gs[0].seg)
		n := 0
		for ; n < len(gs) && gs[n].seg == b.seg; n++ {
			var size, count int64
			for _, e := range gs[n].entries {
				size += l.entrySize(len(e.key), len(e.val))
				count++
			}
			if n > 0 && (b.size+size+metaReserveSize > l.maxTxnSize || b.count+count+metaReserveCount > l.maxTxnCount) {
				break
			}
			if err := b.add(gs[n].entries, gs[n].refs); err != nil {
				return err
			}
			b.size, b.count = b.size+size, b.count+count
		}
		if err := l.writeFrames(b, segPos{b.seg, gs[n-1].end}); err != nil {
			return err
		}
		gs = gs[n:]
	}
	return nil
}

// writeBadger commits es (a nil value deletes the key) in one Badger
// transaction, first syncing the current memtable file if the write may
// start a new one.
func (l *Log) writeBadger(es []entry) error {
	if len(es) == 0 {
		return nil
	}
	cost := fillBound{file: fillPerTxn}
	for _, e := range es {
		cost.addEntry(e.key, e.val)
	}
	l.mem.mu.Lock()
	mayRotate := l.mem.fill.full(l.opts.MemTableSize)
	fid := l.mem.fid
	l.mem.mu.Unlock()
	if mayRotate && !l.opts.NoSync {
		l.stats.syncs.Add(1)
		if err := l.syncMemFile(fid); err != nil {
			return err
		}
	}
	txn := l.db.NewTransaction(true)
	defer txn.Discard()
	for _, e := range es {
		var err error
		if e.val == nil {
			err = txn.Delete(e.key)
		} else {
			err = txn.Set(e.key, e.val)
		}
		if err != nil {
			return fmt.Errorf("wal: write %x: %w", e.key, err)
		}
	}
	if err := txn.Commit(); err != nil {
		return fmt.Errorf("wal: commit: %w", err)
	}
	l.stats.txns.Add(1)
	l.noteWrite(cost, mayRotate)
	return nil
}

// noteWrite follows Badger's memtable after a write of cost.
func (l *Log) noteWrite(cost fillBound, mayRotate bool) {
	l.mem.mu.Lock()
	defer l.mem.mu.Unlock()
	if l.followRotationLocked() {
		if !mayRotate {
			// The model in memtable.go is wrong (a Badger change?): the
			// previous file may hold an unsynced transaction.
			l.stats.boundMisses.Add(1)
			l.opts.Logger.Error("wal: Badger rotated its memtable below the fill bound",
				"dir", l.dir, "bound", l.mem.fill.max(), "memtable", l.opts.MemTableSize)
		}
		l.mem.fill = newFill(fillBase)
	}
	l.mem.fill.arena += cost.arena
	l.mem.fill.file += cost.file
}

// applyPending applies the held groups (lazy ones the caller has made
// durable, and synced ones held to share a transaction) and empties the
// overlay.
func (l *Log) applyPending() error {
	if err := l.applyGroups(l.pending); err != nil {
		return err
	}
	l.pending, l.heldBytes = nil, 0
	l.ov.mu.Lock()
	l.ov.recs = nil
	l.ov.mu.Unlock()
	return nil
}

// holdLazy keeps group g unapplied, its accepted records readable
// meanwhile from the overlay: a lazy group until a sync covers it, a
// synced one until enough are held to share a transaction (settle).
func (l *Log) holdLazy(g *group) {
	l.pending = append(l.pending, g)
	l.heldBytes += int64(frameSize(g.entries))
	l.ov.mu.Lock()
	defer l.ov.mu.Unlock()
	if l.ov.recs == nil {
		l.ov.recs = map[uint64][]byte{}
	}
	for _, e := range g.entries {
		if index, ok := indexOfKey(e.key); ok {
			l.ov.recs[index] = e.val
		}
	}
}

// overlayGet returns the record of index held by a group not yet
// applied.
func (l *Log) overlayGet(index uint64) ([]byte, bool) {
	l.ov.mu.RLock()
	defer l.ov.mu.RUnlock()
	v, ok := l.ov.recs[index]
	return v, ok
}

// overlayRange returns the overlay's records with index in [from, to].
func (l *Log) overlayRange(from, to uint64) map[uint64][]byte {
	l.ov.mu.RLock()
	defer l.ov.mu.RUnlock()
	var out map[uint64][]byte
	for i, v := range l.ov.recs {
		if i >= from && i <= to {
			if out == nil {
				out = map[uint64][]byte{}
			}
			out[i] = v
		}
	}
	return out
}

// flushPending makes the pending lazy groups durable and applies them
// (commit goroutine, nothing in flight).
func (l *Log) flushPending() error {
	if len(l.pending) == 0 {
		return nil
	}
	if err := l.failure(); err != nil {
		// Their segment's durability is unknown: Badger must not get
		// ahead of it. Open replays them if they are there.
		return fmt.Errorf("%w: %w", ErrFailed, err)
	}
	if err := l.syncLazy(); err != nil {
		return err
	}
	if err := l.applyPending(); err != nil {
		return l.fail(err)
	}
	return nil
}

// syncBadger makes everything applied to Badger durable: every memtable
// file, oldest first, then Badger's own Sync (the current memtable again
// and the value log, where large snapshots live).
func (l *Log) syncBadger() error {
	if l.opts.NoSync {
		return nil
	}
	fids, err := memFids(l.dir)
	if err != nil {
		return err
	}
	for _, fid := range fids {
		l.stats.syncs.Add(1)
		if err := l.syncMemFile(fid); err != nil {
			return err
		}
	}
	l.stats.syncs.Add(1)
	if err := l.db.Sync(); err != nil {
		return fmt.Errorf("wal: sync: %w", err)
	}
	return nil
}

// fail makes err sticky (see ErrFailed) and returns it wrapped.
func (l *Log) fail(err error) error {
	l.mu.Lock()
	if l.failed == nil {
		l.failed = err
		l.opts.Logger.Error("wal: write failed; log unusable until reopened", "dir", l.dir, "err", err)
	}
	l.mu.Unlock()
	return fmt.Errorf("%w: %w", ErrFailed, err)
}

// loadSegMax reads every m/segmax/<id> record.
func loadSegMax(txn *badger.Txn) (map[uint64]uint64, error) {
	out := map[uint64]uint64{}
	it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: true, Prefix: prefixSegMax})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		k := it.Item().KeyCopy(nil)
		if len(k) != len(prefixSegMax)+8 {
			return nil, fmt.Errorf("%w: malformed key %x", ErrCorrupt, k)
		}
		v, err := it.Item().ValueCopy(nil)
		if err != nil {
			return nil, fmt.Errorf("wal: read %s: %w", k, err)
		}
		m, err := decodeUint(k, v, kindSegMax)
		if err != nil {
			return nil, err
		}
		out[binary.BigEndian.Uint64(k[len(prefixSegMax):])] = m
	}
	return out, nil
}
