package paxos

import "testing"

// TestReviewFetchRotationKeepsBackoff (review of c8b1b74): a lagging node
// whose fetches the one peer holding the data does not answer in time (a
// slow peer: -race on a loaded host, see fetchExpired) must keep backing
// off from it, as it did before the rotation. Since c8b1b74 an expired
// fetch asks the next peer; when that peer answers at once with nothing
// new (it has not learned the entries are chosen), onLearn resets
// fetchMiss (any Learn does) and rotates straight back to the slow peer,
// which is then asked every RetransmitTicks+1 ticks for the same range,
// for ever: the backoff that fetchExpired added for
// TestLargeCommandsUnderLoad is gone.
//
// Nodes: 1 the leader, slow to answer Fetches (they are held here and
// counted); 2 holds every entry but learns no chosen index (the leader's
// chosen notices to it are lost; proposals carry stable, 0 here); 3 gets
// the chosen notices but no entries.
func TestReviewFetchRotationKeepsBackoff(t *testing.T) {
	n := newReviewNet(1, 2, 3)
	l := n.cores[1]
	l.campaign()
	n.settle()
	if l.role != leader {
		t.Fatalf("node 1 is %v", l.role)
	}
	slow := true
	asked := 0 // Fetches from 3 that reached the slow node 1
	n.allow = func(m Message) bool {
		switch {
		case m.To == 3 && m.Type == MsgAccept && len(m.Entries) > 0:
			return false
		case m.To == 2 && m.Type == MsgAccept && len(m.Entries) == 0:
			return false
		case m.To == 1 && m.Type == MsgFetch && slow:
			if m.From == 3 {
				asked++
			}
			return false
		}
		return true
	}
	for i := 0; i < 5; i++ {
		l.propose([]byte{'v', byte(i)}, 0)
		n.settle()
	}
	want := l.chosen
	c2, c3 := n.cores[2], n.cores[3]
	if want == 0 || c2.chosen != 0 || c2.log[want] == nil || c3.chosen != 0 || c3.peerChosen != want || c3.fetchFrom != 1 {
		t.Fatalf("setup: chosen 1:%d 2:%d 3:%d, node 3 peerChosen %d from %d",
			want, c2.chosen, c3.chosen, c3.peerChosen, c3.fetchFrom)
	}
	const ticks = 200
	asked = 0
	for tick := 0; tick < ticks; tick++ {
		l.tickOnce()
		c3.tickOnce()
		n.settle()
	}
	// Backing off as fetchExpired means: RetransmitTicks, doubled after
	// each miss up to RetransmitTicks<<maxResendShift (2, 4, 8, 16, 16, ...:
	// 15 asks in 200 ticks asking node 1 alone, as before c8b1b74; fewer
	// when other peers are asked in between).
	rt := n.cores[3].cfg.RetransmitTicks
	limit := 4 + ticks/(rt<<maxResendShift)
	t.Logf("node 1 asked %d times by node 3 in %d ticks (limit %d); node 3 fetchMiss %d", asked, ticks, limit, c3.fetchMiss)
	if asked > limit {
		t.Errorf("the slow node 1 was asked %d times in %d ticks for the same range (backoff allows %d): an empty answer from node 2 resets the backoff", asked, ticks, limit)
	}
	// Sanity: once node 1 answers, node 3 catches up.
	slow = false
	for tick := 0; tick < 100 && c3.chosen < want; tick++ {
		l.tickOnce()
		c3.tickOnce()
		n.settle()
	}
	if c3.chosen < want {
		t.Fatalf("node 3 at %d of %d once node 1 answers", c3.chosen, want)
	}
}
