package wal

import (
	"github.com/dgraph-io/badger/v4"
)

// The membership marker. Package paxos keeps a node's membership history
// (the voters whose majorities it counts) in a file next to the log,
// written only at membership changes; a node without the file counts its
// configured members. A file lost from a node whose cluster changed its
// members would make the node count the wrong voters, so the log records,
// once and durably, that a history was saved: the node then refuses to
// start without it. The marker lives in the log (m/membership), not in
// another file of the directory that could be lost the same way.
//
// It rides a save that happens anyway (Update.MarkMembership): the
// commit goroutine adds one entry, m/membership, to that update's frame,
// and the frame is synced and applied to Badger like any other (replayed
// at Open if Badger lost it). No write or sync of its own. Why: the two
// versions before this one wrote the marker with a Badger write and
// sync of its own (first in the commit goroutine, then beside it); at a
// membership change every node did so at once, and on a slow disk that
// delayed the saves behind it long enough for a leader to hear no peer
// for two election timeouts and step down (e2e TestLearner).
//
// The entry is written once per log: l.wmarked (commit goroutine) says
// it was written, so later updates asking for it add nothing.

// MembershipSaved reports whether an update with MarkMembership is
// durable in this log (on any earlier Open of its directory included:
// read from Badger, or from the frames Open replays). An update saved
// without a sync of its own (NoSync, or raising Chosen only) counts once
// a later sync covers it. A read-only log answers too.
func (l *Log) MembershipSaved() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.membership
}

func (l *Log) setMembershipSaved() {
	l.mu.Lock()
	l.membership = true
	l.mu.Unlock()
}

// noteMarkerLocked follows the marker through the answered groups
// (completer, l.mu held): a group that carried it, once it or a later
// group is synced, makes it durable (an fdatasync covers every earlier
// group of its segment; a new segment starts only after the old one is
// synced and its groups applied, which writeFrames notes).
func (l *Log) noteMarkerLocked(g *group) {
	l.markUnsynced = l.markUnsynced || g.marks
	if l.markUnsynced && (!g.lazy || l.opts.NoSync) {
		l.membership, l.markUnsynced = true, false
	}
}

// membershipRecord is m/membership's value.
func membershipRecord() []byte { return encodeRecord(keyMembership, kindMembership, nil) }

// checkMembership checks a value stored under m/membership.
func checkMembership(rec []byte) error {
	if _, err := decodeRecord(keyMembership, rec, kindMembership); err != nil {
		return corruptMeta(keyMembership, err)
	}
	return nil
}

// loadMembership reads the marker from Badger (Open, OpenReadOnly).
func loadMembership(txn *badger.Txn) (bool, error) {
	rec, ok, err := getValue(txn, keyMembership)
	if err != nil || !ok {
		return false, err
	}
	if err := checkMembership(rec); err != nil {
		return false, err
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

// frameMarks reports whether a frame's entries carry m/membership
// (Inspect).
func frameMarks(es []entry) bool {
	for _, e := range es {
		if string(e.key) == string(keyMembership) {
			return true
		}
	}
	return false
}
