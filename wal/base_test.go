package wal

import (
	"bytes"
	"testing"
)

// TestTruncateWithBaseSurvivesReopen: the base snapshot and the first
// index are one durable record pair; a save of an instance below the
// first index afterwards is dropped, not resurrected.
func TestTruncateWithBaseSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	fill(t, l, 1, 100)
	if err := l.SaveApplied(80, []byte("state-80")); err != nil {
		t.Fatal(err)
	}
	wantErr(t, l.TruncateWithBase(82, []byte("x")), ErrInvalid) // past applied+1
	if err := l.TruncateWithBase(51, []byte("state-50")); err != nil {
		t.Fatal(err)
	}
	mustSave(t, l, Update{Accepted: []Accepted{acc(10, 9)}})
	l.Close()
	l = openTest(t, dir, quietOptions())
	hs := l.HardState()
	if hs.FirstIndex != 51 || string(hs.Base) != "state-50" || hs.Applied != 80 {
		t.Fatalf("after reopen: first %d base %q applied %d", hs.FirstIndex, hs.Base, hs.Applied)
	}
	_, _, err = l.Get(10)
	wantErr(t, err, ErrCompacted)
	as, err := l.Range(51, 100, 1<<20)
	if err != nil || len(as) != 50 || as[0].Index != 51 {
		t.Fatalf("Range(51,100) = %d entries, err %v", len(as), err)
	}
}

// TestInstallSnapshot: a lagging log takes a peer's snapshot beyond its
// applied index in one write; what it held below is gone (it may not have
// been chosen), what it held above stays.
func TestInstallSnapshot(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	fill(t, l, 1, 10)
	mustSave(t, l, Update{Accepted: []Accepted{acc(40, 3), acc(60, 3)}})
	if err := l.InstallSnapshot(50, []byte("peer-50")); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l = openTest(t, dir, quietOptions())
	hs := l.HardState()
	if hs.FirstIndex != 51 || hs.Applied != 50 || hs.Chosen != 50 || !bytes.Equal(hs.Snapshot, []byte("peer-50")) || !bytes.Equal(hs.Base, hs.Snapshot) {
		t.Fatalf("after install: %+v", hs)
	}
	if _, _, err := l.Get(40); err == nil {
		t.Fatal("instance 40 readable below the installed snapshot")
	}
	if a, ok, err := l.Get(60); err != nil || !ok || !equalAccepted(a, acc(60, 3)) {
		t.Fatalf("Get(60) = %v %v %v", a, ok, err)
	}
}

// TestCorruptBase: a base record that fails its checks, or describes
// another first index, makes Open fail naming it.
func TestCorruptBase(t *testing.T) {
	for name, rec := range map[string][]byte{
		"torn":       {recordVersion, byte(kindBase), 1, 2},
		"wrong base": encodeSnapshotRecord(keyBase, kindBase, 7, []byte("s")),
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			l, err := Open(dir, quietOptions())
			if err != nil {
				t.Fatal(err)
			}
			fill(t, l, 1, 20)
			if err := l.SaveApplied(20, []byte("s")); err != nil {
				t.Fatal(err)
			}
			if err := l.TruncateWithBase(11, []byte("s10")); err != nil {
				t.Fatal(err)
			}
			put(t, l, keyBase, rec)
			l.Close()
			_, err = Open(dir, quietOptions())
			wantCorrupt(t, err, string(keyBase))
		})
	}
}
