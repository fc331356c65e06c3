package paxos

import (
	"fmt"

	"phxgo/wal"
)

// Ballot orders proposers: (round, node). It is wal's type so acceptor
// state is persisted without conversion.
type Ballot = wal.Ballot

// MsgType is the kind of a peer message.
type MsgType uint8

const (
	// MsgPrepare (phase 1a): From asks for a promise for Ballot on every
	// instance from Index on. With Probe set it only asks whether the
	// receiver would vote (see core_election.go); nothing is promised.
	MsgPrepare MsgType = iota + 1
	// MsgPromise (phase 1b): the acceptor promised Ballot; Chosen is its
	// chosen index and Entries its accepted instances above
	// max(Index-1, Chosen). Reject: it had promised Promised instead.
	// With Probe set it answers a probe: Reject means it hears a leader.
	MsgPromise
	// MsgAccept (phase 2a): accept Entries under Ballot. Chosen is the
	// leader's chosen index. Without entries it is the leader's heartbeat.
	// With NoVote set the leader needs no vote from the receiver for these
	// entries (thrifty phase 2): it stores them like accepted ones but
	// without a sync of their own, and answers only with a rejection.
	MsgAccept
	// MsgAccepted (phase 2b): the acceptor durably accepted Indexes under
	// Ballot, and its chosen index is Chosen. Reject: it had promised
	// Promised, a higher ballot.
	MsgAccepted
	// MsgFetch asks for chosen entries from Index on; with Probe set,
	// also for the membership history (a joining node).
	MsgFetch
	// MsgLearn carries chosen Entries (ascending, contiguous), and the
	// sender's chosen index in Chosen.
	MsgLearn
	// MsgForward carries encoded commands from a follower to the leader.
	MsgForward
	// MsgSnapshot answers a Fetch below the sender's first index (its log
	// was compacted there): Snapshot is the engine snapshot (dedup table
	// and state machine) right after Index = the sender's FirstIndex-1,
	// Meta the paxos-internal state as of Index (reserved, nil for now),
	// Chosen the sender's chosen index. See snapshot_install.go.
	MsgSnapshot
)

var msgNames = [...]string{"?", "Prepare", "Promise", "Accept", "Accepted", "Fetch", "Learn", "Forward", "Snapshot"}

func (t MsgType) String() string {
	if int(t) < len(msgNames) {
		return msgNames[t]
	}
	return fmt.Sprintf("MsgType(%d)", uint8(t))
}

// Entry is one instance's value, with the ballot it was accepted under
// (MsgPromise, MsgLearn) or proposed under (MsgAccept: equal to the
// message's Ballot).
type Entry struct {
	Index  uint64
	Ballot Ballot
	Value  []byte
}

// Message is one peer message. Fields not named for a type are zero.
type Message struct {
	Type     MsgType
	From, To uint32
	Ballot   Ballot
	Index    uint64
	Chosen   uint64
	Reject   bool
	Probe    bool
	NoVote   bool // MsgAccept: store, do not vote (see MsgAccept)
	Promised Ballot
	Entries  []Entry
	Indexes  []uint64
	Cmds     [][]byte
	Snapshot []byte // MsgSnapshot: the engine snapshot after Index
	// Meta is the sender's membership history: on MsgLearn answering a
	// Fetch with Probe set (a joining node asks for it), and on MsgSnapshot
	// (the history a compacted log no longer holds).
	Meta []byte
}

func (m Message) String() string {
	return fmt.Sprintf("%s %d->%d b=%d.%d idx=%d chosen=%d rej=%v probe=%v novote=%v n=%d/%d/%d",
		m.Type, m.From, m.To, m.Ballot.Round, m.Ballot.Node, m.Index, m.Chosen, m.Reject, m.Probe, m.NoVote,
		len(m.Entries), len(m.Indexes), len(m.Cmds))
}
