package paxos

import (
	"slices"
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

// TestPrepareRetransmitsBackOff: a candidate whose Prepares get no
// Promise resends them after RetransmitTicks, then after twice as long
// each time (as Accepts, TestRetransmitsBackOff). Each Prepare is
// answered with every accepted entry above the candidate's chosen index
// (megabytes under 64 KiB commands): resent every RetransmitTicks, they
// buried a slow acceptor in copies of its own Promise and no election
// finished for minutes (TestLargeCommandsUnderLoad under -race).
func TestPrepareRetransmitsBackOff(t *testing.T) {
	n := newThriftyNet(t, 1, 2, 3)
	n.hold = func(m Message) bool { return m.Type == MsgPromise }
	c := n.cores[1]
	c.campaign()
	n.settle()
	if c.role != candidate {
		t.Fatalf("node 1 is %v, want candidate", c.role)
	}
	c.electionTimeout = 1 << 20 // one phase 1 throughout
	ballot := c.ballot
	var at []int
	for tick := 1; tick <= 40; tick++ {
		n.sent = nil
		c.tickOnce()
		n.settle()
		if c.role != candidate || c.ballot != ballot {
			t.Fatalf("tick %d: node 1 left phase 1 (%v, ballot %v)", tick, c.role, c.ballot)
		}
		for _, m := range n.sent {
			if m.Type == MsgPrepare && !m.Probe && m.From == 1 && m.To == 2 {
				at = append(at, tick)
			}
		}
	}
	// RetransmitTicks = 2 in thriftyNet: 2, +4, +8, +16, then every 16.
	if want := []int{2, 6, 14, 30}; !slices.Equal(at, want) {
		t.Fatalf("Prepares resent at ticks %v, want %v", at, want)
	}
}

// TestFetchRetriesBackOff: a node behind a peer's chosen index re-asks
// for the log after RetransmitTicks without an answer, then after twice
// as long each time. Each answer is up to FetchMaxBytes read from the
// peer's wal: re-asked every RetransmitTicks, a slow peer spent its run
// loop on copies of the request (TestLargeCommandsUnderLoad under -race).
func TestFetchRetriesBackOff(t *testing.T) {
	n := newThriftyNet(t, 1, 2, 3)
	n.hold = func(m Message) bool { return m.Type == MsgLearn }
	c := n.cores[2]
	c.peerChosen, c.fetchFrom = 5, 1
	var at []int
	for tick := 1; tick <= 50; tick++ {
		n.sent = nil
		c.tickOnce()
		n.settle()
		for _, m := range n.sent {
			if m.Type == MsgFetch && m.From == 2 {
				at = append(at, tick)
			}
		}
	}
	// RetransmitTicks = 2 in thriftyNet: asked at once, then after 2, 4,
	// 8, 16, 16 ticks.
	if want := []int{1, 3, 7, 15, 31, 47}; !slices.Equal(at, want) {
		t.Fatalf("fetched at ticks %v, want %v", at, want)
	}
}
