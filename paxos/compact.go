package paxos

import (
	"context"
	"errors"
	"fmt"

	"phxgo/wal"
)

// Log compaction. The stored log may be cut below an index whose state
// the node holds as a durable snapshot: the truncation stores that
// snapshot as the log's base (wal.HardState.Base, in the same write as
// the new FirstIndex), so a reader (Base) or a lagging peer (MsgSnapshot,
// snapshot_install.go) can start at FirstIndex.
//
// The snapshot must describe exactly FirstIndex-1, and the state machine
// can only be snapshotted at its current applied index. So the applier
// keeps checkpoints: the durable snapshots it saved (every SnapshotEvery
// entries, and at each Compact call), in memory, thinned to
// maxCheckpoints. Compact(index) cuts at the newest checkpoint at or
// below index-1: never past what this node applied and persisted.
// Checkpoints are not persisted: after a restart only the snapshot at the
// persisted applied index is one, so a compaction target in the past has
// to wait until a checkpoint at or below it exists again.

var (
	// ErrCompacted: the index asked for is below the log's FirstIndex;
	// those entries are gone. Start from Base instead.
	ErrCompacted = errors.New("paxos: index compacted")
	// ErrResultLost: the command was applied, but inside a snapshot
	// installed from a peer (this node lagged behind a compacted log),
	// so its result is unknown here. Known applied.
	ErrResultLost = errors.New("paxos: command applied within an installed snapshot; result unknown")
)

// maxCheckpoints bounds the checkpoints kept; when full, every other one
// is dropped, so they stay spread over the retained log.
const maxCheckpoints = 64

type checkpoint struct {
	index uint64
	snap  []byte // engine snapshot after index
}

type applyItem struct {
	entries []Entry
	install *InstalledSnapshot
}

type compactReq struct {
	index uint64
	done  chan compactResult
}

type compactResult struct {
	first uint64
	err   error
}

// Compact drops the stored log below index, or below a lower point: it
// cuts at the newest snapshot this node holds at or below index-1, and
// never past what it applied and persisted. It first records a fresh
// checkpoint at the applied index, so that a later Compact can reach it.
// It returns the log's FirstIndex afterwards (unchanged when no
// checkpoint fits). Errors: ErrStorage (the node stops), ErrStopped,
// ctx.Err().
func (n *Node) Compact(ctx context.Context, index uint64) (first uint64, err error) {
	r := compactReq{index: index, done: make(chan compactResult, 1)}
	select {
	case n.compactc <- r:
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-n.donec:
		return 0, n.stoppedErr()
	}
	select {
	case res := <-r.done:
		return res.first, res.err
	case <-n.donec:
		return 0, n.stoppedErr()
	}
}

// compactNow runs on the applier goroutine.
func (n *Node) compactNow(index uint64) (uint64, error) {
	if n.failed.Load() {
		return 0, ErrStopped
	}
	if k := len(n.ckpts); n.app.applied > 0 && (k == 0 || n.ckpts[k-1].index < n.app.applied) {
		if err := n.saveApplied(); err != nil {
			n.fail(err)
			return 0, err
		}
	}
	hs := n.storage.HardState()
	best := -1
	for i, c := range n.ckpts {
		if c.index+1 <= index && c.index <= hs.Applied && n.baseAccepted(c.snap) {
			best = i
		}
	}
	if best < 0 || n.ckpts[best].index+1 <= hs.FirstIndex {
		return hs.FirstIndex, nil
	}
	c := n.ckpts[best]
	if err := n.storage.TruncateWithBase(c.index+1, c.snap); err != nil {
		if errors.Is(err, wal.ErrInvalid) {
			return hs.FirstIndex, fmt.Errorf("compact below %d: %w", c.index+1, err)
		}
		err = fmt.Errorf("%w: compact below %d: %w", ErrStorage, c.index+1, err)
		n.fail(err)
		return 0, err
	}
	n.ckpts = append(n.ckpts[:0], n.ckpts[best:]...)
	n.publishApplied()
	return c.index + 1, nil
}

// addCheckpoint records a durable snapshot (applier goroutine).
func (n *Node) addCheckpoint(index uint64, snap []byte) {
	if k := len(n.ckpts); k > 0 && n.ckpts[k-1].index >= index {
		n.ckpts = n.ckpts[:k-1]
	}
	n.ckpts = append(n.ckpts, checkpoint{index: index, snap: snap})
	if len(n.ckpts) > maxCheckpoints {
		kept := n.ckpts[:0]
		for i, c := range n.ckpts {
			if i%2 == 0 || i == len(n.ckpts)-1 {
				kept = append(kept, c)
			}
		}
		n.ckpts = kept
	}
}

// installSnapshot replaces the applied state with a peer's snapshot, which
// the persister already made durable (applier goroutine).
func (n *Node) installSnapshot(in *InstalledSnapshot) error {
	if in.Index <= n.app.applied {
		return nil
	}
	if err := n.app.restore(in.Index, in.Data); err != nil {
		return fmt.Errorf("%w: install snapshot at %d: %w", ErrStorage, in.Index, err)
	}
	n.log.Info("installed a peer's snapshot: this node lagged behind a compacted log", "index", in.Index)
	n.tail.reset() // its entries end below the snapshot; the next starts past it
	n.applied.Store(in.Index)
	n.sinceSnap = 0
	n.ckpts = n.ckpts[:0]
	n.addCheckpoint(in.Index, in.Data)
	// Our own commands inside the snapshot were applied without us seeing
	// them; their callers learn that (a later copy is dropped as a dup).
	n.wmu.Lock()
	for seq, p := range n.waiters {
		if n.app.done(n.cfg.ID, seq) {
			delete(n.waiters, seq)
			p.done <- proposeResult{index: in.Index, err: ErrResultLost}
		}
	}
	n.wmu.Unlock()
	return nil
}

// done reports whether the dedup table shows node's command seq applied.
func (a *applier) done(node uint32, seq uint64) bool {
	s := a.nodes[node]
	if s == nil {
		return false
	}
	if seq <= s.low {
		return true
	}
	_, ok := s.seen[seq]
	return ok
}

// Base returns where the stored log starts: index = FirstIndex-1 and the
// state machine's snapshot right after it (nil when index is 0: the log
// is whole). A reader replays from index+1 on top of snap. Errors:
// ErrBadValue (the stored base does not decode).
func (n *Node) Base() (index uint64, snap []byte, err error) {
	hs := n.storage.HardState()
	if hs.FirstIndex <= 1 {
		return 0, nil, nil
	}
	if hs.Base == nil {
		return hs.FirstIndex - 1, nil, fmt.Errorf("%w: log truncated below %d without a base snapshot", ErrCompacted, hs.FirstIndex)
	}
	rest, err := StateMachineSnapshot(hs.Base)
	if err != nil {
		return 0, nil, err
	}
	return hs.FirstIndex - 1, rest, nil
}

// baseAccepted asks Config.CompactBase about the state machine's part of
// an engine snapshot.
func (n *Node) baseAccepted(engine []byte) bool {
	if n.cfg.CompactBase == nil {
		return true
	}
	sm, err := StateMachineSnapshot(engine)
	return err == nil && n.cfg.CompactBase(sm)
}

// StateMachineSnapshot returns the state machine's part of an engine
// snapshot as stored in wal (HardState.Snapshot or Base), for tools that
// read a stopped node's log. Errors: ErrBadValue.
func StateMachineSnapshot(engine []byte) ([]byte, error) {
	return newApplier(nil).decodeTable(engine)
}

// ReclaimNow makes the storage give back, now, the disk space of the log
// compacted so far. The wal otherwise reclaims it at a cheap moment,
// within a minute (wal.Log.ReclaimNow), so disk usage lags Compact; a
// caller that compacts to free space calls this. A storage without that
// notion does nothing. A failed reclaim leaves the node running.
func (n *Node) ReclaimNow() error {
	r, ok := n.storage.(interface{ ReclaimNow() error })
	if !ok {
		return nil
	}
	if err := r.ReclaimNow(); err != nil {
		return fmt.Errorf("%w: reclaim: %w", ErrStorage, err)
	}
	return nil
}
