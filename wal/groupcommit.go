package wal

import (
	"cmp"
	"fmt"
	"os"
)

// Group commit, pipelined. Callers encode their records (and CRCs) in
// their own goroutine, append an op to l.queue and wait on op.done. The
// commit goroutine takes what is queued (up to MaxGroupOps), frames as
// many ops as fit in ONE Badger transaction, appends the frame to the
// current segment and hands the group to a sync goroutine; it then writes
// the next group while that one syncs, up to MaxSyncsInFlight groups. The
// completer applies the groups to Badger and answers them strictly in
// order:
//
//	Save ─┐                      ┌─ append frame 1 ─▶ sync 1 ─────────┐
//	Save ─┼─▶ queue ─▶ commit ───┼─ append frame 2 ─▶ sync 2 ──────┐  │
//	Save ─┘     goroutine        └─ append frame 3 ─▶ sync 3 ─┐    │  │
//	                       completer: apply + answer 1, then 2, then 3
//
// Why one Badger transaction per group: the group is applied to Badger in
// one, which Badger replays whole or not at all. Why it is safe to write
// group k+1 before group k is synced: both are in one segment, k first,
// and an fdatasync covers every earlier write to the file, so after a
// crash a later group never survives without an earlier one (Open cuts
// the newest segment at its first torn frame). A new segment starts only
// with no group in flight, after the old one is synced.
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
	// markMembership: Update.MarkMembership (membership.go)
	markMembership bool
	// lazy: the op needs no sync of its own (see Save); a group of lazy
	// ops without value-log values skips the fdatasync.
	lazy bool

	size, count int64 // Badger's estimate of what this op adds to a txn
	done        chan error
}

// group is one frame on its way to disk, then to Badger.
type group struct {
	ops  []*op
	hs   HardState // after this group
	last uint64
	lazy bool // every op is lazy: no sync of its own
	// marks: the frame carries the log's m/membership entry.
	marks bool
	// entries are the group's Badger entries, framed at refs (the offset
	// of each value) in segment seg, the frame ending at end; file is the
	// segment, for the sync.
	entries []entry
	refs    []uint64
	seg     uint64
	end     uint64
	file    *os.File
	err     error // write or sync error, set before synced is closed
	synced  chan struct{}
}

type record struct {
	index    uint64
	key, val []byte
}

type appliedState struct {
	index    uint64
	snapshot []byte
}

// metaReserve is the txn room kept for the metadata records a frame or
// its apply adds: promised, chosen, m/membership, m/segpos, m/segmax.
const (
	metaReserveSize  = 256
	metaReserveCount = 5
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

// Save writes u atomically and durably and returns once it is synced.
// Safe for concurrent callers; concurrent Saves share one sync.
//
// An update marked NoSync, or one that only raises Chosen, is the
// exception: it is written, in order, but not synced, so a crash may lose
// it unless a later synced write made it durable. Once a later Save
// returns, every earlier one is durable: an fdatasync of a segment covers
// every earlier group in it, and a new segment starts only after the old
// one is synced. Chosen is knowledge a restarted node relearns from its peers;
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
	if emptyUpdate(u) {
		return nil
	}
	o := &op{promised: u.Promised, chosen: u.Chosen, markMembership: u.MarkMembership, lazy: lazyUpdate(u)}
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
	if emptyUpdate(u) {
		ch <- nil
		return ch
	}
	o := &op{promised: u.Promised, chosen: u.Chosen, markMembership: u.MarkMembership, lazy: lazyUpdate(u), done: ch}
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
		o.count++
	}
	if err := l.enqueue(o); err != nil {
		ch <- err
	}
	return ch
}

// emptyUpdate reports whether u writes nothing.
func emptyUpdate(u Update) bool {
	return u.Promised == nil && len(u.Accepted) == 0 && u.Chosen == 0 && !u.MarkMembership
}

// lazyUpdate reports whether u is saved without a sync of its own: a
// NoSync one, or one that only raises Chosen. MarkMembership makes no
// update synced that is not (it rides the next sync like the rest of a
// lazy update); a marker alone is synced unless NoSync.
func lazyUpdate(u Update) bool {
	return u.NoSync || (u.Promised == nil && len(u.Accepted) == 0 && !(u.MarkMembership && u.Chosen == 0))
}

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
	if l.readOnly {
		return ErrReadOnly
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
					if err := l.flushPending(); err != nil {
						l.opts.Logger.Error("wal: applying lazy saves at close", "dir", l.dir, "err", err)
					}
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
		err := l.flushPending() // the truncation writes Badger directly
		if err == nil {
			err = l.truncate(o.truncate, o.base, o.install)
		}
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

// commitGroup frames the longest prefix of ops that fits one Badger
// transaction, appends the frame to the current segment, hands the group
// to a sync goroutine and returns how many ops it took (>= 1).
func (l *Log) commitGroup(ops []*op) int {
	if !l.held {
		l.slots <- struct{}{}
	}
	l.held = false
	n := l.fit(ops)
	g := &group{ops: ops[:n], synced: make(chan struct{}), lazy: true}
	for _, o := range g.ops {
		g.lazy = g.lazy && o.lazy
	}
	es, hs, last, marks := l.groupEntries(g.ops)
	var rotateErr error
	if size := frameSize(es); l.segOff > 0 && l.segOff+size > uint64(l.opts.SegmentBytes) {
		l.inflight.Wait()
		// Never after a failure (a group in flight may just have failed):
		// the failed group's frame, written and never synced, must stay in
		// the newest segment, whose torn tail Open cuts; in an older one
		// its bad bytes would be corruption that stops Open.
		if l.failure() == nil {
			rotateErr = l.rotateSegment()
		}
	}
	l.inflight.Add(1)
	l.groups <- g
	g.hs, g.last = l.whs, l.wlast
	if err := l.failure(); err != nil || rotateErr != nil {
		g.err = cmp.Or(rotateErr, err)
		close(g.synced)
		return n
	}
	if err := l.checkSpace(int64(frameSize(es))); err != nil {
		g.err = err // fails the log, as a write error would (space.go)
		close(g.synced)
		return n
	}
	frame, refs := encodeFrame(l.segID, l.segOff, es)
	if _, err := writeFrameAt(l.segFile, frame, int64(l.segOff)); err != nil {
		g.err = fmt.Errorf("wal: write segment %d: %w", l.segID, err)
		close(g.synced)
		return n
	}
	g.entries, g.refs, g.seg, g.file = es, refs, l.segID, l.segFile
	l.segOff += uint64(len(frame))
	g.end = l.segOff
	g.hs, g.last, g.marks = hs, last, marks
	l.whs, l.wlast = hs, last
	l.wmarked = l.wmarked || marks
	// A synced group covers the lazy ones before it in its segment, and
	// a new segment starts only once they are synced.
	if g.lazy {
		l.lazyBytes += int64(len(frame))
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

// rotateSegment starts a new segment (commit goroutine, nothing in
// flight): the current one is made durable and its lazy groups applied
// first, and segments nothing refers to any more are deleted.
func (l *Log) rotateSegment() error {
	if err := l.flushPending(); err != nil {
		return err
	}
	if err := l.syncLazy(); err != nil {
		return err
	}
	l.collectSegments()
	f, err := l.segs.create(l.segID + 1)
	if err != nil {
		return l.fail(err)
	}
	l.segID, l.segFile, l.segOff = l.segID+1, f, 0
	l.stats.segments.Add(1)
	return nil
}

// syncLazy syncs the current segment if the last group written to it was
// lazy; call it with no group in flight.
func (l *Log) syncLazy() error {
	if !l.lazyDirty || l.opts.NoSync {
		return nil
	}
	l.lazyDirty, l.lazyBytes = false, 0
	l.stats.syncs.Add(1)
	if err := l.timedFdatasync(l.segFile); err != nil {
		return l.fail(fmt.Errorf("wal: sync segment %d: %w", l.segID, err))
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
	var err error
	if l.opts.Knobs != nil && l.opts.Knobs.BeforeSync != nil {
		err = l.opts.Knobs.BeforeSync(len(g.ops)) // acts as a failed sync
	}
	if err == nil && !l.opts.NoSync && !g.lazy {
		l.stats.syncs.Add(1)
		err = l.timedFdatasync(g.file)
	}
	if err != nil {
		g.err = fmt.Errorf("wal: sync segment %d: %w", g.seg, err)
	}
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
		l.mu.Unlock()
		if err == nil {
			err = l.settle(g)
		}
		l.mu.Lock()
		if err != nil && l.failed == nil {
			l.failed = err
			l.opts.Logger.Error("wal: write failed; log unusable until reopened", "dir", l.dir, "err", err)
		}
		if err == nil {
			l.hs, l.last = g.hs, g.last
			l.noteMarkerLocked(g)
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

// settle holds group g; once g is synced and enough groups are held, it
// applies them all to Badger, the lazy ones g's sync made durable
// included (completer goroutine).
func (l *Log) settle(g *group) error {
	l.holdLazy(g)
	if g.lazy && !l.opts.NoSync {
		return nil
	}
	// g's sync covers every held group: all are durable now.
	if len(l.pending) < l.opts.ApplyGroups && l.heldBytes < applyHeldBytes {
		return nil
	}
	return l.applyPending()
}

// frameSize is the length of the frame of es.
func frameSize(es []entry) uint64 {
	n := frameHeader + frameBodyHeader
	for _, e := range es {
		n += 2 + len(e.key) + 4 + len(e.val)
	}
	return uint64(n)
}

// groupEntries returns the Badger entries of ops (accepted records, then
// the metadata records they change), the HardState and last index they
// produce, and whether they carry the log's m/membership entry (the
// first op to ask for it since the log was created; never again once
// written).
func (l *Log) groupEntries(ops []*op) ([]entry, HardState, uint64, bool) {
	hs, last := l.whs, l.wlast
	var es []entry
	snapDirty, mark := false, false
	for _, o := range ops {
		mark = mark || o.markMembership
		for _, r := range o.accepted {
			if r.index < hs.FirstIndex {
				continue
			}
			es = append(es, entry{r.key, r.val})
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
	if hs.Promised != l.whs.Promised {
		es = append(es, entry{keyPromised, encodeBallot(keyPromised, hs.Promised)})
	}
	if hs.Chosen != l.whs.Chosen {
		es = append(es, entry{keyChosen, encodeUint(keyChosen, kindChosen, hs.Chosen)})
	}
	if snapDirty {
		es = append(es, entry{keyApplied, encodeApplied(hs.Applied, hs.Snapshot)})
	}
	mark = mark && !l.wmarked
	if mark {
		es = append(es, entry{keyMembership, membershipRecord()})
	}
	return es, hs, last, mark
}
