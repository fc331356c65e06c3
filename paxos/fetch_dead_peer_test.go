package paxos

import "testing"

// TestFetchTurnsFromADeadPeer: a lagging node asks the peer that told it
// the highest chosen index for what it lacks. When that peer dies and no
// other peer knows more (nothing new is chosen), the node must ask
// another peer rather than the dead one forever.
func TestFetchTurnsFromADeadPeer(t *testing.T) {
	n := newReviewNet(1, 2, 3)
	l := n.cores[1]
	l.campaign()
	n.settle()
	if l.role != leader {
		t.Fatalf("node 1 is %v", l.role)
	}
	// Node 3 hears what is chosen but gets no values and its fetches are
	// lost: it lags, and knows node 1 has more.
	n.allow = func(m Message) bool {
		return !(m.To == 3 && m.Type == MsgAccept && len(m.Entries) > 0) && m.Type != MsgFetch
	}
	for i := 0; i < 5; i++ {
		l.propose([]byte{'v', byte(i)}, 0)
		n.settle()
	}
	want := l.chosen
	c3 := n.cores[3]
	if n.cores[2].chosen != want || c3.chosen >= want || c3.peerChosen != want || c3.fetchFrom != 1 {
		t.Fatalf("setup: chosen 1:%d 2:%d 3:%d, node 3 peerChosen %d from %d",
			want, n.cores[2].chosen, c3.chosen, c3.peerChosen, c3.fetchFrom)
	}
	// Node 1 dies. Node 2 has every chosen value but has chosen nothing
	// new, so it never reports more than node 3 already heard of.
	n.allow = func(m Message) bool { return m.From != 1 && m.To != 1 }
	for tick := 0; tick < 200 && c3.chosen < want; tick++ {
		n.cores[2].tickOnce()
		c3.tickOnce()
		n.settle()
	}
	if c3.chosen < want {
		t.Fatalf("node 3 still at %d of %d after 200 ticks (fetching from %d)", c3.chosen, want, c3.fetchFrom)
	}
	for i := uint64(1); i <= want; i++ {
		if got, ok := n.committed[3][i]; !ok || string(got) != string(n.committed[1][i]) {
			t.Fatalf("node 3 committed %q at %d, node 1 %q", got, i, n.committed[1][i])
		}
	}
}
