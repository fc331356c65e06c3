package node

import (
	"context"
	"slices"
	"testing"
	"time"

	"phxgo/binlogd/binlog"
	"phxgo/masterlease"
)

// compactedLog is a fakeLog compacted at index base, whose state there is
// st: the entries up to base are never read.
type compactedLog struct {
	*fakeLog
	base uint64
	st   masterlease.State
}

func (l *compactedLog) Base() (uint64, []byte, error) {
	return l.base, masterlease.EncodeState(l.st), nil
}

// TestValidGTIDsSplitAcrossBase: the log was compacted in the middle of a
// split transaction (paxos rounds a compaction down to a checkpoint,
// which may hold a Partial). Its remaining fragments complete it, so it
// is in the log, and crash recovery must not cut it: InnoDB may have
// committed it (a Jepsen run with 256 MiB transactions cut 0-1-4 this
// way and the node's data would have diverged). One voided by a new term
// is not in the log.
func TestValidGTIDsSplitAcrossBase(t *testing.T) {
	g := func(server uint32, seq uint64) binlog.GTID { return binlog.GTID{Server: server, Seq: seq} }
	t4 := fakeTxn(g(1, 4), 500, 500)
	frags := fragments(1, g(2, 3), g(1, 4), t4, 300, 700)
	base := masterlease.State{Version: 1, Epoch: 1, Master: 1, LastGTID: masterlease.GTID(g(2, 3)),
		Partial: masterlease.GTID(g(1, 4)), PartialBytes: 300, Applied: 2, LastBatchIndex: 2, TermIndex: 1}

	complete := &compactedLog{fakeLog: newFakeLog(), base: 2, st: base}
	complete.add() // indexes 1 and 2: compacted away, never read
	complete.add()
	complete.add(frags[1])
	complete.add(frags[2])
	complete.add(batchCmd(1, g(1, 4), g(1, 5), fakeTxn(g(1, 5), 40), 0, false))
	got, err := newLogSource(complete).validGTIDs([]binlog.GTID{g(2, 3), g(1, 4), g(1, 5), g(2, 2), g(1, 3)})
	if err != nil {
		t.Fatal(err)
	}
	if want := []bool{true, true, true, true, false}; !slices.Equal(got, want) {
		t.Fatalf("split transaction completed after the base: valid %v, want %v", got, want)
	}

	// A replica that holds it resumes after it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cur, err := newLogSource(complete).Open(ctx, binlog.GTIDList{g(1, 4)})
	if err != nil {
		t.Fatalf("open at the split transaction completed after the base: %v", err)
	}
	if txn, err := cur.Next(ctx); err != nil || txn.GTID != g(1, 5) {
		t.Fatalf("after %s: %s, %v; want %s", g(1, 4), txn.GTID, err, g(1, 5))
	}
	cur.Close()

	voided := &compactedLog{fakeLog: newFakeLog(), base: 2, st: base}
	voided.add()
	voided.add()
	voided.add(frags[1])
	voided.add(masterlease.EncodeLeaseRequest(masterlease.LeaseRequest{Candidate: 2, SeenVersion: 1}))
	voided.add(frags[2]) // epoch 1: stale now
	voided.add(batchCmd(2, g(2, 3), g(2, 4), fakeTxn(g(2, 4), 40), 0, false))
	got, err = newLogSource(voided).validGTIDs([]binlog.GTID{g(2, 3), g(1, 4), g(2, 4)})
	if err != nil {
		t.Fatal(err)
	}
	if want := []bool{true, false, true}; !slices.Equal(got, want) {
		t.Fatalf("split transaction voided after the base: valid %v, want %v", got, want)
	}
}

// TestCompactBaseWhole: paxos may make a checkpoint the log's base only
// where no split transaction is in flight.
func TestCompactBaseWhole(t *testing.T) {
	whole := masterlease.State{Epoch: 1, Master: 1, LastGTID: masterlease.GTID{Server: 1, Seq: 3}}
	split := whole
	split.Partial, split.PartialBytes = masterlease.GTID{Server: 1, Seq: 4}, 300
	if !compactBaseWhole(masterlease.EncodeState(whole)) || compactBaseWhole(masterlease.EncodeState(split)) || compactBaseWhole([]byte("garbage")) {
		t.Fatal("compactBaseWhole: want true for a state without Partial, false with one or for bytes that do not decode")
	}
}
