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
// after every later Open. Idempotent: once marked it writes nothing. It
// runs in the commit goroutine between groups (like a truncation): it
// waits for the groups in flight, then writes the marker to Badger and
// makes Badger durable. ErrReadOnly on a read-only log; a failed write
// fails the log (ErrFailed), as any write does.
func (l *Log) MarkMembershipSaved() error {
	if l.readOnly {
		return ErrReadOnly
	}
	if l.MembershipSaved() {
		return nil
	}
	return l.submit(&op{markMembership: true})
}

// markMembership is MarkMembershipSaved in the commit goroutine, with no
// group in flight (so the apply path, which also writes Badger, is idle).
func (l *Log) markMembership() error {
	if err := l.failure(); err != nil {
		return fmt.Errorf("%w: %w", ErrFailed, err)
	}
	if l.MembershipSaved() {
		return nil
	}
	err := l.writeBadger([]entry{{key: keyMembership, val: encodeRecord(keyMembership, kindMembership, nil)}})
	if err == nil {
		err = l.syncBadger()
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
