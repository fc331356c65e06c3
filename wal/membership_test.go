package wal

import (
	"sync"
	"testing"
	"time"
)

// TestMembershipMarker: a fresh log has no marker; MarkMembershipSaved
// sets it durably (every later Open, read-only included, and Inspect see
// it) while saves go on around it; a read-only log refuses to set it.
func TestMembershipMarker(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if l.MembershipSaved() {
		t.Fatal("a fresh log has the membership marker")
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := uint64(1); i <= 50; i++ {
				idx := uint64(w)*50 + i
				if err := l.Save(Update{Accepted: []Accepted{acc(idx, 1)}}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for range 3 { // idempotent, and concurrent with the saves
		if err := l.MarkMembershipSaved(); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if !l.MembershipSaved() {
		t.Fatal("MembershipSaved false after MarkMembershipSaved")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	r, err := Inspect(dir, quietOptions())
	if err != nil || !r.MembershipSaved {
		t.Fatalf("Inspect: MembershipSaved %v, %v", r != nil && r.MembershipSaved, err)
	}
	before := hashDir(t, dir)
	ro, err := OpenReadOnly(dir, quietOptions())
	if err != nil {
		t.Fatal(err)
	}
	if !ro.MembershipSaved() {
		t.Fatal("read-only open lost the marker")
	}
	wantErr(t, ro.MarkMembershipSaved(), ErrReadOnly)
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	for name, h := range hashDir(t, dir) {
		if before[name] != h {
			t.Errorf("read-only open changed %s", name)
		}
	}

	l = openTest(t, dir, quietOptions())
	if !l.MembershipSaved() {
		t.Fatal("the marker did not survive a reopen")
	}
	if as, err := l.Range(1, 200, 0); err != nil || len(as) != 200 {
		t.Fatalf("Range after reopen: %d records, %v; want 200", len(as), err)
	}
}

// TestInspectNoMembershipMarker: a log that never saw a membership
// history reports none.
func TestInspectNoMembershipMarker(t *testing.T) {
	dir := t.TempDir()
	l := openTest(t, dir, quietOptions())
	mustSave(t, l, Update{Accepted: []Accepted{acc(1, 1)}})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Inspect(dir, quietOptions())
	if err != nil || r.MembershipSaved {
		t.Fatalf("Inspect: %+v, %v; want no marker", r, err)
	}
}

// TestMembershipMarkerBesideSaves: while the marker is being made
// durable (its sync held here, as a slow disk would), Saves go on and
// are answered: the marking neither waits for the groups in flight nor
// holds up the next ones (it did, in the commit goroutine, and a cluster
// whose nodes all marked at once lost its leader: paxos'
// TestMembershipMarkingDoesNotStallCommits). Close waits for it.
func TestMembershipMarkerBesideSaves(t *testing.T) {
	dir := t.TempDir()
	entered, release := make(chan struct{}), make(chan struct{})
	opts := quietOptions()
	opts.Knobs = &TestingKnobs{BeforeMembershipSync: func() {
		close(entered)
		<-release
	}}
	l, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	marked := make(chan error, 1)
	go func() { marked <- l.MarkMembershipSaved() }()
	<-entered
	for i := uint64(1); i <= 50; i++ {
		select {
		case err := <-l.SaveAsync(Update{Accepted: []Accepted{acc(i, 1)}}):
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			close(release)
			t.Fatalf("save %d waited for the membership marker's sync", i)
		}
	}
	if l.MembershipSaved() {
		t.Fatal("MembershipSaved before the marker is durable")
	}
	closed := make(chan error, 1)
	go func() { closed <- l.Close() }()
	close(release)
	if err := <-marked; err != nil {
		t.Fatal(err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	l = openTest(t, dir, quietOptions())
	if !l.MembershipSaved() {
		t.Fatal("the marker did not survive a reopen")
	}
	if as, err := l.Range(1, 50, 0); err != nil || len(as) != 50 {
		t.Fatalf("Range after reopen: %d records, %v; want 50", len(as), err)
	}
	if err := l.MarkMembershipSaved(); err != nil {
		t.Fatal(err)
	}
}
