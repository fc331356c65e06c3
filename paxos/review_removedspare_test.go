package paxos

import (
	"bytes"
	"testing"

	"phxgo/wal"
)

// Review of 90d0240: spare 3 is removed; entries >= Active proposed while
// it was still a target stay in spareBuf[3] forever (flushSpares walks
// only targets).
// TestReview20RemovedSpareHoldIsReleased (review of 90d0240): instances
// held for a spare that a membership change then removes (it leaves the
// leader's targets) are dropped, not kept until the leader steps down.
func TestReview20RemovedSpareHoldIsReleased(t *testing.T) {
	ids := []uint32{1, 2, 3}
	n := &thriftyNet{cores: map[uint32]*core{}, updates: map[uint32][]wal.Update{}, hold: func(Message) bool { return false }}
	for _, id := range ids {
		n.cores[id] = newCore(coreConfig{ID: id, Peers: ids, Addrs: map[uint32]string{1: "a1", 2: "a2", 3: "a3"},
			ElectionTicks: 10, HeartbeatTicks: 1, RetransmitTicks: 2, RetryTicks: 20, Window: 16,
			BatchMaxBytes: 64, FetchMaxBytes: 200, Seed: int64(id), Thrifty: true}, wal.HardState{}, nil, nil)
	}
	l := n.cores[1]
	l.campaign()
	n.settle()
	l.propose(encodeChange(membershipChange{Prev: l.hist.latest().Index,
		Members: []Member{{ID: 1, Addr: "a1"}, {ID: 2, Addr: "a2"}}}), flagMembership)
	n.settle()
	act := l.hist.latest().Active
	split := func(m Message, below uint64) (lo, hi Message) { // votes are per index
		lo, hi = m, m
		lo.Indexes, hi.Indexes = nil, nil
		for _, i := range m.Indexes {
			if i < below {
				lo.Indexes = append(lo.Indexes, i)
			} else {
				hi.Indexes = append(hi.Indexes, i)
			}
		}
		return lo, hi
	}
	// Votes from act-1 on are held; values proposed past act.
	n.hold = func(m Message) bool {
		if m.Type != MsgAccepted || m.To != 1 || len(m.Indexes) == 0 {
			return false
		}
		lo, hi := split(m, act-1)
		if len(lo.Indexes) > 0 && len(hi.Indexes) > 0 {
			l.step(lo)
		}
		return len(hi.Indexes) > 0
	}
	n.settle()
	for l.next <= act+1 {
		l.propose(bytes.Repeat([]byte{'x'}, 80), 0)
		n.settle()
	}
	// Votes below act arrive: removal active, node 3 leaves targets.
	n.hold = func(Message) bool { return false }
	var later []Message
	for _, m := range n.held {
		lo, hi := split(m, act)
		n.deliver([]Message{lo})
		later = append(later, hi)
	}
	n.held = nil
	n.settle()
	if l.chosen != act-1 {
		t.Fatalf("chosen %d, want %d", l.chosen, act-1)
	}
	n.deliver(later)
	n.settle()
	for range 5 {
		l.propose([]byte("y"), 0)
		n.settle()
		l.tickOnce()
		n.settle()
	}
	if l.role != leader || l.inflight() != 0 {
		t.Fatalf("leader %v, inflight %d", l.role, l.inflight())
	}
	if held := l.spareBuf[3]; len(held) > 0 {
		t.Fatalf("targets %v, chosen %d, pipeline empty, yet %d entries (from %d) still held for removed node 3",
			l.targets, l.chosen, len(held), held[0].Index)
	}
}
