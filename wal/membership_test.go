package wal

import (
	"bytes"
	"os"
	"sync"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// markedFrames walks every segment of the (closed) log in dir and returns
// the frames that carry m/membership.
func markedFrames(t *testing.T, dir string) [][]entry {
	t.Helper()
	ids, err := segFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	segs := newSegments(dir)
	var out [][]entry
	for _, id := range ids {
		path := segs.path(id)
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		_, err = walkSegment(f, path, uint64(fi.Size()), id, 0, func(es []entry, _ []uint64, _ uint64) error {
			if frameMarks(es) {
				out = append(out, es)
			}
			return nil
		})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// badgerMarker reads m/membership from Badger alone (no replay).
func badgerMarker(t *testing.T, dir string) bool {
	t.Helper()
	var saved bool
	err := offline(dir, quietOptions(), true, func(db *badger.DB, _ *segments, _ []uint64) (err error) {
		saved, err = readMembership(db)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return saved
}

// TestMembershipMarker: a fresh log has no marker; an update with
// MarkMembership sets it (concurrent saves going on, several updates
// asking for it: it is written once); every later Open, read-only
// included, and Inspect see it, and a read-only open changes nothing.
func TestMembershipMarker(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if l.MembershipSaved() {
		t.Fatal("a fresh log has the membership marker")
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := uint64(1); i <= 50; i++ {
				idx := uint64(w)*50 + i
				if err := l.Save(Update{Accepted: []Accepted{acc(idx, 1)}}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for i := range uint64(3) { // concurrent with the saves
		mustSave(t, l, Update{Accepted: []Accepted{acc(1000+i, 1)}, MarkMembership: true})
		if !l.MembershipSaved() {
			t.Fatalf("MembershipSaved false after a synced marked save (%d)", i)
		}
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if fs := markedFrames(t, dir); len(fs) != 1 {
		t.Fatalf("%d frames carry m/membership, want 1", len(fs))
	}

	r, err := Inspect(dir, quietOptions())
	if err != nil || !r.MembershipSaved {
		t.Fatalf("Inspect: MembershipSaved %v, %v", r != nil && r.MembershipSaved, err)
	}
	before := hashDir(t, dir)
	ro, err := OpenReadOnly(dir, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if !ro.MembershipSaved() {
		t.Fatal("read-only open lost the marker")
	}
	wantErr(t, ro.Save(Update{MarkMembership: true}), ErrReadOnly)
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	for name, h := range hashDir(t, dir) {
		if before[name] != h {
			t.Errorf("read-only open changed %s", name)
		}
	}

	l = openTest(t, dir, quietOptions())
	if !l.MembershipSaved() {
		t.Fatal("the marker did not survive a reopen")
	}
	if as, err := l.Range(1, 200, 0); err != nil || len(as) != 200 {
		t.Fatalf("Range after reopen: %d records, %v; want 200", len(as), err)
	}
	// Marked already: a later update asking again writes no entry.
	mustSave(t, l, Update{Accepted: []Accepted{acc(2000, 1)}, MarkMembership: true})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if fs := markedFrames(t, dir); len(fs) != 1 {
		t.Fatalf("%d frames carry m/membership after a reopen, want 1", len(fs))
	}
}

// TestMembershipMarkerRidesTheFrame: the marker costs no sync, no
// group and no Badger transaction of its own: it is one entry in the
// frame of the update that asks for it. (The two designs before wrote
// it with a Badger write and sync of their own, which delayed the saves
// behind them at every membership change: e2e TestLearner.)
func TestMembershipMarkerRidesTheFrame(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, dir, applyAtOnce())
	mustSave(t, l, Update{Accepted: []Accepted{acc(1, 1)}})
	s0 := l.Stats()
	mustSave(t, l, Update{Accepted: []Accepted{acc(2, 1)}})
	s1 := l.Stats()
	mustSave(t, l, Update{Accepted: []Accepted{acc(3, 1)}, MarkMembership: true})
	s2 := l.Stats()
	if !l.MembershipSaved() {
		t.Fatal("MembershipSaved false after a synced marked save")
	}
	plain := [3]int64{s1.Syncs - s0.Syncs, s1.Groups - s0.Groups, s1.Txns - s0.Txns}
	marked := [3]int64{s2.Syncs - s1.Syncs, s2.Groups - s1.Groups, s2.Txns - s1.Txns}
	if plain != marked || plain[0] != 1 {
		t.Fatalf("syncs, groups, Badger txns: %v for a marked save, %v for a plain one; want the same (1 sync)", marked, plain)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	fs := markedFrames(t, dir)
	if len(fs) != 1 {
		t.Fatalf("%d frames carry m/membership, want 1", len(fs))
	}
	shared := false
	for _, e := range fs[0] {
		shared = shared || bytes.Equal(e.key, acceptedKey(3))
	}
	if !shared {
		t.Fatal("the marker is not in the frame of the update that asked for it")
	}
}

// TestMembershipMarkerLazy: on an update saved without a sync of its own
// (NoSync, as the paxos persister's marker-only save is) the marker adds
// no sync, and MembershipSaved waits for the sync that makes it durable:
// a later synced save's; a marker alone without NoSync is synced.
func TestMembershipMarkerLazy(t *testing.T) {
	l := openTest(t, t.TempDir(), quietOptions())
	mustSave(t, l, Update{Accepted: []Accepted{acc(1, 1)}})
	s0 := l.Stats()
	mustSave(t, l, Update{Chosen: 1, MarkMembership: true, NoSync: true})
	if d := l.Stats().Syncs - s0.Syncs; d != 0 {
		t.Fatalf("a lazy marked save synced %d times", d)
	}
	if l.MembershipSaved() {
		t.Fatal("MembershipSaved before the marker was synced")
	}
	mustSave(t, l, Update{Accepted: []Accepted{acc(2, 1)}})
	if !l.MembershipSaved() {
		t.Fatal("MembershipSaved false after a synced save covered the marker")
	}

	l = openTest(t, t.TempDir(), quietOptions())
	s0 = l.Stats()
	mustSave(t, l, Update{MarkMembership: true})
	if d := l.Stats().Syncs - s0.Syncs; d != 1 || !l.MembershipSaved() {
		t.Fatalf("a marker alone: %d syncs, MembershipSaved %v; want 1, true", d, l.MembershipSaved())
	}
}

// TestMembershipMarkerReplayed: a crash after the marker's frame was
// synced and before Badger got it (Badger is synced only at truncations,
// so a power cut may keep it behind the segments): Inspect and a
// read-only open see the marker in the frame they would replay, and
// Open replays it into Badger.
func TestMembershipMarkerReplayed(t *testing.T) {
	dir := t.TempDir()
	opts := quietOptions()
	l := openTest(t, dir, opts)
	for i := uint64(1); i <= 10; i++ {
		mustSave(t, l, Update{Accepted: []Accepted{acc(i, 1)}})
	}
	before := segPos{l.segID, l.segOff} // the marked frame starts here
	mustSave(t, l, Update{Accepted: []Accepted{acc(11, 1)}, MarkMembership: true})
	mustSave(t, l, Update{Accepted: []Accepted{acc(12, 1)}})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Badger "lost" the marker and every frame from the marked one on.
	editBadger(t, dir, func(txn *badger.Txn) error {
		if err := txn.Delete(keyMembership); err != nil {
			return err
		}
		return txn.Set(keySegPos, encodeSegPos(before))
	})
	if badgerMarker(t, dir) {
		t.Fatal("the test did not take the marker from Badger")
	}
	r, err := Inspect(dir, opts)
	if err != nil || !r.MembershipSaved {
		t.Fatalf("Inspect with the marker only in a frame to replay: MembershipSaved %v, %v", r != nil && r.MembershipSaved, err)
	}
	ro, err := OpenReadOnly(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !ro.MembershipSaved() {
		t.Fatal("read-only open did not see the marker in the frame it replays")
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if badgerMarker(t, dir) {
		t.Fatal("a read-only open wrote the marker")
	}
	l = openTest(t, dir, opts)
	if !l.MembershipSaved() {
		t.Fatal("Open's replay lost the marker")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if !badgerMarker(t, dir) {
		t.Fatal("Open's replay did not put the marker into Badger")
	}
	l = openTest(t, dir, opts)
	if !l.MembershipSaved() {
		t.Fatal("the marker did not survive a reopen after the replay")
	}
}
