package paxos

import (
	"errors"
	"testing"
)

// TestOddNodeNeitherLeadsNorServes: leader 1's log is named the odd one
// while node 3 lags. Node 1 steps down, stands for no election however
// long it ticks (a campaign included), and answers none of node 3's
// fetches, even where it is the only peer node 3 reaches; once healed,
// another node leads and node 3 gets every value from node 2.
func TestOddNodeNeitherLeadsNorServes(t *testing.T) {
	n := newReviewNet(1, 2, 3)
	odd := n.cores[1]
	odd.campaign()
	n.settle()
	if odd.role != leader {
		t.Fatalf("node 1 is %v", odd.role)
	}
	// Node 3 hears what is chosen but gets no values: it lags.
	n.allow = func(m Message) bool {
		return !(m.To == 3 && m.Type == MsgAccept && len(m.Entries) > 0) && m.Type != MsgFetch
	}
	for i := range 5 {
		odd.propose([]byte{'v', byte(i)}, 0)
		n.settle()
	}
	want, c3 := odd.chosen, n.cores[3]
	if c3.chosen >= want {
		t.Fatalf("setup: node 3 chose %d of %d", c3.chosen, want)
	}

	odd.setOdd()
	if odd.role == leader || odd.lastStepDown.Cause != StepDownOddLog || odd.stepDowns[StepDownOddLog] != 1 {
		t.Fatalf("odd node 1: role %v, last step-down %v", odd.role, odd.lastStepDown.Cause)
	}
	served := 0
	count := func(m Message) {
		if m.From == 1 && (m.Type == MsgLearn || m.Type == MsgSnapshot) {
			served++
		}
	}
	// Nodes 2 and 3 cannot hear each other: node 3 can fetch only from
	// node 1, and node 1's campaign would find a majority.
	n.allow = func(m Message) bool {
		count(m)
		return !(m.From == 2 && m.To == 3) && !(m.From == 3 && m.To == 2)
	}
	odd.campaign()
	n.settle()
	for tick := 0; tick < 60; tick++ {
		odd.tickOnce()
		c3.tickOnce()
		n.settle()
		if odd.role != follower {
			t.Fatalf("tick %d: odd node 1 is %v", tick, odd.role)
		}
	}
	if served != 0 || c3.chosen >= want {
		t.Fatalf("odd node 1 answered %d fetches; node 3 chose %d of %d", served, c3.chosen, want)
	}
	// Healed: someone else leads, and node 3 gets every value from node 2.
	n.allow = func(m Message) bool { count(m); return true }
	lead := func() uint32 {
		for id, c := range n.cores {
			if c.role == leader {
				return id
			}
		}
		return 0
	}
	for tick := 0; tick < 400 && (c3.chosen < want || lead() == 0); tick++ {
		for id := uint32(1); id <= 3; id++ {
			n.cores[id].tickOnce()
		}
		n.settle()
		if odd.role != follower {
			t.Fatalf("healed, tick %d: odd node 1 is %v", tick, odd.role)
		}
	}
	if lead() == 0 || c3.chosen < want || served != 0 {
		t.Fatalf("leader %d, node 3 chose %d of %d, odd node 1 answered %d fetches", lead(), c3.chosen, want, served)
	}
	for i := uint64(1); i <= want; i++ {
		if got := n.committed[3][i]; string(got) != string(n.committed[2][i]) {
			t.Fatalf("node 3 committed %q at %d, node 2 %q", got, i, n.committed[2][i])
		}
	}
	if _, err := (&rawNode{c: odd}).Campaign(); !errors.Is(err, ErrOddLog) {
		t.Fatalf("odd node's Campaign: %v, want ErrOddLog", err)
	}
}
