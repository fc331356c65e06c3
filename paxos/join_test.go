package paxos

import (
	"slices"
	"testing"

	"phxgo/wal"
)

// TestJoinerWaitsForMembers: a joining node that learns chosen entries
// before it knows the members hands none of them out (it could not
// record the membership changes among them), asks for the members with
// every fetch, and takes a history only from a peer whose chosen index
// covers what it already handed out. CI caught the old behaviour: a
// node joining under load learned the log but never the members.
func TestJoinerWaitsForMembers(t *testing.T) {
	cfg := coreConfig{ID: 4, Peers: []uint32{1, 2, 3}, Join: true,
		ElectionTicks: 10, HeartbeatTicks: 1, RetransmitTicks: 2, RetryTicks: 20,
		Window: 8, BatchMaxBytes: 64, FetchMaxBytes: 200, Seed: 1}
	c := newCore(cfg, wal.HardState{}, nil, nil)
	c.ready()

	h := genesis(members(1, 2, 3))
	add := membershipChange{Prev: 0, Members: members(1, 2, 3, 4)}
	value := func(flags byte, data []byte) []byte {
		return encodeValue([][]byte{appendCommand(nil, command{Node: 1, Seq: 1, Flags: flags, Data: data})})
	}
	entries := []Entry{
		{Index: 1, Value: nil},
		{Index: 2, Value: value(flagMembership, encodeChange(add))},
		{Index: 3, Value: value(0, []byte("x"))},
	}

	// A leader's chosen index makes it fetch: the fetch asks for members.
	c.step(Message{Type: MsgAccept, From: 1, To: 4, Ballot: Ballot{Round: 1, Node: 1}, Chosen: 3})
	rd := c.ready()
	var fetch *Message
	for _, m := range append(rd.Early, rd.Messages...) {
		if m.Type == MsgFetch {
			fetch = &m
		}
	}
	if fetch == nil || !fetch.Probe {
		t.Fatalf("joining node's fetch %+v does not ask for the members", fetch)
	}

	// Entries without a history: chosen, but not handed out.
	c.step(Message{Type: MsgLearn, From: 1, To: 4, Chosen: 3, Index: 1, Entries: entries})
	if rd := c.ready(); len(rd.Committed) != 0 || c.chosen != 3 {
		t.Fatalf("handed out %d entries before knowing the members (chosen %d)", len(rd.Committed), c.chosen)
	}

	// A history from a peer that knows the change: adopted, entries out.
	h.apply(2, add)
	c.asked[2]++ // as after joinTick's Fetch to node 2 (a Learn answers one)
	c.step(Message{Type: MsgLearn, From: 2, To: 4, Chosen: 3, Index: 4, Meta: h.encode()})
	rd = c.ready()
	if len(rd.Committed) != 3 || rd.Meta == nil {
		t.Fatalf("after the history: %d entries handed out, meta %v", len(rd.Committed), rd.Meta != nil)
	}
	if got := c.hist.latest().IDs(); !slices.Equal(got, []uint32{1, 2, 3, 4}) {
		t.Fatalf("members %v", got)
	}
}

// TestJoinerRefusesShortHistory: a history from a peer whose chosen index
// is below what the joiner already handed out could miss a change among
// those entries, so it is not adopted.
func TestJoinerRefusesShortHistory(t *testing.T) {
	cfg := coreConfig{ID: 4, Peers: []uint32{1, 2, 3}, Join: true,
		ElectionTicks: 10, HeartbeatTicks: 1, RetransmitTicks: 2, RetryTicks: 20,
		Window: 8, BatchMaxBytes: 64, FetchMaxBytes: 200, Seed: 1}
	c := newCore(cfg, wal.HardState{}, nil, nil)
	c.applied = 5                 // as if restored past entries handed out earlier
	c.asked[1], c.asked[2] = 1, 1 // as after joinTick's Fetches (a Learn answers one)
	c.step(Message{Type: MsgLearn, From: 1, To: 4, Chosen: 3, Index: 6, Meta: genesis(members(1, 2, 3)).encode()})
	if c.hist != nil {
		t.Fatal("adopted a history that ends below the applied index")
	}
	c.step(Message{Type: MsgLearn, From: 2, To: 4, Chosen: 5, Index: 6, Meta: genesis(members(1, 2, 3)).encode()})
	if c.hist == nil {
		t.Fatal("refused a history that covers the applied index")
	}
}
