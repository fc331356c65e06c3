package wal

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// Log is the durable acceptor/learner state in one Badger directory. All
// methods are safe for concurrent use. Writes go through one commit
// goroutine (groupcommit.go); reads go straight to Badger.
type Log struct {
	dir  string
	opts Options
	// readOnly: opened by OpenReadOnly (readonly.go); nothing is written,
	// no goroutine runs, and enqueue refuses every write.
	readOnly bool
	// ovLast is the highest index replayed into the overlay by a
	// read-only open.
	ovLast uint64
	// releaseRO removes what a read-only Badger needed, after its Close.
	releaseRO func()
	db        *badger.DB
	lock      *os.File
	// syncer flushes segments on the commit path (syncer.go).
	syncer *syncer

	// maxTxnSize and maxTxnCount are Badger's per-transaction limits.
	maxTxnSize, maxTxnCount int64
	valueThreshold          int64

	// rw: readers hold it shared while they use db; Close takes it
	// exclusively to close db.
	rw sync.RWMutex

	mu     sync.Mutex
	closed bool
	failed error // sticky; see ErrFailed
	// hs is the HardState as of the last durable write. Only the commit
	// goroutine changes it.
	// Invariant: hs.Applied <= hs.Chosen; hs.FirstIndex-1 <= hs.Applied.
	hs HardState
	// last is the highest index with a stored accepted record (0: none).
	last uint64
	// membership: m/membership is durable (MembershipSaved; membership.go).
	membership bool
	queue      []*op

	// Owned by the commit goroutine: the state as last WRITTEN (not yet
	// durable while groups are in flight) and the segment written to.
	whs     HardState
	wlast   uint64
	wmarked bool // m/membership is written (membership.go)
	segs    *segments
	segID   uint64
	segFile *os.File
	segOff  uint64
	// lazyDirty: the last group written was lazy, so the segment holds
	// unsynced groups, lazyBytes of them (commit goroutine only).
	lazyDirty bool
	lazyBytes int64
	drop      dropState  // reclaim.go
	space     spaceGuard // space.go
	held      bool       // the commit goroutine holds a slot for its next group

	// Owned by the apply path (apply.go): Badger's state as applied, the
	// end of the last frame applied, the lazy groups answered but not
	// yet applied and the synced ones held to share a transaction (their
	// records readable from ov), and Badger's current
	// memtable file with an upper bound on its fill (memtable.go).
	ahs       HardState
	apos      segPos
	pending   []*group
	heldBytes int64 // frame bytes of pending
	// markUnsynced: a group answered unsynced carried m/membership
	// (completer only; membership.go).
	markUnsynced bool
	ov           struct {
		mu   sync.RWMutex
		recs map[uint64][]byte
	}
	mem struct {
		mu   sync.Mutex
		fid  uint64
		fill fillBound
	}

	slots    chan struct{}  // one per group written and not yet answered
	inflight sync.WaitGroup // groups written and not yet answered
	groups   chan *group    // to the completer, in write order

	kick chan struct{} // capacity 1: "queue is non-empty"
	done chan struct{} // closed when the completer exits (after the commit goroutine)

	stats struct {
		saves, groups, txns, syncs, pending atomic.Int64
		rotations, boundMisses              atomic.Int64 // memtable.go; for tests
		drops, dropNanos                    atomic.Int64 // reclaim.go
		segments                            atomic.Int64 // segment.go
	}
	syncTimes syncTimes // synctime.go
}

// Stats are counters since Open.
type Stats struct {
	Saves   int64 // Save and SaveApplied calls committed
	Groups  int64 // commit groups, each ended by one sync
	Txns    int64 // Badger transactions the groups were written in
	Syncs   int64 // fsyncs issued (groups plus truncations; 0 with NoSync)
	Pending int64 // write calls submitted and not yet answered
	Drops   int64 // drops of truncated buckets run (DropPrefix; reclaim.go)
	// Rotations counts the memtables Badger started (each one's
	// predecessor is flushed to a table in the background).
	Rotations int64
	// Segments counts the segment files started (one at Open, then one
	// per SegmentBytes written).
	Segments int64
	// DropTime is the time those drops blocked writes, in total.
	DropTime time.Duration
	// SyncTime is the time segment fdatasyncs took, in total; SyncHist
	// counts them per bucket of SyncBounds (the last: above every bound).
	SyncTime time.Duration
	SyncHist []int64
}

// Open opens or creates the log in dir. On an existing dir it restores
// the HardState and LastIndex; a record that fails its checks makes Open
// fail with ErrCorrupt. A dir held by another Log gives ErrLocked.
func Open(dir string, opts Options) (*Log, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if dir == "" {
		return nil, fmt.Errorf("%w: empty directory", ErrInvalid)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("wal: create %s: %w", dir, err)
	}
	lk, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	if err := freeSpace(dir, opts.MinFreeBytes); err != nil { // space.go
		unlockDir(lk)
		return nil, err
	}
	if err := dropEmptyBadgerFiles(dir, opts.Logger); err != nil { // powerloss.go
		unlockDir(lk)
		return nil, err
	}
	db, _, err := openBadger(dir, opts, false) // badgeropen.go; read-write: nothing to release
	if err != nil {
		unlockDir(lk)
		return nil, err
	}
	l := &Log{
		dir: dir, opts: opts, db: db, lock: lk,
		maxTxnSize:     db.MaxBatchSize(),
		maxTxnCount:    db.MaxBatchCount(),
		valueThreshold: db.Opts().ValueThreshold,
		kick:           make(chan struct{}, 1),
		done:           make(chan struct{}),
		slots:          make(chan struct{}, opts.MaxSyncsInFlight),
		groups:         make(chan *group, opts.MaxSyncsInFlight),
	}
	if err := l.load(); err != nil {
		db.Close()
		unlockDir(lk)
		return nil, fmt.Errorf("wal: open %s: %w", dir, err)
	}
	if l.mem.fid, err = newestMemFid(dir); err != nil {
		db.Close()
		unlockDir(lk)
		return nil, err
	}
	l.mem.fill = newFill(fillBase)
	l.segs = newSegments(dir)
	if err := l.openSegments(); err != nil {
		l.segs.closeAll()
		db.Close()
		unlockDir(lk)
		return nil, fmt.Errorf("wal: open %s: %w", dir, err)
	}
	l.whs, l.wlast = l.hs, l.last
	l.wmarked = l.membership // from Badger, or set by the replay
	l.syncer = newSyncer(opts.PlainSync, opts.NoSync, opts.Logger.With("dir", dir))
	// What a crash left below FirstIndex is reclaimed like a truncation's.
	l.drop = dropState{pending: l.hs.FirstIndex >> bucketShift, since: time.Now(), rotationsAt: -reclaimRotations}
	go l.run()
	go l.complete()
	return l, nil
}

// load reads the metadata records into l.hs and finds l.last; on a fresh
// directory it writes the format and first-index records.
func (l *Log) load() error {
	fresh := false
	err := l.db.View(func(txn *badger.Txn) error {
		rec, ok, err := getValue(txn, keyFormat)
		if err != nil {
			return err
		}
		if !ok {
			if anyKey(txn) {
				return corruptMeta(keyFormat, fmt.Errorf("%w: missing in a non-empty database", errBadRecord))
			}
			fresh = true
			return nil
		}
		if p, err := decodeRecord(keyFormat, rec, kindFormat); err != nil {
			return corruptMeta(keyFormat, err)
		} else if string(p) != string(formatMagic) {
			return corruptMeta(keyFormat, fmt.Errorf("%w: magic %q", errBadRecord, p))
		}
		if err := l.loadHardState(txn); err != nil {
			return err
		}
		l.membership, err = loadMembership(txn)
		return err
	})
	if err != nil {
		return err
	}
	if fresh && l.readOnly {
		return fmt.Errorf("%w: no log in %s", ErrInvalid, l.dir)
	}
	if fresh {
		l.hs = HardState{FirstIndex: 1}
		txn := l.db.NewTransaction(true)
		defer txn.Discard()
		for _, e := range []*badger.Entry{
			badger.NewEntry(keyFormat, encodeRecord(keyFormat, kindFormat, formatMagic)),
			badger.NewEntry(keyFirst, encodeUint(keyFirst, kindFirst, 1)),
		} {
			if err := txn.SetEntry(e); err != nil {
				return err
			}
		}
		if err := txn.Commit(); err != nil {
			return err
		}
		return l.db.Sync()
	}
	return nil
}

func (l *Log) loadHardState(txn *badger.Txn) error {
	var hs HardState
	if rec, ok, err := getValue(txn, keyPromised); err != nil {
		return err
	} else if ok {
		if hs.Promised, err = decodeBallot(keyPromised, rec); err != nil {
			return err
		}
	}
	if rec, ok, err := getValue(txn, keyChosen); err != nil {
		return err
	} else if ok {
		if hs.Chosen, err = decodeUint(keyChosen, rec, kindChosen); err != nil {
			return err
		}
	}
	if rec, ok, err := getValue(txn, keyApplied); err != nil {
		return err
	} else if ok {
		if hs.Applied, hs.Snapshot, err = decodeApplied(rec); err != nil {
			return err
		}
	}
	rec, ok, err := getValue(txn, keyFirst)
	if err != nil {
		return err
	}
	if !ok {
		return corruptMeta(keyFirst, fmt.Errorf("%w: missing", errBadRecord))
	}
	if hs.FirstIndex, err = decodeUint(keyFirst, rec, kindFirst); err != nil {
		return err
	}
	if rec, ok, err := getValue(txn, keyBase); err != nil {
		return err
	} else if ok {
		var at uint64
		if at, hs.Base, err = decodeSnapshotRecord(keyBase, kindBase, rec); err != nil {
			return err
		}
		if at != hs.FirstIndex-1 {
			return corruptMeta(keyBase, fmt.Errorf("%w: base at %d, first index %d", errBadRecord, at, hs.FirstIndex))
		}
		if len(hs.Base) == 0 {
			hs.Base = nil
		}
	}
	switch {
	case hs.FirstIndex == 0:
		return corruptMeta(keyFirst, fmt.Errorf("%w: first index 0", errBadRecord))
	case hs.Applied > hs.Chosen:
		return corruptMeta(keyApplied, fmt.Errorf("%w: applied %d above chosen %d", errBadRecord, hs.Applied, hs.Chosen))
	case hs.FirstIndex-1 > hs.Applied:
		return corruptMeta(keyFirst, fmt.Errorf("%w: first index %d above applied+1 (%d)", errBadRecord, hs.FirstIndex, hs.Applied+1))
	}
	last, err := lastAccepted(txn)
	if err != nil {
		return err
	}
	l.hs, l.last = hs, last
	return nil
}

// getValue returns a copy of key's value; ok=false if it is absent.
func getValue(txn *badger.Txn, key []byte) ([]byte, bool, error) {
	item, err := txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("wal: read %s: %w", key, err)
	}
	v, err := item.ValueCopy(nil)
	if err != nil {
		return nil, false, fmt.Errorf("wal: read %s: %w", key, err)
	}
	return v, true, nil
}

func anyKey(txn *badger.Txn) bool {
	it := txn.NewIterator(badger.IteratorOptions{})
	defer it.Close()
	it.Rewind()
	return it.Valid()
}

// lastAccepted returns the highest stored instance index, 0 if none.
func lastAccepted(txn *badger.Txn) (uint64, error) {
	it := txn.NewIterator(badger.IteratorOptions{Reverse: true, Prefix: []byte{prefixAccepted}})
	defer it.Close()
	seek := make([]byte, acceptedKeyLen)
	for i := range seek {
		seek[i] = 0xff
	}
	seek[0] = prefixAccepted
	it.Seek(seek)
	if !it.Valid() {
		return 0, nil
	}
	idx, ok := indexOfKey(it.Item().Key())
	if !ok {
		return 0, fmt.Errorf("%w: malformed key %x", ErrCorrupt, it.Item().Key())
	}
	return idx, nil
}

// HardState returns the state as of the last durable write. Snapshot is
// shared: callers must not modify it.
func (l *Log) HardState() HardState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hs
}

// LastIndex is the highest index with a stored accepted value, or
// FirstIndex-1 when that is higher (everything stored was truncated
// behind the snapshot). 0 on a fresh log.
func (l *Log) LastIndex() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return max(l.last, l.hs.FirstIndex-1)
}

// Stats returns the counters.
func (l *Log) Stats() Stats {
	st := Stats{
		Saves:     l.stats.saves.Load(),
		Groups:    l.stats.groups.Load(),
		Txns:      l.stats.txns.Load(),
		Syncs:     l.stats.syncs.Load(),
		Pending:   l.stats.pending.Load(),
		Drops:     l.stats.drops.Load(),
		Rotations: l.stats.rotations.Load(),
		Segments:  l.stats.segments.Load(),
		DropTime:  time.Duration(l.stats.dropNanos.Load()),
	}
	st.SyncTime, st.SyncHist = l.syncTimes.snapshot()
	return st
}

// Close waits for queued writes to finish, then closes Badger and
// releases the directory. Calls after Close return ErrClosed; Close
// itself is idempotent.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	if l.readOnly {
		return l.closeReadOnly()
	}
	l.signal()
	<-l.done
	l.syncer.close() // every group is answered: no sync is in flight
	l.rw.Lock()
	defer l.rw.Unlock()
	err := l.db.Close()
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

// usable reports why the log cannot serve a call, with l.mu held.
func (l *Log) usableLocked() error {
	if l.closed {
		return ErrClosed
	}
	if l.failed != nil {
		return fmt.Errorf("%w: %w", ErrFailed, l.failed)
	}
	return nil
}
