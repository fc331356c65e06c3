package wal

import (
	"bytes"
	"testing"
)

// A NoSync update is written and readable at once but costs no sync.
func TestNoSyncSkipsTheSync(t *testing.T) {
	l := openTest(t, t.TempDir(), quietOptions())
	before := l.Stats().Syncs
	mustSave(t, l, Update{Accepted: []Accepted{acc(1, 1)}, NoSync: true})
	if got := l.Stats().Syncs - before; got != 0 {
		t.Fatalf("NoSync save issued %d syncs", got)
	}
	a, ok, err := l.Get(1)
	if err != nil || !ok || !equalAccepted(a, acc(1, 1)) {
		t.Fatalf("Get(1) = %v, %v, %v", a, ok, err)
	}
	mustSave(t, l, Update{Accepted: []Accepted{acc(2, 1)}})
	if got := l.Stats().Syncs - before; got != 1 {
		t.Fatalf("synced save after a NoSync one issued %d syncs, want 1", got)
	}
}

// A NoSync update with a value in the value log is synced all the same:
// a later memtable sync would make its pointer durable, not the value.
func TestNoSyncValueLogIsSynced(t *testing.T) {
	opts := quietOptions()
	l := openTest(t, t.TempDir(), opts)
	big := bytes.Repeat([]byte{7}, int(l.valueThreshold)+1)
	before := l.Stats().Syncs
	mustSave(t, l, Update{Accepted: []Accepted{{Index: 1, Ballot: Ballot{Round: 1, Node: 1}, Value: big}}, NoSync: true})
	if got := l.Stats().Syncs - before; got != 1 {
		t.Fatalf("NoSync save to the value log issued %d syncs, want 1", got)
	}
}

// Lazy groups never stay unsynced in a memtable file that Badger leaves
// behind: every rotation that follows lazy groups is preceded by a sync
// of the file they are in, so a later synced group (in the new file)
// never survives a power cut without them.
func TestNoSyncSyncedBeforeRotation(t *testing.T) {
	if testing.Short() {
		t.Skip("writes several memtables")
	}
	l := openTest(t, t.TempDir(), quietOptions())
	val := make([]byte, 300)
	var idx uint64
	for l.stats.rotations.Load() < 3 {
		var chs []<-chan error
		for range 32 {
			idx++
			chs = append(chs, l.SaveAsync(Update{Accepted: []Accepted{{Index: idx, Ballot: Ballot{Round: 1, Node: 1}, Value: val}}, Chosen: idx - 1, NoSync: true}))
		}
		for _, ch := range chs {
			if err := <-ch; err != nil {
				t.Fatal(err)
			}
		}
	}
	rot, syncs := l.stats.rotations.Load(), l.Stats().Syncs
	if syncs < rot {
		t.Fatalf("%d rotations after lazy groups, only %d syncs", rot, syncs)
	}
	t.Logf("%d lazy saves, %d rotations, %d syncs", idx, rot, syncs)
	if m := l.stats.boundMisses.Load(); m != 0 {
		t.Fatalf("%d rotations below the fill bound: lazy groups may have been left unsynced", m)
	}
}
