package wal

import (
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// The membership marker. Package paxos keeps a node's membership history
// (the voters whose majorities it counts) in a file next to the log,
// written only after the first membership change; a node without the
// file counts its configured members. A file lost from a node whose
// cluster changed its members would make the node count the wrong
// voters, so the log records, once and durably, that a history was
// saved: the node then refuses to start without it. The marker lives in
// Badger (m/membership), not in another file of the directory that could
// be lost the same way.

// MembershipSaved reports whether MarkMembershipSaved ever succeeded on
// this log (on any earlier Open of its directory included). A read-only
// log answers too.
func (l *Log) MembershipSaved() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.membership
}

// MarkMembershipSaved records durably that a membership history was
// saved next to this log; MembershipSaved reports true from then on, and
// after every later Open. Idempotent: once marked it writes nothing, and
// concurrent calls write it once. It runs in the caller's goroutine,
// beside the commit path: Saves go on while it writes and syncs (see
// markMembership). ErrReadOnly on a read-only log, ErrClosed after
// Close; a failed write fails the log (ErrFailed), as any write does.
func (l *Log) MarkMembershipSaved() error {
	if l.readOnly {
		return ErrReadOnly
	}
	l.markMu.Lock()
	defer l.markMu.Unlock()
	if l.MembershipSaved() {
		return nil
	}
	// Pins Badger open: Close waits for the marker before closing it.
	if _, err := l.beginRead(); err != nil {
		return err
	}
	defer l.rw.RUnlock()
	return l.markMembership()
}

// markMembership writes the marker to Badger in a transaction of its own
// and makes Badger durable, neither waiting for the groups in flight nor
// holding up the commit goroutine. An earlier version did it in the
// commit goroutine with nothing in flight, and Saves queued behind it
// for the whole of it (a wait for the groups in flight, a Badger write,
// then Badger's syncs: 0.1-0.5 s with the disk held to 100 writes a
// second),
// right when every node of a cluster saves its new membership, so no
// node answered its peers and the leader lost its quorum (e2e
// TestLearner, a promotion). Why it is safe beside the apply path, which
// writes Badger too:
//
//   - Badger takes concurrent transactions, and one that only writes a
//     key nobody else writes conflicts with none.
//   - What Badger keeps after a crash must be the effect of a prefix of
//     the applied frames (apply.go). That depends on the order of the
//     writes and on the memtable tracking (a write that may start a new
//     memtable syncs the current one first), not on which goroutine
//     writes: writeBadger holds l.bw while it checks the bound, syncs,
//     writes and counts, like every other writer, so the writes are one
//     sequence as if one goroutine made them, the marker's counted in
//     the bound like any other.
//   - The marker is no frame and leaves m/segpos alone, so Open replays
//     the same frames wherever it lands among the apply path's writes.
//   - syncMemFiles, after the write, syncs every memtable file, oldest
//     first: what was written before it, the marker included (a few
//     bytes, kept in the memtable, never in Badger's value log), is then
//     durable. Syncing more than the apply path needs never breaks the
//     prefix. Not Badger's Sync (syncBadger): it holds the lock every
//     Badger write takes while it syncs the current memtable, so the
//     apply path, and with it every Save's answer, would wait for a
//     sync again.
func (l *Log) markMembership() error {
	err := l.writeBadger([]entry{{key: keyMembership, val: encodeRecord(keyMembership, kindMembership, nil)}})
	if err == nil {
		if k := l.opts.Knobs; k != nil && k.BeforeMembershipSync != nil {
			k.BeforeMembershipSync()
		}
		err = l.syncMemFiles()
	}
	if err != nil {
		return l.fail(fmt.Errorf("mark membership saved: %w", err))
	}
	l.mu.Lock()
	l.membership = true
	l.mu.Unlock()
	return nil
}

// loadMembership reads the marker (Open, OpenReadOnly).
func loadMembership(txn *badger.Txn) (bool, error) {
	rec, ok, err := getValue(txn, keyMembership)
	if err != nil || !ok {
		return false, err
	}
	if _, err := decodeRecord(keyMembership, rec, kindMembership); err != nil {
		return false, corruptMeta(keyMembership, err)
	}
	return true, nil
}

// readMembership is loadMembership for Inspect's read-only Badger.
func readMembership(db *badger.DB) (saved bool, err error) {
	err = db.View(func(txn *badger.Txn) error {
		saved, err = loadMembership(txn)
		return err
	})
	return saved, err
}
