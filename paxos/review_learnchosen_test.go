package paxos

import (
	"bytes"
	"testing"

	"phxgo/wal"
)

// reviewNet: five cores, saves durable at once, a filter on delivery.
type reviewNet struct {
	cores     map[uint32]*core
	allow     func(Message) bool
	committed map[uint32]map[uint64][]byte
}

func newReviewNet(ids ...uint32) *reviewNet {
	n := &reviewNet{cores: map[uint32]*core{}, committed: map[uint32]map[uint64][]byte{},
		allow: func(Message) bool { return true }}
	for _, id := range ids {
		cfg := coreConfig{ID: id, Peers: ids, ElectionTicks: 10, HeartbeatTicks: 1, RetransmitTicks: 2,
			RetryTicks: 20, Window: 8, BatchMaxBytes: 64, FetchMaxBytes: 200, Seed: int64(id)}
		n.cores[id] = newCore(cfg, wal.HardState{}, nil, nil)
		n.committed[id] = map[uint64][]byte{}
	}
	return n
}

func (n *reviewNet) settle() {
	for moved := true; moved; {
		moved = false
		for id := uint32(1); id <= uint32(len(n.cores)); id++ {
			rd := n.cores[id].ready()
			for _, e := range rd.Committed {
				n.committed[id][e.Index] = e.Value
			}
			for _, m := range append(rd.Early, rd.Messages...) {
				if n.allow(m) {
					moved = true
					n.cores[m.To].step(m)
				}
			}
		}
	}
}

// TestReviewLeaderLearnsHigherBallotChoice: leader 1 (ballot b) proposes
// v at i, accepted by 1 and 4 only. Nodes 2,3,5 elect 3 (b' > b), which
// chooses w at i. Node 1 is never told of b' (its rejections are lost),
// hears node 5's probe carrying 5's chosen index, fetches i from 5 and
// advances its chosen index past i while still leading under b. Its
// next chosen notice (ballot b) makes node 4, which holds (b, v) at i,
// mark v chosen: learnChosen trusts "accepted under the notice's
// ballot", which holds only if the leader's chosen index came from its
// own votes under b. Failed (two values chosen) before 38c6055.
func TestReviewLeaderLearnsHigherBallotChoice(t *testing.T) {
	n := newReviewNet(1, 2, 3, 4, 5)
	l := n.cores[1]
	l.campaign()
	n.settle()
	if l.role != leader {
		t.Fatalf("node 1 is %v", l.role)
	}
	side := map[uint32]bool{1: true, 4: true}
	n.allow = func(m Message) bool { return side[m.From] == side[m.To] }
	l.propose([]byte("v"), 0)
	n.settle()
	i := l.next - 1
	if l.chosen >= i || n.cores[4].log[i] == nil || n.cores[4].log[i].ballot != l.ballot {
		t.Fatalf("setup: leader chosen %d, i %d", l.chosen, i)
	}
	n.cores[3].campaign()
	n.settle()
	if n.cores[3].role != leader {
		t.Fatalf("node 3 is %v", n.cores[3].role)
	}
	n.cores[3].propose([]byte("w"), 0)
	n.settle()
	if n.cores[5].chosen < i {
		t.Fatalf("setup: node 5 chosen %d < %d", n.cores[5].chosen, i)
	}
	// Node 5 probes (its leader 3 went silent); 1 hears only the probe,
	// answers it and fetches from 5. Everything else across is lost.
	n.allow = func(m Message) bool {
		if side[m.From] == side[m.To] {
			return true
		}
		switch {
		case m.From == 5 && m.To == 1:
			return m.Type == MsgPrepare || m.Type == MsgLearn
		case m.From == 1 && m.To == 5:
			return m.Type == MsgFetch
		}
		return false
	}
	n.cores[5].startProbe()
	n.settle()
	l.tickOnce()
	n.settle()
	l.tickOnce()
	n.settle()
	// Fixed by 38c6055: node 1 steps down when the fetched value differs
	// from its proposal, so it sends no chosen notice under b.
	v4, w3 := n.committed[4][i], n.committed[3][i]
	t.Logf("leader 1 chosen %d; node 4 chosen %d; node 3 chosen %d", l.chosen, n.cores[4].chosen, n.cores[3].chosen)
	if v4 != nil && w3 != nil && !bytes.Equal(v4, w3) {
		t.Fatalf("index %d: node 4 applied %q, node 3 applied %q (two values chosen)", i, v4, w3)
	}
}
