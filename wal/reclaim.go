package wal

import (
	"errors"
	"io/fs"
	"os"
	"time"
)

// Reclaiming the space of a truncation, at a cheap moment.
//
// Badger's DropPrefix blocks every write while it runs. It first flushes
// every unflushed memtable to a table (even one its background flusher
// is already writing), then compacts ALL of level 0 into level 1 if level
// 0 holds any table, then rewrites the tables of lower levels that hold
// dropped keys. Run at every truncation that passes a bucket, as binlogd's
// log retention does every few seconds under load, it blocked writes for
// 0.6-0.8 s each time (paxosbench -compact 1s: 4-5 drops per node in
// 40 s, 2.6-4.3 s in all). A truncation only needs its FirstIndex
// durable: everything below is unreadable from then on. So the drop waits
// for a moment when most of that work is already done:
//
//   - Badger has flushed the previous memtable and the current one is at
//     most a quarter full (its fill bound), so the forced flush is small;
//   - level 0 is empty: Badger's own compaction has just moved it down,
//     which it does every NumLevelZeroTables (4) memtables under load;
//   - at least reclaimRotations memtables have passed since the last
//     drop, so one drop takes many buckets at once.
//
// What is left is reading the dropped tables of the lower levels once,
// which a drop cannot avoid. Options.ReclaimDelay (1 minute) bounds the
// wait: under a light load level 0 may not fill for long, and under a
// heavy one new flushes may keep it from ever being empty; then one drop
// a minute pays the full price, still far less often than one per
// truncation. ReclaimNow drops at once, for a caller that needs the
// space now (binlogd over log_retention_bytes); a negative ReclaimDelay
// makes every truncation do so. Drops run in the commit goroutine between
// groups, with none in flight. Open schedules a drop below FirstIndex, so
// what a crash left behind is reclaimed too.

const (
	reclaimRotations  = 4
	reclaimCheckEvery = 10 * time.Millisecond
)

// dropState is the pending space reclaim (commit goroutine only).
type dropState struct {
	pending uint64    // drop every bucket below this one
	done    uint64    // every bucket below this one was dropped
	since   time.Time // when the oldest undone truncation asked
	// rotationsAt is Stats.Rotations at the last drop.
	rotationsAt int64
	checked     time.Time // when Badger's flushes were last looked at
}

// ReclaimNow drops what earlier truncations left on disk, now, rather
// than at a cheap moment; it returns when that is done. Errors as for
// Save, or the drop's (the log stays usable then).
func (l *Log) ReclaimNow() error {
	return l.submit(&op{reclaimNow: true})
}

// reclaimBelow schedules dropping every bucket below bucket `below` and
// drops now if that is due (commit goroutine).
func (l *Log) reclaimBelow(below uint64) {
	if below > l.drop.pending {
		if l.drop.pending <= l.drop.done {
			l.drop.since = time.Now()
		}
		l.drop.pending = below
	}
	l.maybeReclaim(false)
}

// maybeReclaim runs the pending drop if it is due, or if force (commit
// goroutine, between groups).
func (l *Log) maybeReclaim(force bool) error {
	if l.drop.pending <= l.drop.done || !(force || l.reclaimDue(time.Now())) {
		return nil
	}
	l.inflight.Wait()
	if err := l.failure(); err != nil {
		return err
	}
	err := l.timedDrop(l.drop.pending)
	l.followRotation()
	l.drop.rotationsAt = l.stats.rotations.Load()
	if err != nil {
		l.drop.since = time.Now() // retried after another ReclaimDelay at most
		l.opts.Logger.Warn("wal: dropping truncated buckets", "dir", l.dir, "below_bucket", l.drop.pending, "err", err)
		return err
	}
	l.drop.done = l.drop.pending
	return nil
}

func (l *Log) reclaimDue(now time.Time) bool {
	if d := l.opts.ReclaimDelay; d < 0 || now.Sub(l.drop.since) >= d {
		return true
	}
	l.mem.mu.Lock()
	fill, fid := l.mem.fill.max(), l.mem.fid
	l.mem.mu.Unlock()
	if l.stats.rotations.Load()-l.drop.rotationsAt < reclaimRotations || fill > l.opts.MemTableSize/4 {
		return false
	}
	// A stat and Badger's level info on every batch would cost the hot
	// path; Badger's state moves on a scale of tens of ms.
	if now.Sub(l.drop.checked) < reclaimCheckEvery {
		return false
	}
	l.drop.checked = now
	return l.previousMemFlushed(fid) && l.levelZeroEmpty()
}

// previousMemFlushed reports whether Badger flushed the memtable before
// fid (its file is deleted once it is a table).
func (l *Log) previousMemFlushed(fid uint64) bool {
	if fid == 0 {
		return true
	}
	_, err := os.Stat(l.memPath(fid - 1))
	return errors.Is(err, fs.ErrNotExist)
}

// levelZeroEmpty reports whether Badger's level 0 holds no table.
func (l *Log) levelZeroEmpty() bool {
	lv := l.db.Levels()
	return len(lv) > 0 && lv[0].NumTables == 0
}
