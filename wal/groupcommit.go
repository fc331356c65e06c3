package wal

import (
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// Group commit. Callers encode their records (and CRCs) in their own
// goroutine, append an op to l.queue and wait on op.done. One commit
// goroutine takes everything queued (up to MaxGroupOps), writes it in as
// few Badger transactions as Badger's size limit allows (each op whole in
// one transaction, so each op is atomic), then syncs once and answers
// every op of the group:
//
//	Save ─┐                        ┌─ txn 1 (ops 1..k, meta) ─┐
//	Save ─┼─▶ queue ─▶ commit loop ┤                          ├─▶ db.Sync() ─▶ answer all
//	Save ─┘                        └─ txn 2 (ops k+1..n, meta)┘
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
func entrySize(keyLen, valLen int) int64 {
	v := int64(valLen)
	if v >= valueThreshold {
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
		o.size += entrySize(len(r.key), len(r.val))
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
	o.size = entrySize(len(keyApplied), recordMin+12+len(snap))
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
	l.stats.queued.Add(1)
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
			l.stats.queued.Add(-int64(n))
			l.process(batch)
		}
	}
}

// process runs a batch in order: runs of saves become one group each;
// a truncation is a barrier between groups.
func (l *Log) process(batch []*op) {
	start := 0
	for i, o := range batch {
		if o.truncate == 0 {
			continue
		}
		l.commitGroup(batch[start:i])
		o.done <- l.truncate(o.truncate)
		start = i + 1
	}
	l.commitGroup(batch[start:])
}

// commitGroup writes ops in as few transactions as fit, syncs once and
// answers them all.
func (l *Log) commitGroup(ops []*op) {
	if len(ops) == 0 {
		return
	}
	err := l.failure()
	hs, last := l.hs, l.last
	if err == nil {
		hs, last, err = l.writeGroup(ops)
	}
	if err == nil && l.opts.Knobs != nil && l.opts.Knobs.BeforeSync != nil {
		err = l.opts.Knobs.BeforeSync(len(ops))
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
		l.stats.saves.Add(int64(len(ops)))
	}
	for _, o := range ops {
		if err != nil {
			o.done <- fmt.Errorf("%w: %w", ErrFailed, err)
		} else {
			o.done <- nil
		}
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

// writeGroup commits ops to Badger (not yet synced) and returns the
// HardState and last index they produce.
func (l *Log) writeGroup(ops []*op) (HardState, uint64, error) {
	hs, last := l.hs, l.last
	written := hs // what the meta records on disk say
	snapDirty := false
	txn := l.db.NewTransaction(true)
	defer func() { txn.Discard() }()
	var size, count int64

	flush := func() error {
		var es []*badger.Entry
		if hs.Promised != written.Promised {
			es = append(es, badger.NewEntry(keyPromised, encodeBallot(keyPromised, hs.Promised)))
		}
		if hs.Chosen != written.Chosen {
			es = append(es, badger.NewEntry(keyChosen, encodeUint(keyChosen, kindChosen, hs.Chosen)))
		}
		if snapDirty {
			es = append(es, badger.NewEntry(keyApplied, encodeApplied(hs.Applied, hs.Snapshot)))
		}
		for _, e := range es {
			if err := txn.SetEntry(e); err != nil {
				return fmt.Errorf("wal: write %s: %w", e.Key, err)
			}
		}
		if err := txn.Commit(); err != nil {
			return fmt.Errorf("wal: commit: %w", err)
		}
		l.stats.txns.Add(1)
		written, snapDirty = hs, false
		txn = l.db.NewTransaction(true)
		size, count = 0, 0
		return nil
	}

	for _, o := range ops {
		if count > 0 && (size+o.size+metaReserveSize > l.maxTxnSize || count+o.count+metaReserveCount > l.maxTxnCount) {
			if err := flush(); err != nil {
				return hs, last, err
			}
		}
		for _, r := range o.accepted {
			if r.index < hs.FirstIndex {
				continue
			}
			if err := txn.Set(r.key, r.val); err != nil {
				return hs, last, fmt.Errorf("wal: write instance %d: %w", r.index, err)
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
		size += o.size
		count += o.count
	}
	return hs, last, flush()
}
