package wal

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestOpenReadOnly: a log as a crash leaves it (Badger behind the
// segment, a torn tail, an empty Badger file from a power loss) reads
// through OpenReadOnly as through Open, refuses writes, and not one byte
// in the directory changes, nor does a file appear or go.
func TestOpenReadOnly(t *testing.T) {
	dir := t.TempDir()
	seg := twentyPromises(t, dir)
	starts := frameStarts(t, dir, seg)
	loseBadgerAfter(t, dir, seg, 5, starts)
	patchFile(t, filepath.Join(dir, segName(seg)), func(b []byte) []byte { return append(b, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3) })
	if err := os.WriteFile(filepath.Join(dir, "000099.vlog"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	before := hashDir(t, dir)

	l, err := OpenReadOnly(dir, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if hs := l.HardState(); hs.Promised.Round != 20 || l.LastIndex() != 20 {
		t.Fatalf("promised %v, last %d; want 20, 20 (the replayed frames)", hs.Promised, l.LastIndex())
	}
	as, err := l.Range(1, 20, 0)
	if err != nil || len(as) != 20 {
		t.Fatalf("Range: %d records, %v; want 20", len(as), err)
	}
	for i, a := range as {
		if want := acc(uint64(i+1), uint64(i+1)); !equalAccepted(a, want) {
			t.Fatalf("Range[%d] = %+v, want %+v", i, a, want)
		}
	}
	if a, ok, err := l.Get(12); err != nil || !ok || !equalAccepted(a, acc(12, 12)) {
		t.Fatalf("Get(12) = %+v %v %v", a, ok, err)
	}
	p := Ballot{Round: 99, Node: 1}
	wantErr(t, l.Save(Update{Promised: &p}), ErrReadOnly)
	wantErr(t, l.TruncateBelow(2), ErrReadOnly)
	if _, err := Open(dir, quietOptions()); !errors.Is(err, ErrLocked) {
		t.Fatalf("Open while read-only open: %v, want ErrLocked", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	after := hashDir(t, dir)
	for name, h := range before {
		if after[name] != h {
			t.Errorf("OpenReadOnly changed %s", name)
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("OpenReadOnly created %s", name)
		}
	}
	// What it showed is what Open then finds.
	rw := openTest(t, dir, quietOptions())
	if hs := rw.HardState(); hs.Promised.Round != 20 || rw.LastIndex() != 20 {
		t.Fatalf("Open after: promised %v, last %d", hs.Promised, rw.LastIndex())
	}
}

// TestOpenReadOnlyNoLog: no log, no directory made.
func TestOpenReadOnlyNoLog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "none")
	if _, err := OpenReadOnly(dir, quietOptions()); err == nil {
		t.Fatal("OpenReadOnly of a missing directory succeeded")
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("OpenReadOnly created %s: %v", dir, err)
	}
}
