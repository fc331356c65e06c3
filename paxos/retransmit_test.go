package paxos

import (
	"testing"

	"phxgo/wal"
)

// TestRepeatedAcceptIsNotSavedAgain: an acceptor answers a retransmitted
// Accept for a vote it already saved without saving it again, and saves
// (synced) an instance it stored without a vote once it is asked to vote.
func TestRepeatedAcceptIsNotSavedAgain(t *testing.T) {
	n := newThriftyNet(t, 1, 2, 3)
	f := n.cores[2]
	b := Ballot{Round: 1, Node: 1}
	acc := Message{Type: MsgAccept, From: 1, To: 2, Ballot: b, Entries: []Entry{{Index: 1, Ballot: b, Value: testValue("v")}}}
	saved := func() []wal.Update {
		rd := f.ready()
		var votes []Message
		for _, m := range rd.Messages {
			if m.Type == MsgAccepted && len(m.Indexes) == 1 && m.Indexes[0] == 1 {
				votes = append(votes, m)
			}
		}
		if len(votes) != 1 {
			t.Fatalf("answers %v; want one vote for instance 1", rd.Messages)
		}
		if len(rd.Update.Accepted) == 0 {
			return nil
		}
		return []wal.Update{rd.Update}
	}
	f.step(acc)
	if u := saved(); len(u) != 1 || u[0].NoSync {
		t.Fatalf("first Accept: updates %+v; want the vote saved with a sync", u)
	}
	f.step(acc)
	if u := saved(); len(u) != 0 {
		t.Fatalf("repeated Accept saved again: %+v", u)
	}

	// Stored without a vote, then asked to vote: saved, synced.
	spare := acc
	spare.NoVote, spare.Entries = true, []Entry{{Index: 2, Ballot: b, Value: testValue("w")}}
	f.step(spare)
	if rd := f.ready(); len(rd.Update.Accepted) != 1 || !rd.Update.NoSync {
		t.Fatalf("NoVote Accept: update %+v; want the value stored without a sync", rd.Update)
	}
	vote := spare
	vote.NoVote = false
	f.step(vote)
	if rd := f.ready(); len(rd.Update.Accepted) != 1 || rd.Update.NoSync {
		t.Fatalf("vote asked for a stored value: update %+v; want it saved with a sync", rd.Update)
	}
}

// TestRetransmitsBackOff: an instance no one votes for is resent after
// RetransmitTicks, then after twice as long each time, up to 8 times as
// long.
func TestRetransmitsBackOff(t *testing.T) {
	n, l := newLedNet(t)
	// Hold the value, not the heartbeats: the leader keeps its quorum.
	n.hold = func(m Message) bool { return m.Type == MsgAccept && len(m.Entries) > 0 }
	l.propose([]byte("a"), 0)
	n.settle()
	var at []int
	for tick := 1; tick <= 60; tick++ {
		n.sent = nil
		for _, id := range []uint32{1, 2, 3} {
			n.cores[id].tickOnce()
		}
		n.settle()
		if l.role != leader {
			t.Fatalf("tick %d: node 1 lost its leadership", tick)
		}
		for _, m := range n.sent {
			if m.Type == MsgAccept && m.From == 1 && len(m.Entries) > 0 {
				at = append(at, tick)
				break
			}
		}
	}
	// RetransmitTicks = 2 in thriftyNet: 2, +4, +8, +16, then every 16.
	want := []int{2, 6, 14, 30, 46}
	if len(at) != len(want) {
		t.Fatalf("resent at ticks %v, want %v", at, want)
	}
	for i := range want {
		if at[i] != want[i] {
			t.Fatalf("resent at ticks %v, want %v", at, want)
		}
	}
}
