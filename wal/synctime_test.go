package wal

import "testing"

// TestSyncTimes: each durable Save's segment fdatasync lands in exactly
// one bucket, and their total time is counted.
func TestSyncTimes(t *testing.T) {
	l := openTest(t, t.TempDir(), quietOptions())
	for i := uint64(1); i <= 3; i++ {
		p := Ballot{Round: i, Node: 1}
		if err := l.Save(Update{Promised: &p, Accepted: []Accepted{acc(i, i)}, Chosen: i}); err != nil {
			t.Fatal(err)
		}
	}
	st := l.Stats()
	if len(st.SyncHist) != len(SyncBounds)+1 {
		t.Fatalf("%d buckets for %d bounds", len(st.SyncHist), len(SyncBounds))
	}
	var n int64
	for _, c := range st.SyncHist {
		n += c
	}
	if n < 1 || n > st.Syncs || st.SyncTime <= 0 {
		t.Fatalf("stats %+v: want 1..Syncs timed fdatasyncs and their time", st)
	}
}
