package paxos

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"phxgo/wal"
)

// TestGRPCBrickedWALRestarts: a node whose wal holds the forged promise
// (round MaxUint64, stored by a binary without the hostile-input checks)
// and a forged instance at index MaxUint64 starts over its real wal, keeps
// the promise, and learns what the two healthy nodes choose; before, it
// panicked at its first election, at every start.
func TestGRPCBrickedWALRestarts(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := propose(ctx, c.nodes[1], "before"); err != nil {
		t.Fatal(err)
	}
	c.stop(3)
	w, err := wal.Open(c.dirs[3], wal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	forged := Ballot{Round: math.MaxUint64, Node: 2}
	if err := w.Save(wal.Update{Promised: &forged, Accepted: []wal.Accepted{{Index: math.MaxUint64, Ballot: forged, Value: testValue("evil")}}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	c.start(3, nil)
	st := c.nodes[3].Status()
	if !st.StuckPromise || !st.BallotExhausted || st.Ballot != math.MaxUint64 {
		t.Fatalf("status %+v: want the forged promise kept and reported", st)
	}
	await(t, 20*time.Second, "a leader among the healthy nodes", func() bool { l := c.leader(); return l == 1 || l == 2 })
	idx, err := propose(ctx, c.nodes[c.leader()], "after")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.nodes[3].WaitApplied(ctx, idx); err != nil {
		t.Fatalf("the stuck node never learned index %d: %v", idx, err)
	}
	got := c.sms[3].copyList()
	if len(got) == 0 || string(got[len(got)-1]) != "after" {
		t.Fatalf("stuck node applied %q", got)
	}
	if st := c.nodes[3].Status(); st.Role != "follower" || st.Ballot != math.MaxUint64 {
		t.Fatalf("stuck node: %+v", st)
	}
}

// TestStartRefusesChosenBeyondMaxIndex: a hard state whose chosen index
// is past MaxIndex (a forged snapshot installed before the checks) is
// corruption with a clear error, not a node that wraps its indexes.
func TestStartRefusesChosenBeyondMaxIndex(t *testing.T) {
	st := NewMemoryStorage()
	if err := st.InstallSnapshot(math.MaxUint64, []byte("PXS1\x00")); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(1, map[uint32]string{1: "127.0.0.1:1"}, "")
	_, err := Start(cfg, &lockedSM{}, WithStorage(st))
	if !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), "above the maximum") {
		t.Fatalf("Start: %v; want ErrStorage naming the index", err)
	}
}

// TestStatusCountsDrops: the drop counters reach Status.
func TestStatusCountsDrops(t *testing.T) {
	c := newTestCluster(t, 1)
	n := c.nodes[1]
	if err := n.deliver([]Message{
		{Type: MsgPrepare, From: 2, To: 1, Ballot: Ballot{Round: math.MaxUint64, Node: 2}},
		{Type: MsgAccept, From: 99, To: 1, Ballot: Ballot{Round: 1, Node: 99}},
	}); err != nil {
		t.Fatal(err)
	}
	await(t, 5*time.Second, "drops counted", func() bool {
		d := n.Status().Dropped
		return d[DropBallotRange] == 1 && d[DropStranger] == 1
	})
	if _, _, err := n.Propose(context.Background(), []byte("x")); err != nil {
		t.Fatal(err)
	}
}

// checkingSM refuses snapshots that are not its own format.
type checkingSM struct{ lockedSM }

func (s *checkingSM) CheckSnapshot(snap []byte) error {
	if !bytes.HasPrefix(snap, []byte("list:")) {
		return errors.New("not a list snapshot")
	}
	return nil
}

// TestSnapshotCheckedBeforeInstall: a peer's snapshot whose state-machine
// part would not Restore is dropped, not made durable (which would stop
// the node at every restart).
func TestSnapshotCheckedBeforeInstall(t *testing.T) {
	cfg := testConfig(1, map[uint32]string{1: "127.0.0.1:1", 2: "127.0.0.1:2", 3: "127.0.0.1:3"}, "")
	st := NewMemoryStorage()
	n, err := Start(cfg, &checkingSM{}, WithStorage(st))
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	engine, _ := newApplier(&listSM{}).snapshot() // a valid dedup table, empty state machine part
	if err := n.deliver([]Message{{Type: MsgSnapshot, From: 2, To: 1, Index: 50, Chosen: 50, Snapshot: append(engine, "garbage"...)}}); err != nil {
		t.Fatal(err)
	}
	await(t, 5*time.Second, "the snapshot dropped", func() bool { return n.Status().Dropped[DropMalformed] == 1 })
	if hs := st.HardState(); hs.Applied != 0 || hs.Chosen != 0 || n.Applied() != 0 {
		t.Fatalf("hard state %+v, applied %d: the snapshot was installed", hs, n.Applied())
	}
}
