package wal

import (
	"bytes"
	"testing"
)

func TestSplitFitsEachPartInOneSave(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, dir, quietOptions()) // 4 MiB memtable: ~600 KiB per transaction
	const n, size = 24, 100 << 10         // inline values (below the threshold), 2.4 MiB in all
	u := Update{Promised: &Ballot{Round: 7, Node: 2}, Chosen: 9}
	for i := uint64(1); i <= n; i++ {
		u.Accepted = append(u.Accepted, Accepted{Index: i, Ballot: Ballot{Round: 7, Node: 2}, Value: bytes.Repeat([]byte{byte(i)}, size)})
	}
	wantErr(t, l.Save(u), ErrInvalid) // what the paxos engine used to send

	parts := l.Split(u)
	if len(parts) < 4 {
		t.Fatalf("%d parts for 2.4 MiB in ~600 KiB transactions", len(parts))
	}
	var next uint64 = 1
	for k, p := range parts {
		if (p.Promised != nil) != (k == 0) {
			t.Errorf("part %d: Promised %v; want it on the first part only", k, p.Promised)
		}
		last := k == len(parts)-1
		if (p.Chosen != 0) != last {
			t.Errorf("part %d: Chosen %d; want it on the last part only", k, p.Chosen)
		}
		if p.NoSync == last { // u needs a sync: the last part's covers the rest
			t.Errorf("part %d: NoSync %v; want only the last part synced", k, p.NoSync)
		}
		for _, a := range p.Accepted {
			if a.Index != next {
				t.Fatalf("part %d holds instance %d, want %d: order lost", k, a.Index, next)
			}
			next++
		}
		mustSave(t, l, p)
	}
	if next != n+1 {
		t.Fatalf("parts hold %d instances, want %d", next-1, n)
	}
	l.Close()

	l = openTest(t, dir, quietOptions())
	hs := l.HardState()
	if hs.Promised != *u.Promised || hs.Chosen != u.Chosen {
		t.Fatalf("after reopen: promised %v chosen %d, want %v and %d", hs.Promised, hs.Chosen, *u.Promised, u.Chosen)
	}
	for _, a := range u.Accepted {
		got, ok, err := l.Get(a.Index)
		if err != nil || !ok || !equalAccepted(got, a) {
			t.Fatalf("instance %d after reopen: ok=%v err=%v", a.Index, ok, err)
		}
	}
}

func TestSplitLeavesAFittingUpdateAlone(t *testing.T) {
	l := openTest(t, t.TempDir(), quietOptions())
	u := Update{Promised: &Ballot{Round: 1, Node: 1}, Accepted: []Accepted{acc(1, 1), acc(2, 1)}, Chosen: 2, NoSync: true}
	parts := l.Split(u)
	if len(parts) != 1 || parts[0].Promised != u.Promised || len(parts[0].Accepted) != 2 || parts[0].Chosen != 2 || !parts[0].NoSync {
		t.Fatalf("Split(fitting update) = %+v, want it unchanged", parts)
	}
}
