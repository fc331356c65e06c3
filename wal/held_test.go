package wal

import (
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// TestHeldGroupsShareATransaction: synced groups are held until
// ApplyGroups of them wait, then go into Badger as one transaction; every
// answered Save is readable throughout, metadata included, and a reopen
// after Badger lost the held groups (a crash before their apply) replays
// them from the segment.
func TestHeldGroupsShareATransaction(t *testing.T) {
	dir := t.TempDir()
	opts := quietOptions()
	opts.ApplyGroups = 8
	l := openTest(t, dir, opts)
	const n = 8*5 + 3 // five full holds, three left held
	for i := uint64(1); i <= n; i++ {
		p := Ballot{Round: i, Node: 1}
		mustSave(t, l, Update{Promised: &p, Accepted: []Accepted{acc(i, i)}, Chosen: i - 1})
		if a, ok, err := l.Get(i); err != nil || !ok || !equalAccepted(a, acc(i, i)) {
			t.Fatalf("Get(%d) right after its Save = %+v, %v, %v", i, a, ok, err)
		}
		rs, err := l.Range(1, i, 0)
		if err != nil || uint64(len(rs)) != i || !equalAccepted(rs[i-1], acc(i, i)) {
			t.Fatalf("Range(1, %d) = %d records, %v", i, len(rs), err)
		}
		if hs := l.HardState(); hs.Promised.Round != i || hs.Chosen != i-1 {
			t.Fatalf("HardState after Save %d = %+v", i, hs)
		}
	}
	st := l.Stats()
	if st.Groups != n || st.Txns > n/8+1 {
		t.Fatalf("stats %+v: want %d groups in at most %d transactions", st, n, n/8+1)
	}
	if len(l.pending) != 3 {
		t.Fatalf("%d groups held, want 3", len(l.pending))
	}
	// A crash now leaves Badger without the three held groups: stop the
	// Log without its final apply by dropping them, as a kill would.
	l.pending, l.heldBytes = nil, 0
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := func() error {
		o, err := opts.withDefaults()
		if err != nil {
			return err
		}
		db, err := badger.Open(o.badger(dir))
		if err != nil {
			return err
		}
		defer db.Close()
		return db.View(func(txn *badger.Txn) error {
			if _, err := txn.Get(acceptedKey(n)); err != badger.ErrKeyNotFound {
				t.Errorf("Badger holds instance %d (err %v): the test wants it held only in memory", n, err)
			}
			return nil
		})
	}(); err != nil {
		t.Fatal(err)
	}
	l = openTest(t, dir, opts)
	if hs := l.HardState(); hs.Promised.Round != n || hs.Chosen != n-1 || l.LastIndex() != n {
		t.Fatalf("after reopen: HardState %+v, LastIndex %d", hs, l.LastIndex())
	}
	for i := uint64(1); i <= n; i++ {
		if a, ok, err := l.Get(i); err != nil || !ok || !equalAccepted(a, acc(i, i)) {
			t.Fatalf("Get(%d) after reopen = %+v, %v, %v", i, a, ok, err)
		}
	}
}

// TestHeldGroupsAppliedBeforeTruncation: a truncation writes Badger
// directly, so the held groups go in first; what is above the cut stays.
func TestHeldGroupsAppliedBeforeTruncation(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, dir, quietOptions())
	for i := uint64(1); i <= 10; i++ {
		mustSave(t, l, Update{Accepted: []Accepted{acc(i, 1)}})
	}
	// Instance 7 accepted again under a higher ballot, in a later held group.
	mustSave(t, l, Update{Accepted: []Accepted{acc(7, 2)}})
	if err := l.SaveApplied(4, []byte("state@4")); err != nil {
		t.Fatal(err)
	}
	if len(l.pending) == 0 {
		t.Fatal("no group held before the truncation: the test wants some")
	}
	if err := l.TruncateBelow(5); err != nil {
		t.Fatal(err)
	}
	if len(l.pending) != 0 {
		t.Fatalf("%d groups still held after a truncation", len(l.pending))
	}
	check := func() {
		t.Helper()
		rs, err := l.Range(5, 10, 0)
		if err != nil || len(rs) != 6 {
			t.Fatalf("Range(5, 10) = %+v, %v", rs, err)
		}
		for _, a := range rs {
			want := acc(a.Index, 1)
			if a.Index == 7 {
				want = acc(7, 2)
			}
			if !equalAccepted(a, want) {
				t.Fatalf("Range: %+v, want %+v", a, want)
			}
		}
	}
	check()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTest(t, dir, quietOptions())
	check()
}
