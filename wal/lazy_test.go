package wal

import "testing"

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

// Lazy groups sync once their unsynced bytes reach LazySyncBytes, and
// not before: a node whose saves are all lazy still writes to disk in
// small steps. A negative bound leaves them all unsynced.
func TestLazySyncBytesBoundsUnsyncedBytes(t *testing.T) {
	for _, tc := range []struct {
		bound      int64
		minS, maxS int64
	}{
		// 100 saves of ~360 file bytes each (value, key, header, txn end):
		// 36,000 bytes, so 8 KiB is reached 4 times.
		{bound: 8 << 10, minS: 3, maxS: 5},
		{bound: -1, minS: 0, maxS: 0},
	} {
		opts := quietOptions()
		opts.LazySyncBytes = tc.bound
		l := openTest(t, t.TempDir(), opts)
		val := make([]byte, 200)
		for i := uint64(1); i <= 100; i++ {
			mustSave(t, l, Update{Accepted: []Accepted{{Index: i, Ballot: Ballot{Round: 1, Node: 1}, Value: val}}, NoSync: true})
		}
		if got := l.Stats().Syncs; got < tc.minS || got > tc.maxS {
			t.Errorf("LazySyncBytes=%d: %d syncs for 100 lazy saves, want %d..%d", tc.bound, got, tc.minS, tc.maxS)
		}
	}
}
