package paxos

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"phxgo/wal"
)

func sampleHistory() []byte {
	h := &history{items: []Membership{{Index: 0, Active: 0, Members: []Member{
		{ID: 1, Addr: "127.0.0.1:36011"}, {ID: 2, Addr: "127.0.0.1:36021"}, {ID: 3, Addr: "127.0.0.1:36031"}}}}}
	return h.encode()
}

// The membership file names the voters whose majorities the node counts:
// a flipped byte that still decodes (another address) used to pass.
func TestMembershipFileChecksum(t *testing.T) {
	dir := t.TempDir()
	f := fileMeta{path: filepath.Join(dir, "paxos-membership")}
	want := sampleHistory()
	if err := f.SaveMeta(want); err != nil {
		t.Fatal(err)
	}
	got, err := f.LoadMeta()
	if err != nil || string(got) != string(want) {
		t.Fatalf("load after save: %q %v", got, err)
	}
	if err := CheckMembershipFile(dir); err != nil {
		t.Fatalf("a whole file: %v", err)
	}
	b, _ := os.ReadFile(f.path)
	i := strings.Index(string(b), "36021")
	b[i+4] = '9' // 127.0.0.1:36029: still a valid history
	if _, err := decodeHistory(b[:len(b)-len(metaSumMagic)-4]); err != nil {
		t.Fatalf("the flip should still decode (that is the danger): %v", err)
	}
	if err := os.WriteFile(f.path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.LoadMeta(); !errors.Is(err, ErrBadValue) || !strings.Contains(err.Error(), f.path) || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("a flipped address: %v, want a damage error naming the file", err)
	}
	if err := CheckMembershipFile(dir); err == nil {
		t.Fatal("CheckMembershipFile passed a damaged file")
	}
}

// A file an earlier version wrote (no checksum) is still read, and the
// next save adds the checksum.
func TestMembershipFileWithoutChecksum(t *testing.T) {
	dir := t.TempDir()
	f := fileMeta{path: filepath.Join(dir, "paxos-membership")}
	old := sampleHistory()
	if err := os.WriteFile(f.path, old, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := f.LoadMeta()
	if err != nil || string(got) != string(old) {
		t.Fatalf("an old file: %q %v", got, err)
	}
	if err := f.SaveMeta(got); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(f.path)
	if !strings.Contains(string(b), metaSumMagic) {
		t.Fatal("the save did not add the checksum")
	}
	// An old file with a flipped byte that breaks decoding still fails.
	bad := append([]byte(nil), old...)
	bad[0] = 'X'
	if err := os.WriteFile(f.path, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.LoadMeta(); err == nil {
		t.Fatal("a damaged old-format file was accepted")
	}
}

// legacyStorage hides the wal's membership marker from the node: the
// node keeps its history as versions before the marker did.
type legacyStorage struct{ Storage }

// startSingle starts node 1 of a one-member cluster on a real wal in dir
// (wrapped by wrap unless nil) and waits until it leads.
func startSingle(t *testing.T, dir string, wrap func(Storage) Storage) *Node {
	t.Helper()
	var opts []Option
	if wrap != nil {
		w, err := wal.Open(dir, wal.Options{})
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, WithStorage(wrap(w)))
	}
	n, err := Start(testConfig(1, map[uint32]string{1: "127.0.0.1:1"}, dir), &lockedSM{}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	await(t, 10*time.Second, "node 1 to lead", n.IsLeader)
	return n
}

// addLearner changes the membership (node 2 joins as a learner, so node 1
// stays the only voter and the change needs no one else).
func addLearner(t *testing.T, n *Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := n.AddMember(ctx, Member{ID: 2, Addr: "127.0.0.1:2", Learner: true}); err != nil {
		t.Fatal(err)
	}
}

// walMarker opens the stopped node's wal read-only for its marker.
func walMarker(t *testing.T, dir string) bool {
	t.Helper()
	l, err := wal.OpenReadOnly(dir, wal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.MembershipSaved()
}

// startFails starts node 1 in dir and wants the error for a lost
// membership file.
func startFails(t *testing.T, dir string) {
	t.Helper()
	path := filepath.Join(dir, metaFileName)
	n, err := Start(testConfig(1, map[uint32]string{1: "127.0.0.1:1"}, dir), &lockedSM{})
	if err == nil {
		n.Stop()
		t.Fatalf("a node whose membership file %s is gone started (with its configured members)", path)
	}
	if !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "missing") ||
		!strings.Contains(err.Error(), "wal-repair") {
		t.Fatalf("start without the membership file: %v; want an error naming %s and what to do", err, path)
	}
}

// TestMembershipFileLostRefusesStart (audit): a node that saved a
// membership history and lost its file used to start with its
// configured members, counting majorities of voters its cluster may
// have replaced. Now the wal records that the history exists and the
// node refuses to start without it; with the file back it starts.
func TestMembershipFileLostRefusesStart(t *testing.T) {
	dir := t.TempDir()
	n := startSingle(t, dir, nil)
	addLearner(t, n)
	n.Stop()
	path := filepath.Join(dir, metaFileName)
	if err := os.Rename(path, path+".aside"); err != nil {
		t.Fatal(err)
	}
	startFails(t, dir)
	if err := CheckMembership(dir, walMarker(t, dir)); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("CheckMembership without the file: %v", err)
	}
	if err := os.Rename(path+".aside", path); err != nil {
		t.Fatal(err)
	}
	n = startSingle(t, dir, nil)
	defer n.Stop()
	if m, _ := n.Membership(); !m.IsLearner(2) {
		t.Fatalf("members after the file came back: %+v", m.Members)
	}
}

// TestMembershipNeverChangedNoFile: a node whose cluster never changed
// its members saves only the genesis of its configured members, which it
// can rebuild: no marker, and it starts without the file as before.
func TestMembershipNeverChangedNoFile(t *testing.T) {
	dir := t.TempDir()
	n := startSingle(t, dir, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := propose(ctx, n, "x"); err != nil {
		t.Fatal(err)
	}
	n.Stop()
	if walMarker(t, dir) {
		t.Fatal("membership marker without a membership change")
	}
	if err := os.Remove(filepath.Join(dir, metaFileName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if err := CheckMembership(dir, walMarker(t, dir)); err != nil {
		t.Fatal(err)
	}
	n = startSingle(t, dir, nil)
	defer n.Stop()
	if m, _ := n.Membership(); len(m.Members) != 1 || m.Members[0].ID != 1 {
		t.Fatalf("members without the file: %+v", m.Members)
	}
}

// TestMembershipLegacyFileGainsMarker: a history saved by a version
// before the marker (file, no marker) starts, and the start marks it: a
// later loss of the file is then refused.
func TestMembershipLegacyFileGainsMarker(t *testing.T) {
	dir := t.TempDir()
	n := startSingle(t, dir, func(s Storage) Storage { return legacyStorage{s} })
	addLearner(t, n)
	n.Stop()
	path := filepath.Join(dir, metaFileName)
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	if walMarker(t, dir) {
		t.Fatal("the legacy node set the marker")
	}
	n = startSingle(t, dir, nil)
	if !n.storage.(*wal.Log).MembershipSaved() {
		t.Fatal("the start did not mark a legacy file durably before the node ran")
	}
	if m, _ := n.Membership(); !m.IsLearner(2) {
		t.Fatalf("members from the legacy file: %+v", m.Members)
	}
	n.Stop()
	if !walMarker(t, dir) {
		t.Fatal("the start did not mark a legacy file")
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	startFails(t, dir)
}

// TestMembershipMarkedOnSave: the marker rides the wal save that follows
// the first save of a history on a node that had none, and is durable
// once a synced save covers it (a command's); CheckMembershipFile alone,
// which cannot see the wal, still passes a missing file.
func TestMembershipMarkedOnSave(t *testing.T) {
	dir := t.TempDir()
	n := startSingle(t, dir, nil)
	addLearner(t, n)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := propose(ctx, n, "x"); err != nil {
		t.Fatal(err)
	}
	await(t, 10*time.Second, "the marker after the history was saved", n.storage.(*wal.Log).MembershipSaved)
	n.Stop()
	if err := os.Remove(filepath.Join(dir, metaFileName)); err != nil {
		t.Fatal(err)
	}
	if err := CheckMembershipFile(dir); err != nil {
		t.Fatal(err)
	}
	if err := CheckMembership(dir, true); err == nil {
		t.Fatal("CheckMembership passed a missing file the wal expects")
	}
}

// TestMembershipMarkedOnEveryVoter: every node that saves the history of
// a change marks its wal, followers too (they save it when they learn
// the change is chosen), each on a save it makes anyway. The marker is
// durable with that save: at once on a node that syncs it, on a
// follower outside the thrifty quorum (whose saves are not synced until
// LazySyncBytes or a promise) at its next sync or its Close, which is
// where this test looks.
func TestMembershipMarkedOnEveryVoter(t *testing.T) {
	c := newTestCluster(t, 3)
	await(t, 10*time.Second, "a leader", func() bool { return c.leader() != 0 })
	n := c.nodes[c.leader()]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := n.AddMember(ctx, Member{ID: 4, Addr: "127.0.0.1:1", Learner: true}); err != nil {
		t.Fatal(err)
	}
	idx, err := n.Barrier(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for id, node := range c.nodes {
		if err := node.WaitApplied(ctx, idx); err != nil {
			t.Fatalf("node %d: %v", id, err)
		}
		// Applied: the history is saved, the marked save submitted.
		b, err := fileMeta{path: filepath.Join(c.dirs[id], metaFileName)}.LoadMeta()
		if err != nil || b == nil {
			t.Fatalf("node %d: membership file %v, %v", id, b != nil, err)
		}
	}
	for id := range c.dirs {
		c.stop(id)
		if !walMarker(t, c.dirs[id]) {
			t.Errorf("node %d saved a changed membership without the wal's marker", id)
		}
	}
}
