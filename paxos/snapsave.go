package paxos

import "fmt"

// Background saves of the applied state. Every SnapshotEvery entries the
// applier persists its state (wal SaveApplied), which waits for a sync.
// The applier hands results to callers, so a save on its own goroutine
// held back every commit applied behind it, for one sync on a busy disk
// (the README has the figure). So the
// applier takes the snapshot (it owns the state) and one goroutine saves
// it while applying goes on. The checkpoint is recorded only once the
// save is durable, so Compact never cuts at a snapshot a crash could
// lose. At most one save is out: a due save while one is out waits for
// the next entries. Synchronous saves (Compact, Stop) first wait for it,
// so checkpoints stay in index order.

type snapSave struct {
	index uint64
	snap  []byte
	err   error
}

// startSnapshotSave snapshots the applied state and saves it in the
// background (applier goroutine).
func (n *Node) startSnapshotSave() {
	if n.snapSaving {
		return
	}
	snap, err := n.app.snapshot()
	if err != nil {
		n.fail(fmt.Errorf("%w: %w", ErrStorage, err))
		return
	}
	index := n.app.applied
	n.snapSaving = true
	n.sinceSnap = 0
	go func() {
		n.snapDone <- snapSave{index: index, snap: snap, err: n.storage.SaveApplied(index, snap)}
	}()
}

// finishSnapshotSave takes a background save's outcome (applier goroutine).
func (n *Node) finishSnapshotSave(sv snapSave) {
	n.snapSaving = false
	if sv.err != nil {
		n.fail(fmt.Errorf("%w: save applied %d: %w", ErrStorage, sv.index, sv.err))
		return
	}
	n.addCheckpoint(sv.index, sv.snap)
}

// waitSnapshotSave waits for the background save, if one is out.
func (n *Node) waitSnapshotSave() {
	if n.snapSaving {
		n.finishSnapshotSave(<-n.snapDone)
	}
}
