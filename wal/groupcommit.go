package wal

import (
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// Group commit. Callers encode their records (and CRCs) in their own
// goroutine, append an op to l.queue and wait on op.done. One commit
// goroutine takes what is queued (up to MaxGroupOps), writes as many ops
// as fit in ONE Badger transaction, syncs once and answers them; ops that
// did not fit start the next group:
//
//	Save ─┐                           ┌──────────────────────────────────┐
//	Save ─┼─▶ queue ─▶ commit loop ──▶│ txn: ops 1..k + promised, chosen │─▶ db.Sync() ─▶ answer 1..k
//	Save ─┘                           └──────────────────────────────────┘
//
// Why one transaction per sync: Badger's Sync only syncs the current
// memtable's WAL. If a group's second transaction rotated the memtable,
// the first one's WAL would sit unsynced until its background flush, so
// a crash could lose a Save we had answered. A transaction is written to
// one memtable, so "one transaction, then Sync" is durable.
//
// The HardState seen by HardState() moves only after the sync, so it is
// always durable. Reads (Get, Range) may see a Save's records before that
// Save returns; they are durable once it does.

// op is one queued write.
type op struct {
	accepted []record // pre-encoded accepted records
	promised *Ballot
	chosen   uint64
	applied  *appliedState
	truncate uint64 // >0: a TruncateBelow; nothing else is set

	size, count int64 // Badger's estimate of what this op adds to a txn
	done        chan error
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

// Save writes u atomically and durably and returns once it is synced.
// Safe for concurrent callers; concurrent Saves share one sync.
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
	o := &op{promised: u.Promised, chosen: u.Chosen}
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
	if o.size+metaReserveSize > l.maxTxnSize || o.count+metaReserveCount > l.maxTxnCount {
		return fmt.Errorf("%w: update of %d records / ~%d bytes exceeds one Badger transaction (%d / %d)",
			ErrInvalid, o.count, o.size, l.maxTxnCount, l.maxTxnSize)
	}
	o.done = make(chan error, 1)
	l.mu.Lock()
	if err := l.usableLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	l.queue = append(l.queue, o)
	l.stats.pending.Add(1)
	l.mu.Unlock()
	l.signal()
	return <-o.done
}

func (l *Log) signal() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// run is the commit goroutine. After Close it drains the queue and exits.
func (l *Log) run() {
	defer close(l.done)
	for range l.kick {
		for {
			l.mu.Lock()
			n := min(len(l.queue), l.opts.MaxGroupOps)
			batch := l.queue[:n:n]
			l.queue = l.queue[n:]
			closed := l.closed
			l.mu.Unlock()
			if n == 0 {
				if closed {
					return
				}
				break
			}
			l.process(batch)
		}
	}
}

// process runs a batch in order: runs of saves become groups; a
// truncation is a barrier between groups.
func (l *Log) process(batch []*op) {
	start := 0
	for i, o := range batch {
		if o.truncate == 0 {
			continue
		}
		l.commitRun(batch[start:i])
		err := l.truncate(o.truncate)
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
// syncs, answers those ops and returns how many it took (at least 1).
func (l *Log) commitGroup(ops []*op) int {
	n := len(ops)
	err := l.failure()
	hs, last := l.hs, l.last
	if err == nil {
		n, hs, last, err = l.writeGroup(ops)
	}
	if err == nil && l.opts.Knobs != nil && l.opts.Knobs.BeforeSync != nil {
		err = l.opts.Knobs.BeforeSync(n)
	}
	if err == nil {
		err = l.sync()
	}
	l.mu.Lock()
	if err != nil && l.failed == nil {
		l.failed = err
		l.opts.Logger.Error("wal: write failed; log unusable until reopened", "dir", l.dir, "err", err)
	}
	if err == nil {
		l.hs, l.last = hs, last
	}
	l.mu.Unlock()
	l.stats.groups.Add(1)
	if err == nil {
		l.stats.saves.Add(int64(n))
	}
	l.stats.pending.Add(-int64(n))
	for _, o := range ops[:n] {
		if err != nil {
			o.done <- fmt.Errorf("%w: %w", ErrFailed, err)
		} else {
			o.done <- nil
		}
	}
	return n
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

// writeGroup commits the longest prefix of ops that fits one Badger
// transaction (not yet synced), with the metadata records it changes,
// and returns its length and the HardState and last index it produces.
func (l *Log) writeGroup(ops []*op) (int, HardState, uint64, error) {
	hs, last := l.hs, l.last
	txn := l.db.NewTransaction(true)
	defer txn.Discard()
	var size, count int64
	snapDirty := false
	n := 0
	for _, o := range ops {
		if n > 0 && (size+o.size+metaReserveSize > l.maxTxnSize || count+o.count+metaReserveCount > l.maxTxnCount) {
			break
		}
		n++
		size += o.size
		count += o.count
		for _, r := range o.accepted {
			if r.index < hs.FirstIndex {
				continue
			}
			if err := txn.Set(r.key, r.val); err != nil {
				return n, hs, last, fmt.Errorf("wal: write instance %d: %w", r.index, err)
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
	if hs.Promised != l.hs.Promised {
		es = append(es, badger.NewEntry(keyPromised, encodeBallot(keyPromised, hs.Promised)))
	}
	if hs.Chosen != l.hs.Chosen {
		es = append(es, badger.NewEntry(keyChosen, encodeUint(keyChosen, kindChosen, hs.Chosen)))
	}
	if snapDirty {
		es = append(es, badger.NewEntry(keyApplied, encodeApplied(hs.Applied, hs.Snapshot)))
	}
	for _, e := range es {
		if err := txn.SetEntry(e); err != nil {
			return n, hs, last, fmt.Errorf("wal: write %s: %w", e.Key, err)
		}
	}
	if err := txn.Commit(); err != nil {
		return n, hs, last, fmt.Errorf("wal: commit: %w", err)
	}
	l.stats.txns.Add(1)
	return n, hs, last, nil
}
