package wal

import (
	"bytes"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	l := openTest(t, t.TempDir(), quietOptions())
	if hs := l.HardState(); hs.FirstIndex != 1 || hs.Chosen != 0 || !hs.Promised.IsZero() {
		t.Fatalf("fresh HardState = %+v", hs)
	}
	if got := l.LastIndex(); got != 0 {
		t.Fatalf("fresh LastIndex = %d", got)
	}
	p := Ballot{Round: 3, Node: 2}
	mustSave(t, l, Update{Promised: &p, Accepted: []Accepted{acc(1, 3), acc(2, 3), acc(5, 3)}, Chosen: 2})
	hs := l.HardState()
	if hs.Promised != p || hs.Chosen != 2 {
		t.Fatalf("HardState = %+v", hs)
	}
	if got := l.LastIndex(); got != 5 {
		t.Fatalf("LastIndex = %d, want 5", got)
	}
	a, ok, err := l.Get(2)
	if err != nil || !ok || !equalAccepted(a, acc(2, 3)) {
		t.Fatalf("Get(2) = %+v %v %v", a, ok, err)
	}
	if _, ok, err := l.Get(3); ok || err != nil {
		t.Fatalf("Get(3) of a hole = %v %v", ok, err)
	}
	rs, err := l.Range(1, 10, 0)
	if err != nil || len(rs) != 3 || rs[0].Index != 1 || rs[1].Index != 2 || rs[2].Index != 5 {
		t.Fatalf("Range(1,10) = %+v %v", rs, err)
	}
	// An accepted record is replaced by a later one.
	mustSave(t, l, Update{Accepted: []Accepted{{Index: 2, Ballot: Ballot{Round: 4, Node: 1}, Value: []byte("new")}}})
	if a, _, _ := l.Get(2); a.Ballot.Round != 4 || string(a.Value) != "new" {
		t.Fatalf("Get(2) after replace = %+v", a)
	}
	if err := l.SaveApplied(2, []byte("snap@2")); err != nil {
		t.Fatal(err)
	}
	if hs := l.HardState(); hs.Applied != 2 || string(hs.Snapshot) != "snap@2" {
		t.Fatalf("after SaveApplied: %+v", hs)
	}
}

func TestRangeLimits(t *testing.T) {
	l := openTest(t, t.TempDir(), quietOptions())
	var as []Accepted
	for i := uint64(1); i <= 100; i++ {
		as = append(as, Accepted{Index: i, Value: bytes.Repeat([]byte{byte(i)}, 100)})
	}
	mustSave(t, l, Update{Accepted: as})
	rs, err := l.Range(10, 20, 0)
	if err != nil || len(rs) != 11 || rs[0].Index != 10 || rs[10].Index != 20 {
		t.Fatalf("Range(10,20) = %d records, %v", len(rs), err)
	}
	rs, err = l.Range(1, 100, 3*(100+rangeOverhead))
	if err != nil || len(rs) != 3 {
		t.Fatalf("Range with maxBytes for 3 = %d records, %v", len(rs), err)
	}
	rs, err = l.Range(1, 100, 1)
	if err != nil || len(rs) != 1 {
		t.Fatalf("Range with tiny maxBytes = %d records, %v; want at least one", len(rs), err)
	}
	if rs, err := l.Range(50, 40, 0); err != nil || len(rs) != 0 {
		t.Fatalf("Range(50,40) = %v %v", rs, err)
	}
	if rs, err := l.Range(101, 200, 0); err != nil || len(rs) != 0 {
		t.Fatalf("Range past the end = %v %v", rs, err)
	}
}

func TestRestartPersistence(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	p := Ballot{Round: 7, Node: 3}
	mustSave(t, l, Update{Promised: &p, Accepted: []Accepted{acc(1, 7), acc(2, 7), acc(3, 7)}, Chosen: 3})
	if err := l.SaveApplied(2, []byte("state@2")); err != nil {
		t.Fatal(err)
	}
	want := l.HardState()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	wantErr(t, l.Save(Update{Chosen: 9}), ErrClosed)
	_, _, err = l.Get(1)
	wantErr(t, err, ErrClosed)

	l = openTest(t, dir, quietOptions())
	got := l.HardState()
	if got.Promised != want.Promised || got.Chosen != 3 || got.Applied != 2 ||
		string(got.Snapshot) != "state@2" || got.FirstIndex != 1 {
		t.Fatalf("HardState after restart = %+v, want %+v", got, want)
	}
	if l.LastIndex() != 3 {
		t.Fatalf("LastIndex after restart = %d", l.LastIndex())
	}
	for i := uint64(1); i <= 3; i++ {
		if a, ok, err := l.Get(i); err != nil || !ok || !equalAccepted(a, acc(i, 7)) {
			t.Fatalf("Get(%d) after restart = %+v %v %v", i, a, ok, err)
		}
	}
}

func TestLockedDir(t *testing.T) {
	dir := t.TempDir()
	openTest(t, dir, quietOptions())
	_, err := Open(dir, quietOptions())
	wantErr(t, err, ErrLocked)
}

func TestMonotonicGuards(t *testing.T) {
	l := openTest(t, t.TempDir(), quietOptions())
	hi, lo := Ballot{Round: 5, Node: 1}, Ballot{Round: 4, Node: 9}
	mustSave(t, l, Update{Promised: &hi, Chosen: 10})
	// Lower values are ignored; the rest of the update is still written.
	mustSave(t, l, Update{Promised: &lo, Chosen: 3, Accepted: []Accepted{acc(11, 5)}})
	hs := l.HardState()
	if hs.Promised != hi || hs.Chosen != 10 {
		t.Fatalf("HardState moved backwards: %+v", hs)
	}
	if _, ok, _ := l.Get(11); !ok {
		t.Fatal("accepted record of an update with stale promise was not written")
	}
	// Applied never moves backwards; applied raises chosen.
	if err := l.SaveApplied(8, []byte("s8")); err != nil {
		t.Fatal(err)
	}
	if err := l.SaveApplied(6, []byte("s6")); err != nil {
		t.Fatal(err)
	}
	if hs := l.HardState(); hs.Applied != 8 || string(hs.Snapshot) != "s8" {
		t.Fatalf("applied moved backwards: %+v", hs)
	}
	if err := l.SaveApplied(20, []byte("s20")); err != nil {
		t.Fatal(err)
	}
	if hs := l.HardState(); hs.Chosen != 20 {
		t.Fatalf("SaveApplied(20) left Chosen at %d", hs.Chosen)
	}
	wantErr(t, l.Save(Update{Accepted: []Accepted{{Index: 0}}}), ErrInvalid)
}
