package paxos

import (
	"bytes"
	"math"
	"testing"

	"phxgo/wal"
)

// Hostile input at the core: every message below is
// one a stranger or a broken peer can send. Each must be dropped whole,
// counted under its reason, and change nothing that is persisted; none
// may panic the core, then or at a later election.

// testValue is a well-formed value holding one command with data s: the
// core drops a message whose values do not decode (validateMessage).
func testValue(s string) []byte {
	return encodeValue([][]byte{appendCommand(nil, command{Node: 9, Seq: 1, MinPending: 1, Data: []byte(s)})})
}

func hostileCore(t *testing.T) *core {
	t.Helper()
	st := NewMemoryStorage()
	c := newCore(coreConfig{ID: 1, Peers: []uint32{1, 2, 3}, ElectionTicks: 3, HeartbeatTicks: 1,
		RetransmitTicks: 2, RetryTicks: 6, Window: 4, BatchMaxBytes: 1024, FetchMaxBytes: 4096,
		MaxValueBytes: 1024}, st.HardState(), nil, st)
	c.ready()
	return c
}

// TestBrickingPrepare is the finding: one Prepare at round MaxUint64 made
// the receiver promise it, persist it, and panic at its next election
// (the round wrapped to 0: "promised ballot moves backwards"), again at
// every restart. Now it is dropped, and the node elects itself as usual.
func TestBrickingPrepare(t *testing.T) {
	c := hostileCore(t)
	for _, round := range []uint64{math.MaxUint64, math.MaxUint64 - 1, MaxRound + 1} {
		c.step(Message{Type: MsgPrepare, From: 2, To: 1, Ballot: Ballot{Round: round, Node: 2}, Index: 1})
	}
	rd := c.ready()
	if rd.Update.Promised != nil || !c.promised.IsZero() {
		t.Fatalf("promised %v (update %v) after forged Prepares", c.promised, rd.Update.Promised)
	}
	if got := c.dropped[DropBallotRange]; got != 3 {
		t.Fatalf("dropped %v, want 3 for ballot_range", c.dropped)
	}
	c.campaign()
	if c.role != candidate || c.ballot.Round != 1 {
		t.Fatalf("after the forged Prepares: role %v ballot %v, want a candidate at round 1", c.role, c.ballot)
	}
}

// TestHostileMessages is the table: message -> the reason it is dropped.
func TestHostileMessages(t *testing.T) {
	b := Ballot{Round: 1, Node: 2}
	ok := testValue("ok")
	many := make([]Entry, minListLen+1)
	for i := range many {
		many[i] = Entry{Index: uint64(i + 1), Ballot: b}
	}
	cases := []struct {
		name string
		m    Message
		want DropReason
	}{
		{"unknown type 0", Message{Type: 0, From: 2, To: 1}, DropBadType},
		{"unknown type 200", Message{Type: 200, From: 2, To: 1}, DropBadType},
		{"sender 0", Message{Type: MsgAccept, From: 0, To: 1, Ballot: Ballot{Round: 1}}, DropBadSender},
		{"sender is the receiver", Message{Type: MsgAccept, From: 1, To: 1, Ballot: Ballot{Round: 1, Node: 1}}, DropBadSender},
		{"addressed to another node", Message{Type: MsgAccept, From: 2, To: 3, Ballot: b}, DropBadSender},
		{"stranger", Message{Type: MsgAccept, From: 77, To: 1, Ballot: Ballot{Round: 1, Node: 77}}, DropStranger},
		{"stranger fetch", Message{Type: MsgFetch, From: 4, To: 1, Index: 1, Probe: true}, DropStranger},
		{"prepare round MaxUint64", Message{Type: MsgPrepare, From: 2, To: 1, Ballot: Ballot{Round: math.MaxUint64, Node: 2}}, DropBallotRange},
		{"accept round MaxRound+1", Message{Type: MsgAccept, From: 2, To: 1, Ballot: Ballot{Round: MaxRound + 1, Node: 2}}, DropBallotRange},
		{"prepare at MaxRound (beyond reach)", Message{Type: MsgPrepare, From: 2, To: 1, Ballot: Ballot{Round: MaxRound, Node: 2}}, DropBallotRange},
		{"probe beyond reach", Message{Type: MsgPrepare, From: 2, To: 1, Probe: true, Ballot: Ballot{Round: MaxRoundStep + 1, Node: 2}}, DropBallotRange},
		{"reject naming round MaxUint64", Message{Type: MsgAccepted, From: 2, To: 1, Reject: true, Promised: Ballot{Round: math.MaxUint64, Node: 2}}, DropBallotRange},
		{"entry ballot above MaxRound", Message{Type: MsgLearn, From: 2, To: 1, Entries: []Entry{{Index: 1, Ballot: Ballot{Round: MaxRound + 1}}}}, DropBallotRange},
		{"accept index MaxUint64", Message{Type: MsgAccept, From: 2, To: 1, Ballot: b, Entries: []Entry{{Index: math.MaxUint64, Ballot: b, Value: ok}}}, DropIndexRange},
		{"accept index 0", Message{Type: MsgAccept, From: 2, To: 1, Ballot: b, Entries: []Entry{{Index: 0, Ballot: b, Value: ok}}}, DropIndexRange},
		{"accept beyond the window", Message{Type: MsgAccept, From: 2, To: 1, Ballot: b, Entries: []Entry{{Index: DefaultMaxIndexAhead + 1, Ballot: b, Value: ok}}}, DropIndexRange},
		{"promise far ahead", Message{Type: MsgPromise, From: 2, To: 1, Ballot: Ballot{Round: 1, Node: 1}, Entries: []Entry{{Index: 1 << 40, Ballot: b}}}, DropIndexRange},
		{"chosen MaxUint64", Message{Type: MsgAccept, From: 2, To: 1, Ballot: b, Chosen: math.MaxUint64}, DropIndexRange},
		{"snapshot at MaxUint64", Message{Type: MsgSnapshot, From: 2, To: 1, Index: math.MaxUint64, Snapshot: []byte("PXS1\x00")}, DropIndexRange},
		{"fetch from MaxUint64", Message{Type: MsgFetch, From: 2, To: 1, Index: math.MaxUint64}, DropIndexRange},
		{"acknowledged index MaxUint64", Message{Type: MsgAccepted, From: 2, To: 1, Ballot: b, Indexes: []uint64{math.MaxUint64}}, DropIndexRange},
		{"value too large", Message{Type: MsgAccept, From: 2, To: 1, Ballot: b, Entries: []Entry{{Index: 1, Ballot: b, Value: bytes.Repeat([]byte{1}, 2048)}}}, DropTooLarge},
		{"command too large", Message{Type: MsgForward, From: 2, To: 1, Cmds: [][]byte{make([]byte, 2048)}}, DropTooLarge},
		{"too many entries", Message{Type: MsgLearn, From: 2, To: 1, Entries: many}, DropTooLarge},
		{"value that does not decode", Message{Type: MsgAccept, From: 2, To: 1, Ballot: b, Entries: []Entry{{Index: 1, Ballot: b, Value: []byte("garbage")}}}, DropMalformed},
		{"accept under another node's ballot", Message{Type: MsgAccept, From: 2, To: 1, Ballot: Ballot{Round: 1, Node: 3}}, DropMalformed},
		{"prepare at round 0", Message{Type: MsgPrepare, From: 2, To: 1, Ballot: Ballot{Node: 2}}, DropMalformed},
		{"snapshot without the engine header", Message{Type: MsgSnapshot, From: 2, To: 1, Index: 5, Snapshot: []byte("nope")}, DropMalformed},
		{"history that does not decode", Message{Type: MsgLearn, From: 2, To: 1, Meta: []byte("PXM1\xff")}, DropMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := hostileCore(t)
			c.step(tc.m)
			rd := c.ready()
			if c.dropped[tc.want] != 1 {
				t.Fatalf("dropped %v, want one %s", c.dropped, tc.want)
			}
			if rd.Update.Promised != nil || len(rd.Update.Accepted) > 0 || rd.Install != nil || c.chosen != 0 || len(c.log) != 0 {
				t.Fatalf("a dropped message changed state: update %+v install %v chosen %d log %d", rd.Update, rd.Install, c.chosen, len(c.log))
			}
			if len(c.peers) != 3 {
				t.Fatalf("peers %v: a dropped sender was registered", c.peers)
			}
			if c.maxRound > MaxRoundStep {
				t.Fatalf("round hint %d raised beyond one step", c.maxRound)
			}
		})
	}
}

// TestLaggingRoundsCatchUp: a node whose rounds lag far behind the
// cluster's (more than MaxRoundStep) drops the leader's messages at
// first, but each raises its round hint one step, so it follows within a
// few of them; a forger needs 2^46 messages to exhaust the rounds.
func TestLaggingRoundsCatchUp(t *testing.T) {
	c := hostileCore(t)
	b := Ballot{Round: 3*MaxRoundStep + 100, Node: 2}
	acc := Message{Type: MsgAccept, From: 2, To: 1, Ballot: b, Entries: []Entry{{Index: 1, Ballot: b, Value: testValue("x")}}}
	for i := 1; i <= 3; i++ {
		c.step(acc)
		if c.promised == b || c.dropped[DropBallotRange] != uint64(i) {
			t.Fatalf("message %d: promised %v dropped %v", i, c.promised, c.dropped)
		}
	}
	c.step(acc)
	if rd := c.ready(); c.promised != b || len(rd.Update.Accepted) != 1 {
		t.Fatalf("4th message: promised %v, update %+v; want the accept taken", c.promised, rd.Update)
	}
}

// TestForgedHistoryCannotOverflowPeers: a seed's answer carrying a
// membership history with more than 64 node ids (a forged one) used to
// reach known(), which panics past 64; it is refused.
func TestForgedHistoryCannotOverflowPeers(t *testing.T) {
	c := hostileCore(t)
	h := &history{items: []Membership{{Index: 0, Active: 1, Members: []Member{{ID: 1, Addr: "a"}, {ID: 2, Addr: "b"}, {ID: 3, Addr: "c"}}}}}
	for k := uint64(1); k <= 3; k++ {
		var ms []Member
		for id := uint32(100*k + 1); id <= uint32(100*k+30); id++ {
			ms = append(ms, Member{ID: id, Addr: "x"})
		}
		h.items = append(h.items, Membership{Index: 100 * k, Active: 100*k + Alpha, Members: ms})
	}
	c.step(Message{Type: MsgLearn, From: 2, To: 1, Chosen: 500, Meta: h.encode()})
	if len(c.peers) != 3 || len(c.hist.items) != 1 {
		t.Fatalf("peers %v, history of %d items: a forged history was adopted", c.peers, len(c.hist.items))
	}
}

// TestStuckPromiseRestore: a wal written before this fix may hold the
// forged promise. Lowering it could break Paxos (a proposer may hold it,
// see doc.go), so the node keeps it: it starts, never campaigns (its next
// round would wrap), refuses every ballot below it without naming the
// round (peers would drop the reply), and still learns chosen values.
func TestStuckPromiseRestore(t *testing.T) {
	st := NewMemoryStorage()
	forged := Ballot{Round: math.MaxUint64, Node: 2}
	if err := st.Save(wal.Update{Promised: &forged, Accepted: []wal.Accepted{{Index: math.MaxUint64, Ballot: forged, Value: testValue("evil")}}}); err != nil {
		t.Fatal(err)
	}
	last := st.LastIndex()
	as, _ := st.Range(1, last, 1<<20)
	c := newCore(coreConfig{ID: 1, Peers: []uint32{1, 2, 3}, ElectionTicks: 3, HeartbeatTicks: 1,
		RetransmitTicks: 2, RetryTicks: 6, Window: 4, BatchMaxBytes: 1024, FetchMaxBytes: 4096}, st.HardState(), as, st)
	if !c.stuckPromise || c.promised != forged || len(c.log) != 0 {
		t.Fatalf("stuck %v promised %v log %d", c.stuckPromise, c.promised, len(c.log))
	}
	c.campaign()
	for i := 0; i < 50; i++ {
		c.tickOnce()
	}
	if c.role != follower || !c.exhausted {
		t.Fatalf("role %v exhausted %v: a stuck node must not campaign", c.role, c.exhausted)
	}
	c.ready()
	c.step(Message{Type: MsgPrepare, From: 3, To: 1, Ballot: Ballot{Round: 7, Node: 3}, Index: 1})
	rd := c.ready()
	if len(rd.Messages) != 1 || !rd.Messages[0].Reject || !rd.Messages[0].Promised.IsZero() || rd.Update.Promised != nil {
		t.Fatalf("answer to a Prepare: %v, update %+v; want a reject without the round", rd.Messages, rd.Update)
	}
	v := testValue("learned")
	c.asked[3]++ // as after a Fetch to node 3 (a Learn answers one)
	c.step(Message{Type: MsgLearn, From: 3, To: 1, Chosen: 1, Entries: []Entry{{Index: 1, Ballot: Ballot{Round: 7, Node: 3}, Value: v}}})
	if rd := c.ready(); len(rd.Committed) != 1 || !bytes.Equal(rd.Committed[0].Value, v) {
		t.Fatalf("committed %v; want the learned value", rd.Committed)
	}
}

// TestUnaskedLearnDropped is the red-team finding of session 37: one Learn
// sent unasked with a member's key (no-ops at the next 200 indexes, and a
// chosen index 200 ahead) was stored as chosen, forked that node's log
// from the others' and, through its raised peerChosen, spread to nodes
// that fetched from it. A Learn is now taken only as the answer to a
// Fetch this node sent to its sender, once.
func TestUnaskedLearnDropped(t *testing.T) {
	c := hostileCore(t)
	b := Ballot{Round: 1, Node: 2}
	learn := Message{Type: MsgLearn, From: 2, To: 1, Chosen: 200, Index: 1,
		Entries: []Entry{{Index: 1, Ballot: b, Value: testValue("forged")}}}
	c.step(learn)
	c.ready()
	if c.dropped[DropUnasked] != 1 || c.chosen != 0 || c.peerChosen != 0 || len(c.log) != 0 {
		t.Fatalf("unasked Learn: dropped %v chosen %d peerChosen %d log %d; want it dropped whole", c.dropped, c.chosen, c.peerChosen, len(c.log))
	}
	c.maybeFetch(2)
	c.ready()
	other := learn
	other.From = 3 // asked nothing of node 3
	c.step(other)
	c.ready()
	if c.dropped[DropUnasked] != 2 || c.chosen != 0 {
		t.Fatalf("a Learn from a peer not asked: chosen %d dropped %v; want it dropped", c.chosen, c.dropped)
	}
	learn.Entries[0].Value = testValue("answer")
	c.step(learn)
	c.ready()
	if c.chosen != 1 || c.dropped[DropUnasked] != 2 || !bytes.Equal(c.log[1].value, testValue("answer")) {
		t.Fatalf("the answer to a Fetch: chosen %d dropped %v; want it taken", c.chosen, c.dropped)
	}
}
