package wal

import (
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// Group commit, pipelined. Callers encode their records (and CRCs) in
// their own goroutine, append an op to l.queue and wait on op.done. The
// commit goroutine takes what is queued (up to MaxGroupOps), writes as
// many ops as fit in ONE Badger transaction and hands the group to a sync
// goroutine; it then writes the next group while that one syncs, up to
// MaxSyncsInFlight groups. The completer answers groups strictly in order:
//
//	Save ─┐                      ┌─ write txn 1 ─▶ sync 1 ─────────┐
//	Save ─┼─▶ queue ─▶ commit ───┼─ write txn 2 ─▶ sync 2 ──────┐  │
//	Save ─┘     goroutine        └─ write txn 3 ─▶ sync 3 ─┐    │  │
//	                              completer: answer 1, then 2, then 3
//
// Why one transaction per group: a transaction is written whole into one
// memtable file and replayed whole or not at all. Why it is safe to write
// group k+1 before group k is synced (see doc.go for the full argument):
// k+1 is written only if it cannot rotate the memtable (fillBound), so
// both groups sit in the same memtable file, k before k+1; each group's
// sync is an fdatasync of the file it was written to (not Badger's Sync,
// which syncs whatever memtable is current and blocks writes meanwhile);
// and Badger's replay of a file stops at the first torn transaction, so
// after a crash a later group never survives without an earlier one.
// A write that might rotate, or that puts values in the value log, first
// waits until every earlier group is answered.
//
// The HardState seen by HardState() moves only when a group is answered,
// so it is durable except for what lazy saves (NoSync, or Chosen only)
// changed, which a crash may roll back to the last synced state (see
// Save). Reads (Get, Range) may see a Save's records before that Save
// returns; they are durable once it does, or once a later synced Save
// does for a lazy one.

// op is one queued write.
type op struct {
	accepted []record // pre-encoded accepted records
	promised *Ballot
	chosen   uint64
	applied  *appliedState
	truncate uint64 // >0: a TruncateBelow; nothing else is set but base
	base     []byte // TruncateWithBase: the snapshot after truncate-1
	install  bool   // InstallSnapshot: Applied may rise to truncate-1
	// reclaimNow: a ReclaimNow; nothing else is set
	reclaimNow bool
	// lazy: the op needs no sync of its own (see Save); a group of lazy
	// ops without value-log values skips the fdatasync.
	lazy bool

	size, count int64 // Badger's estimate of what this op adds to a txn
	vlog        bool  // some value goes to Badger's value log
	done        chan error
}

// group is one transaction on its way to disk.
type group struct {
	ops    []*op
	hs     HardState // after this group
	last   uint64
	vlog   bool
	lazy   bool   // every op is lazy and nothing went to the value log: no sync
	mem    uint64 // memtable file the transaction went to
	err    error  // write or sync error, set before synced is closed
	synced chan struct{}
}

type record struct {
	index    uint64
	key, val []byte
}

type appliedState struct {
	index    uint64
	snapshot []byte
}

// metaReserve is the txn room kept for the promised and chosen records.
const (
	metaReserveSize  = 256
	metaReserveCount = 4
)

// entrySize mirrors Badger's Txn size estimate (key, value or value
// pointer, two meta bytes, version).
func (l *Log) entrySize(keyLen, valLen int) int64 {
	v := int64(valLen)
	if v >= l.valueThreshold {
		v = 12
	}
	return int64(keyLen) + v + 2 + 10
}

func (l *Log) toValueLog(valLen int) bool { return int64(valLen) >= l.valueThreshold }

// Save writes u atomically and durably and returns once it is synced.
// Safe for concurrent callers; concurrent Saves share one sync.
//
// An update marked NoSync, or one that only raises Chosen, is the
// exception: it is written, in order, but not synced, so a crash may lose
// it unless a later synced write made it durable. Once a later Save
// returns, every earlier one is durable: groups share one memtable file
// and Badger's replay stops at the first torn transaction, a write that
// may start a new memtable file first syncs the old one if it holds
// unsynced groups, and a group with values in the value log is always
// synced. Chosen is knowledge a restarted node relearns from its peers;
// paying a sync for it on every commit doubled the syncs per Paxos
// instance, and each one delays the next accept queued behind it. The
// paxos engine marks NoSync the instances it stores without voting for
// them (thrifty phase 2).
//
// Promised and Chosen never move backwards: a lower value in u is
// ignored (HardState keeps the maximum) and the rest of u is still
// written, since reordered messages make stale values normal. Accepted
// records below FirstIndex are ignored (those instances are chosen and
// compacted). An accepted record replaces the instance's previous one;
// comparing ballots is the acceptor's job. Errors: ErrInvalid (nothing
// written), ErrClosed (not written), ErrFailed or an I/O error (unknown:
// the log is unusable afterwards).
func (l *Log) Save(u Update) error {
	if u.Promised == nil && len(u.Accepted) == 0 && u.Chosen == 0 {
		return nil
	}
	o := &op{promised: u.Promised, chosen: u.Chosen, lazy: lazyUpdate(u)}
	for _, a := range u.Accepted {
		if a.Index == 0 {
			return fmt.Errorf("%w: accepted instance index 0", ErrInvalid)
		}
		if len(a.Value) > maxValueLen {
			return fmt.Errorf("%w: instance %d: value of %d bytes", ErrInvalid, a.Index, len(a.Value))
		}
		r := record{index: a.Index, key: acceptedKey(a.Index), val: encodeAccepted(a)}
		o.accepted = append(o.accepted, r)
		o.size += l.entrySize(len(r.key), len(r.val))
		o.vlog = o.vlog || l.toValueLog(len(r.val))
		o.count++
	}
	return l.submit(o)
}

// SaveAsync is Save without the wait: it queues u and returns a channel
// that receives Save's result. Updates are committed and answered in the
// order their SaveAsync or Save calls returned, so a caller can keep
// several in flight (the paxos driver does) and still see them durable in
// order: when one is answered, every earlier one has been.
func (l *Log) SaveAsync(u Update) <-chan error {
	ch := make(chan error, 1)
	if u.Promised == nil && len(u.Accepted) == 0 && u.Chosen == 0 {
		ch <- nil
		return ch
	}
	o := &op{promised: u.Promised, chosen: u.Chosen, lazy: lazyUpdate(u), done: ch}
	for _, a := range u.Accepted {
		if a.Index == 0 {
			ch <- fmt.Errorf("%w: accepted instance index 0", ErrInvalid)
			return ch
		}
		if len(a.Value) > maxValueLen {
			ch <- fmt.Errorf("%w: instance %d: value of %d bytes", ErrInvalid, a.Index, len(a.Value))
			return ch
		}
		r := record{index: a.Index, key: acceptedKey(a.Index), val: encodeAccepted(a)}
		o.accepted = append(o.accepted, r)
		o.size += l.entrySize(len(r.key), len(r.val))
		o.vlog = o.vlog || l.toValueLog(len(r.val))
		o.count++
	}
	if err := l.enqueue(o); err != nil {
		ch <- err
	}
	return ch
}

// lazyUpdate reports whether u is saved without a sync of its own.
func lazyUpdate(u Update) bool { return u.NoSync || (u.Promised == nil && len(u.Accepted) == 0) }

// SaveApplied durably records that the state machine applied every
// index up to applied and that snapshot is its state right after. It
// also raises Chosen to applied if lower (applied implies chosen). An
// applied below the stored one is ignored. Errors as for Save.
func (l *Log) SaveApplied(applied uint64, snapshot []byte) error {
	if len(snapshot) > maxValueLen {
		return fmt.Errorf("%w: snapshot of %d bytes", ErrInvalid, len(snapshot))
	}
	snap := append([]byte{}, snapshot...)
	o := &op{applied: &appliedState{index: applied, snapshot: snap}}
	o.size = l.entrySize(len(keyApplied), recordMin+12+len(snap))
	o.vlog = l.toValueLog(recordMin + 12 + len(snap))
	o.count = 1
	return l.submit(o)
}

// submit queues o and waits for its outcome.
func (l *Log) submit(o *op) error {
	o.done = make(chan error, 1)
	if err := l.enqueue(o); err != nil {
		return err
	}
	return <-o.done
}

// enqueue checks o and appends it to the queue; o.done receives the outcome.
func (l *Log) enqueue(o *op) error {
	if o.size+metaReserveSize > l.maxTxnSize || o.count+metaReserveCount > l.maxTxnCount {
		return fmt.Errorf("%w: update of %d records / ~%d bytes exceeds one Badger transaction (%d / %d)",
			ErrInvalid, o.count, o.size, l.maxTxnCount, l.maxTxnSize)
	}
	l.mu.Lock()
	if err := l.usableLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	l.queue = append(l.queue, o)
	l.stats.pending.Add(1)
	l.mu.Unlock()
	l.signal()
	return nil
}

func (l *Log) signal() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// run is the commit goroutine. After Close it drains the queue, waits for
// the groups in flight, and exits; the completer then closes l.done.
func (l *Log) run() {
	defer close(l.groups)
	for range l.kick {
		for {
			// Take a slot before the queue, so ops that arrive while every
			// slot is busy join one group.
			l.slots <- struct{}{}
			l.held = true
			l.mu.Lock()
			n := min(len(l.queue), l.opts.MaxGroupOps)
			batch := l.queue[:n:n]
			l.queue = l.queue[n:]
			closed := l.closed
			l.mu.Unlock()
			if n > 0 {
				l.process(batch)
			}
			if l.held {
				<-l.slots
				l.held = false
			}
			if n == 0 {
				if closed {
					l.inflight.Wait()
					return
				}
				break
			}
		}
	}
}

// process runs a batch in order: runs of saves become groups; a
// truncation is a barrier: it waits for every group in flight.
func (l *Log) process(batch []*op) {
	l.maybeReclaim(false) // reclaim.go; errors are logged and retried
	start := 0
	for i, o := range batch {
		if o.reclaimNow {
			l.commitRun(batch[start:i])
			err := l.failure()
			if err == nil {
				err = l.maybeReclaim(true)
			}
			l.stats.pending.Add(-1)
			o.done <- err
			start = i + 1
			continue
		}
		if o.truncate == 0 {
			continue
		}
		l.commitRun(batch[start:i])
		l.inflight.Wait()
		err := l.syncLazy() // the truncation's write may rotate
		if err == nil {
			err = l.truncate(o.truncate, o.base, o.install)
		}
		if l.followRotation() {
			l.fill = newFill(fillBase)
		}
		l.fill.arena += fillTruncate
		l.fill.file += fillTruncate
		l.stats.pending.Add(-1)
		o.done <- err
		start = i + 1
	}
	l.commitRun(batch[start:])
}

// commitRun commits ops as consecutive groups.
func (l *Log) commitRun(ops []*op) {
	for len(ops) > 0 {
		ops = ops[l.commitGroup(ops):]
	}
}

// commitGroup writes the longest prefix of ops that fits one transaction,
// hands it to a sync goroutine and returns how many ops it took (>= 1).
func (l *Log) commitGroup(ops []*op) int {
	if !l.held {
		l.slots <- struct{}{}
	}
	l.held = false
	n := l.fit(ops)
	g := &group{ops: ops[:n], synced: make(chan struct{})}
	g.lazy = true
	for _, o := range g.ops {
		g.vlog = g.vlog || o.vlog
		g.lazy = g.lazy && o.lazy
	}
	// A value-log write is synced by Badger's Sync, never lazily: a later
	// memtable sync would make its pointer durable, not the value.
	g.lazy = g.lazy && !g.vlog
	// Overlap with the groups in flight only if this write cannot rotate
	// the memtable and stays out of the value log; else wait for them,
	// and sync unsynced lazy groups in the file it may leave behind.
	mayRotate := g.vlog || l.fill.full(l.opts.MemTableSize)
	if mayRotate {
		l.inflight.Wait()
	}
	inflight := len(l.slots) > 1
	l.inflight.Add(1)
	l.groups <- g
	g.hs, g.last = l.whs, l.wlast
	if err := l.failure(); err != nil {
		g.err = err
		close(g.synced)
		return n
	}
	if mayRotate {
		if err := l.syncLazy(); err != nil {
			g.err = err
			close(g.synced)
			return n
		}
	}
	hs, last, cost, err := l.writeGroup(g.ops)
	if err != nil {
		g.err = err
		close(g.synced)
		return n
	}
	g.hs, g.last = hs, last
	l.whs, l.wlast = hs, last
	if l.followRotation() {
		l.stats.rotations.Add(1)
		if !l.fill.full(l.opts.MemTableSize) {
			// The model in memtable.go is wrong (a Badger change?): a
			// group in flight may sit in the previous file.
			l.stats.boundMisses.Add(1)
			l.opts.Logger.Error("wal: Badger rotated its memtable below the fill bound",
				"dir", l.dir, "bound", l.fill.max(), "memtable", l.opts.MemTableSize, "groups_in_flight", inflight)
		}
		l.fill = newFill(fillBase)
	}
	l.fill.arena += cost.arena
	l.fill.file += cost.file
	g.mem = l.memFid
	// A synced group covers the lazy ones before it in its file, and a
	// write that may rotate syncs them first: the file never changes
	// between a lazy group and the next synced one.
	if g.lazy {
		l.lazyBytes += cost.file
		if b := l.opts.LazySyncBytes; b > 0 && l.lazyBytes >= b {
			g.lazy = false // Options.LazySyncBytes
		}
	}
	if !g.lazy {
		l.lazyBytes = 0
	}
	l.lazyDirty = g.lazy
	go l.syncGroup(g)
	return n
}

// syncLazy syncs the current memtable file if the last group written to
// it was lazy; call it with no group in flight, before a write that may
// rotate the memtable.
func (l *Log) syncLazy() error {
	if !l.lazyDirty || l.opts.NoSync {
		return nil
	}
	l.lazyDirty, l.lazyBytes = false, 0
	l.stats.syncs.Add(1)
	if err := l.syncMemFile(l.memFid); err != nil {
		l.mu.Lock()
		if l.failed == nil {
			l.failed = err
		}
		l.mu.Unlock()
		return fmt.Errorf("%w: %w", ErrFailed, err)
	}
	return nil
}

// fit returns how many ops (at least 1) fit one transaction.
func (l *Log) fit(ops []*op) int {
	var size, count int64
	for n, o := range ops {
		if n > 0 && (size+o.size+metaReserveSize > l.maxTxnSize || count+o.count+metaReserveCount > l.maxTxnCount) {
			return n
		}
		size += o.size
		count += o.count
	}
	return len(ops)
}

// syncGroup makes g durable (sync goroutine).
func (l *Log) syncGroup(g *group) {
	defer close(g.synced)
	if l.opts.Knobs != nil && l.opts.Knobs.BeforeSync != nil {
		if g.err = l.opts.Knobs.BeforeSync(len(g.ops)); g.err != nil {
			return
		}
	}
	if l.opts.NoSync || g.lazy {
		return
	}
	l.stats.syncs.Add(1)
	if g.vlog {
		// Written with nothing in flight; Badger's Sync covers the value
		// log and the current memtable, which is g's.
		if err := l.db.Sync(); err != nil {
			g.err = fmt.Errorf("wal: sync: %w", err)
		}
		return
	}
	g.err = l.syncMemFile(g.mem)
}

// complete answers groups in order (the completer goroutine).
func (l *Log) complete() {
	defer close(l.done)
	for g := range l.groups {
		<-g.synced
		err := g.err
		l.mu.Lock()
		if err == nil && l.failed != nil {
			err = l.failed // an earlier group failed: this one is unknown too
		}
		if err != nil && l.failed == nil {
			l.failed = err
			l.opts.Logger.Error("wal: write failed; log unusable until reopened", "dir", l.dir, "err", err)
		}
		if err == nil {
			l.hs, l.last = g.hs, g.last
		}
		l.mu.Unlock()
		l.stats.groups.Add(1)
		if err == nil {
			l.stats.saves.Add(int64(len(g.ops)))
		}
		l.stats.pending.Add(-int64(len(g.ops)))
		for _, o := range g.ops {
			if err != nil {
				o.done <- fmt.Errorf("%w: %w", ErrFailed, err)
			} else {
				o.done <- nil
			}
		}
		<-l.slots
		l.inflight.Done()
	}
}

func (l *Log) failure() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}

func (l *Log) sync() error {
	if l.opts.NoSync {
		return nil
	}
	l.stats.syncs.Add(1)
	if err := l.db.Sync(); err != nil {
		return fmt.Errorf("wal: sync: %w", err)
	}
	return nil
}

// writeGroup commits ops (which fit one transaction) in one Badger
// transaction, not yet synced, with the metadata records they change,
// and returns the HardState and last index they produce and the fill
// bound of what it wrote (memtable.go).
func (l *Log) writeGroup(ops []*op) (HardState, uint64, fillBound, error) {
	hs, last := l.whs, l.wlast
	cost := fillBound{file: fillPerTxn}
	txn := l.db.NewTransaction(true)
	defer txn.Discard()
	snapDirty := false
	for _, o := range ops {
		for _, r := range o.accepted {
			if r.index < hs.FirstIndex {
				continue
			}
			cost.addEntry(r.key, r.val)
			if err := txn.Set(r.key, r.val); err != nil {
				return hs, last, cost, fmt.Errorf("wal: write instance %d: %w", r.index, err)
			}
			last = max(last, r.index)
		}
		if o.promised != nil && hs.Promised.Less(*o.promised) {
			hs.Promised = *o.promised
		}
		hs.Chosen = max(hs.Chosen, o.chosen)
		if a := o.applied; a != nil && a.index >= hs.Applied {
			hs.Applied, hs.Snapshot, snapDirty = a.index, a.snapshot, true
			hs.Chosen = max(hs.Chosen, a.index)
		}
	}
	var es []*badger.Entry
	if hs.Promised != l.whs.Promised {
		es = append(es, badger.NewEntry(keyPromised, encodeBallot(keyPromised, hs.Promised)))
	}
	if hs.Chosen != l.whs.Chosen {
		es = append(es, badger.NewEntry(keyChosen, encodeUint(keyChosen, kindChosen, hs.Chosen)))
	}
	if snapDirty {
		es = append(es, badger.NewEntry(keyApplied, encodeApplied(hs.Applied, hs.Snapshot)))
	}
	for _, e := range es {
		cost.addEntry(e.Key, e.Value)
		if err := txn.SetEntry(e); err != nil {
			return hs, last, cost, fmt.Errorf("wal: write %s: %w", e.Key, err)
		}
	}
	if err := txn.Commit(); err != nil {
		return hs, last, cost, fmt.Errorf("wal: commit: %w", err)
	}
	l.stats.txns.Add(1)
	return hs, last, cost, nil
}
