package wal

import (
	"sync"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

func fill(t *testing.T, l *Log, from, to uint64) {
	t.Helper()
	for lo := from; lo <= to; lo += 500 {
		var as []Accepted
		for i := lo; i < lo+500 && i <= to; i++ {
			as = append(as, acc(i, 1))
		}
		mustSave(t, l, Update{Accepted: as, Chosen: min(lo+499, to)})
	}
}

// storedBelow counts accepted keys physically in Badger below index.
func storedBelow(t *testing.T, l *Log, index uint64) int {
	t.Helper()
	n := 0
	err := l.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte{prefixAccepted}})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if i, _ := indexOfKey(it.Item().Key()); i < index {
				n++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestTruncateBelow(t *testing.T) {
	dir := t.TempDir()
	opts := quietOptions()
	opts.ReclaimDelay = -1 // drop at once: this test looks at what is stored
	l, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	const last = 10000 // buckets 0, 1 and part of 2
	fill(t, l, 1, last)
	wantErr(t, l.TruncateBelow(9000), ErrInvalid) // nothing applied yet
	if err := l.SaveApplied(8999, []byte("snap")); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateBelow(9000); err != nil {
		t.Fatal(err)
	}
	if hs := l.HardState(); hs.FirstIndex != 9000 {
		t.Fatalf("FirstIndex = %d", hs.FirstIndex)
	}
	_, _, err = l.Get(8999)
	wantErr(t, err, ErrCompacted)
	_, err = l.Range(1, last, 0)
	wantErr(t, err, ErrCompacted)
	rs, err := l.Range(9000, last, 0)
	if err != nil || len(rs) != last-9000+1 || rs[0].Index != 9000 {
		t.Fatalf("Range(9000,%d) = %d records, %v", last, len(rs), err)
	}
	// Whole buckets below the checkpoint are gone from Badger; the part of
	// bucket 2 below 9000 waits for the next truncation.
	if n := storedBelow(t, l, 2<<bucketShift); n != 0 {
		t.Fatalf("%d keys left in dropped buckets", n)
	}
	if n := storedBelow(t, l, 9000); n != 9000-(2<<bucketShift) {
		t.Fatalf("%d keys below 9000, want only bucket 2's", n)
	}
	if st := l.Stats(); st.Drops != 1 || st.DropTime <= 0 {
		t.Fatalf("Stats after one dropping truncation: Drops=%d DropTime=%v", st.Drops, st.DropTime)
	}
	// No-op at or below FirstIndex.
	if err := l.TruncateBelow(10); err != nil {
		t.Fatal(err)
	}
	// Accepted records below FirstIndex are ignored.
	mustSave(t, l, Update{Accepted: []Accepted{acc(100, 9)}})
	if n := storedBelow(t, l, 2<<bucketShift); n != 0 {
		t.Fatal("a Save below FirstIndex was stored")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	l = openTest(t, dir, quietOptions())
	if hs := l.HardState(); hs.FirstIndex != 9000 || hs.Applied != 8999 {
		t.Fatalf("after restart: %+v", hs)
	}
	_, _, err = l.Get(100)
	wantErr(t, err, ErrCompacted)
	if l.LastIndex() != last {
		t.Fatalf("LastIndex = %d", l.LastIndex())
	}
	// Truncate everything: LastIndex becomes FirstIndex-1.
	if err := l.SaveApplied(last, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateBelow(last + 1); err != nil {
		t.Fatal(err)
	}
	_, _, err = l.Get(last)
	wantErr(t, err, ErrCompacted)
	if l.LastIndex() != last {
		t.Fatalf("LastIndex after truncating all = %d, want %d", l.LastIndex(), last)
	}
}

// TestTruncateWithConcurrentSaves: Saves racing a truncation all succeed
// (DropPrefix blocks Badger writes, so it must not run beside a group).
func TestTruncateWithConcurrentSaves(t *testing.T) {
	l := openTest(t, t.TempDir(), quietOptions())
	fill(t, l, 1, 3*(1<<bucketShift))
	if err := l.SaveApplied(3*(1<<bucketShift), nil); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				idx := uint64(20000 + g*100 + i)
				if err := l.Save(Update{Accepted: []Accepted{acc(idx, 2)}}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for _, below := range []uint64{1000, 5000, 9000, 12000} {
		if err := l.TruncateBelow(below); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	rs, err := l.Range(20000, 21000, 0)
	if err != nil || len(rs) != 400 {
		t.Fatalf("Range = %d records, %v; want 400", len(rs), err)
	}
}
