package wal

import (
	"os"
	"strings"
	"testing"
	"time"
)

// saveUntil saves 300-byte records from *idx on until cond holds, and
// fails after maxRotations memtable rotations without it.
func saveUntil(t *testing.T, l *Log, idx *uint64, maxRotations int64, cond func() bool) {
	t.Helper()
	start := l.stats.rotations.Load()
	val := make([]byte, 300)
	for !cond() {
		if l.stats.rotations.Load()-start > maxRotations {
			t.Fatalf("condition not met after %d rotations", maxRotations)
		}
		var as []Accepted
		for range 64 {
			*idx++
			as = append(as, Accepted{Index: *idx, Ballot: Ballot{Round: 1, Node: 1}, Value: val})
		}
		mustSave(t, l, Update{Accepted: as})
	}
}

// awaitBadger waits until Badger has caught up as it does under a
// moderate load: every memtable but the current one is flushed (their
// files are deleted once they are tables) and level 0 is not waiting for
// its compaction (Badger compacts it at NumLevelZeroTables tables).
func awaitBadger(t *testing.T, l *Log) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for memFiles(t, l.dir) > 1 || l.db.Levels()[0].NumTables >= 4 {
		if time.Now().After(deadline) {
			t.Fatal("Badger has not flushed and compacted after 30s")
		}
		time.Sleep(time.Millisecond)
	}
}

func memFiles(t *testing.T, dir string) int {
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range es {
		if strings.HasSuffix(e.Name(), memFileExt) {
			n++
		}
	}
	return n
}

func truncateAt(t *testing.T, l *Log, cut uint64) {
	t.Helper()
	if err := l.SaveApplied(cut-1, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateBelow(cut); err != nil {
		t.Fatal(err)
	}
}

// truncateLeavingRecords fills three buckets (more than a memtable's
// quarter), truncates all of them and checks the drop did not run at
// once; it returns the last index written.
func truncateLeavingRecords(t *testing.T, l *Log) uint64 {
	t.Helper()
	var idx uint64
	saveUntil(t, l, &idx, 1, func() bool { return idx >= 3<<bucketShift })
	truncateAt(t, l, idx+1)
	if storedBelow(t, l, wholeBuckets(idx+1)) == 0 {
		t.Fatal("the drop ran at once with a fat memtable")
	}
	return idx
}

// wholeBuckets rounds index down to its bucket's first index.
func wholeBuckets(index uint64) uint64 { return (index >> bucketShift) << bucketShift }

// A truncation is visible at once, but its space is reclaimed only at a
// cheap moment (reclaim.go): the current memtable young, the previous one
// flushed, level 0 empty, some memtables after the last drop. Until then
// the dropped records stay on disk, unreadable.
func TestReclaimWaitsForACheapMoment(t *testing.T) {
	if testing.Short() {
		t.Skip("writes many memtables")
	}
	opts := quietOptions()
	// Only the rotation rule may trigger a drop here: under a loaded host
	// the default minute's bound passed before the fourth rotation.
	opts.ReclaimDelay = time.Hour
	l := openTest(t, t.TempDir(), opts)
	var idx uint64
	// Past a quarter of the memtable, so a drop now would flush a fat one.
	saveUntil(t, l, &idx, 1, func() bool { return idx >= 3<<bucketShift })
	cut := idx - 100
	truncateAt(t, l, cut)
	_, _, err := l.Get(1)
	wantErr(t, err, ErrCompacted)
	if n := storedBelow(t, l, cut); n == 0 || l.Stats().Drops != 0 {
		t.Fatalf("truncation with a fat memtable dropped at once (%d left, %d drops)", n, l.Stats().Drops)
	}
	// Writing only when Badger has caught up, as under a moderate load,
	// leaves a cheap moment once level 0 is compacted.
	saveUntil(t, l, &idx, 12, func() bool {
		awaitBadger(t, l)
		return l.Stats().Drops > 0
	})
	if n := storedBelow(t, l, wholeBuckets(cut)); n != 0 {
		t.Fatalf("%d records left in whole buckets below %d after the drop", n, cut)
	}
	// The next drop waits for reclaimRotations more memtables, so that it
	// takes many buckets at once.
	r0 := l.stats.rotations.Load()
	next := wholeBuckets(cut) + 2<<bucketShift
	saveUntil(t, l, &idx, 2, func() bool { return idx >= next+100 })
	cut = idx - 100
	truncateAt(t, l, cut)
	saveUntil(t, l, &idx, 12, func() bool {
		awaitBadger(t, l)
		return l.Stats().Drops > 1
	})
	if rot := l.stats.rotations.Load() - r0; rot < reclaimRotations {
		t.Fatalf("second drop after %d rotations, want at least %d", rot, reclaimRotations)
	}
	if n := storedBelow(t, l, wholeBuckets(cut)); n != 0 {
		t.Fatalf("%d records left in whole buckets below %d after the second drop", n, cut)
	}
}

// ReclaimDelay bounds the wait: once it has passed, the drop runs.
func TestReclaimDelayBoundsTheWait(t *testing.T) {
	opts := quietOptions()
	opts.ReclaimDelay = time.Nanosecond
	l := openTest(t, t.TempDir(), opts)
	var idx uint64
	saveUntil(t, l, &idx, 1, func() bool { return idx >= 2<<bucketShift })
	truncateAt(t, l, idx+1)
	if n := storedBelow(t, l, wholeBuckets(idx+1)); n != 0 {
		t.Fatalf("%d records left in whole buckets below %d", n, idx+1)
	}
}

// ReclaimNow drops at once what truncations left, whatever the moment.
func TestReclaimNow(t *testing.T) {
	l := openTest(t, t.TempDir(), quietOptions())
	idx := truncateLeavingRecords(t, l)
	if err := l.ReclaimNow(); err != nil {
		t.Fatal(err)
	}
	if n := storedBelow(t, l, wholeBuckets(idx+1)); n != 0 || l.Stats().Drops != 1 {
		t.Fatalf("after ReclaimNow: %d records left in whole buckets below %d, %d drops", n, idx+1, l.Stats().Drops)
	}
	// Nothing left: a no-op, and the log goes on.
	if err := l.ReclaimNow(); err != nil || l.Stats().Drops != 1 {
		t.Fatalf("second ReclaimNow: %v, %d drops", err, l.Stats().Drops)
	}
	mustSave(t, l, Update{Accepted: []Accepted{acc(idx+1, 1)}})
}

// Records a crash (or a close) left below FirstIndex before their drop
// are dropped after Open, at the first write.
func TestReclaimAfterReopen(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, dir, quietOptions())
	idx := truncateLeavingRecords(t, l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	opts := quietOptions()
	opts.ReclaimDelay = -1
	l = openTest(t, dir, opts)
	mustSave(t, l, Update{Accepted: []Accepted{{Index: idx + 1, Ballot: Ballot{Round: 1, Node: 1}, Value: []byte("x")}}})
	if n := storedBelow(t, l, wholeBuckets(idx+1)); n != 0 {
		t.Fatalf("%d records left in whole buckets below FirstIndex after reopen and a write", n)
	}
}
