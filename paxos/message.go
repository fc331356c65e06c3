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
	// MsgDigests carries only Digests, to a peer this node sent no other
	// message within the interval (a follower to another follower): not
	// part of the protocol, the driver takes it and the core never sees
	// it (digestbook.go). An older node drops the unknown type unread.
	MsgDigests
)

var msgNames = [...]string{"?", "Prepare", "Promise", "Accept", "Accepted", "Fetch", "Learn", "Forward", "Snapshot", "Digests"}

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
	// Digests are the sender's newest finished log range digests, on any
	// type: not part of the protocol. The driver attaches them to at most
	// one message per peer and interval and reads them before stepping
	// the core, which ignores them (digest.go, digestbook.go).
	Digests []RangeDigest
}

func (m Message) String() string {
	return fmt.Sprintf("%s %d->%d b=%d.%d idx=%d chosen=%d rej=%v probe=%v novote=%v n=%d/%d/%d",
		m.Type, m.From, m.To, m.Ballot.Round, m.Ballot.Node, m.Index, m.Chosen, m.Reject, m.Probe, m.NoVote,
		len(m.Entries), len(m.Indexes), len(m.Cmds))
}

// Hostile input. Every peer message is checked before the core acts on it
// (core_validate.go); a message that fails is dropped whole, counted by
// reason (Status.Dropped) and logged at a rate-limited level, never
// panicked on and never persisted. Why drop whole: a message is the unit a
// peer sends and the protocol already copes with any message being lost;
// acting on part of a message would need an argument per field.

// MaxRound bounds every ballot round a node adopts from a message, and
// every round it uses itself. Why 1<<62, far below the uint64 limit: a
// node's next round is one above the highest it saw, so an adopted round
// of MaxUint64 left no room to increment (the next round wrapped to 0,
// the promise moved backwards and the core panicked, at every restart
// too, since the promise was persisted). With rounds capped at MaxRound,
// max+1 never wraps, and a node whose rounds reached MaxRound stops
// campaigning instead (core.nextRound).
const MaxRound uint64 = 1 << 62

// MaxRoundStep bounds how far above the highest round a node has seen or
// promised a Prepare or an Accept may be before the node adopts it. Why:
// with only MaxRound, one forged Prepare at round MaxRound would use up
// the ballot space of every node at once (no election could follow). A
// real cluster's rounds grow by one per election, so a gap of 1<<16 would
// take tens of thousands of elections to arise; a message beyond it is
// dropped but raises the node's round hint by at most MaxRoundStep, so a
// node that really lags catches up within a few messages, while a forger
// needs MaxRound/MaxRoundStep = 2^46 messages to exhaust the rounds.
const MaxRoundStep uint64 = 1 << 16

// MaxIndex bounds every instance index a message may name (index, chosen
// index, entries, acknowledged indexes, snapshot index): far from the
// uint64 limit, so chosen+Alpha, chosen+MaxIndexAhead and i+1 never wrap.
const MaxIndex uint64 = 1 << 62

// DropReason says why the core dropped a peer message unprocessed.
type DropReason uint8

const (
	// DropBadType: an unknown message type.
	DropBadType DropReason = iota
	// DropBadSender: From is 0 or this node, or To is not this node.
	DropBadSender
	// DropStranger: From is no node this core knows (not in any
	// configuration of its membership history, nor an initial peer).
	DropStranger
	// DropBallotRange: a ballot round above MaxRound, or a Prepare or
	// Accept more than MaxRoundStep above every round this node has seen.
	DropBallotRange
	// DropIndexRange: an index above MaxIndex, or an entry to store more
	// than Config.MaxIndexAhead instances above this node's chosen index.
	DropIndexRange
	// DropTooLarge: a value or command above the size limit, or more
	// entries, indexes or commands than one message may carry.
	DropTooLarge
	// DropMalformed: fields that contradict each other or the formats
	// (a ballot not the sender's, a value or snapshot or membership
	// history that does not decode).
	DropMalformed
	// DropLearnerVote: a Promise or a vote (an Accepted with indexes or a
	// rejection) from a node that votes in no configuration this node
	// knows above its chosen index: a learner claiming to vote.
	DropLearnerVote
	// DropUnasked: a Learn from a peer this node sent no Fetch it has
	// not had an answer to (core.asked).
	DropUnasked
	// NumDropReasons is the number of reasons (Status.Dropped's length).
	NumDropReasons
)

var dropNames = [...]string{"bad_type", "bad_sender", "stranger", "ballot_range", "index_range", "too_large", "malformed", "learner_vote", "unasked"}

// String is the reason's metric label.
func (r DropReason) String() string {
	if int(r) < len(dropNames) {
		return dropNames[r]
	}
	return fmt.Sprintf("DropReason(%d)", uint8(r))
}

// msgLimits are the static bounds of one message, from Config.
type msgLimits struct {
	// valueBytes bounds one entry's value and one forwarded command: a
	// leader's value is a batch of at most BatchMaxBytes, or one command
	// of at most MaxValueBytes plus its header.
	valueBytes int
	// listLen bounds len(Entries), len(Indexes) and len(Cmds).
	listLen int
	// ahead is Config.MaxIndexAhead (used by the core's own checks).
	ahead uint64
}

// valueHeaderBytes covers a value's count and a command's header
// (varints of node, seq, minPending, length, and flags).
const valueHeaderBytes = 64

// minListLen: a Learn answering a Fetch over Noops (empty values) holds
// many entries in few bytes; onFetch never sends more than listLen.
const minListLen = 1 << 16

func limitsOf(valueBytes int, ahead uint64) msgLimits {
	return msgLimits{
		valueBytes: valueBytes + valueHeaderBytes,
		listLen:    int(max(ahead, minListLen)),
		ahead:      ahead,
	}
}

// BadMessageError is why validateMessage refused a message.
type BadMessageError struct {
	Reason DropReason
	Detail string
}

func (e *BadMessageError) Error() string {
	return "paxos: dropped message: " + e.Reason.String() + ": " + e.Detail
}

func badMsg(r DropReason, format string, a ...any) *BadMessageError {
	return &BadMessageError{Reason: r, Detail: fmt.Sprintf(format, a...)}
}

// validateMessage checks what can be checked without the receiver's
// state: type, sender id, ballot and index ranges, sizes, and that the
// values and the snapshot header decode. The core calls it on every
// message it steps (core_validate.go adds the checks that need its
// state), so a transport need not; one may call it to drop a message
// before queueing it.
func validateMessage(m *Message, lim msgLimits) *BadMessageError {
	if m.Type < MsgPrepare || m.Type > MsgSnapshot {
		return badMsg(DropBadType, "type %d", uint8(m.Type))
	}
	if m.From == 0 {
		return badMsg(DropBadSender, "from node 0")
	}
	if m.Ballot.Round > MaxRound || m.Promised.Round > MaxRound {
		return badMsg(DropBallotRange, "round %d (promised %d) above %d", m.Ballot.Round, m.Promised.Round, MaxRound)
	}
	if m.Index > MaxIndex || m.Chosen > MaxIndex {
		return badMsg(DropIndexRange, "index %d, chosen %d above %d", m.Index, m.Chosen, MaxIndex)
	}
	if len(m.Entries) > lim.listLen || len(m.Indexes) > lim.listLen || len(m.Cmds) > lim.listLen {
		return badMsg(DropTooLarge, "%d entries, %d indexes, %d commands (at most %d each)", len(m.Entries), len(m.Indexes), len(m.Cmds), lim.listLen)
	}
	if (m.Type == MsgPrepare || m.Type == MsgAccept) && (m.Ballot.Node != m.From || m.Ballot.Round == 0) {
		// Every node proposes under its own ballots, from round 1.
		return badMsg(DropMalformed, "%s from %d under ballot %d.%d", m.Type, m.From, m.Ballot.Round, m.Ballot.Node)
	}
	for _, e := range m.Entries {
		if e.Index == 0 || e.Index > MaxIndex {
			return badMsg(DropIndexRange, "entry index %d", e.Index)
		}
		if e.Ballot.Round > MaxRound {
			return badMsg(DropBallotRange, "entry %d ballot round %d above %d", e.Index, e.Ballot.Round, MaxRound)
		}
		if len(e.Value) > lim.valueBytes {
			return badMsg(DropTooLarge, "entry %d value of %d bytes (at most %d)", e.Index, len(e.Value), lim.valueBytes)
		}
		// A value that does not decode would stop every node that
		// applies it, at every restart: never store one.
		if _, err := decodeValue(e.Value); err != nil {
			return badMsg(DropMalformed, "entry %d: %v", e.Index, err)
		}
	}
	for _, i := range m.Indexes {
		if i == 0 || i > MaxIndex {
			return badMsg(DropIndexRange, "acknowledged index %d", i)
		}
	}
	for k, cmd := range m.Cmds {
		if len(cmd) > lim.valueBytes {
			return badMsg(DropTooLarge, "command %d of %d bytes (at most %d)", k, len(cmd), lim.valueBytes)
		}
	}
	if m.Type == MsgSnapshot && len(m.Snapshot) > 0 {
		// The engine's part of a snapshot (its dedup table) must decode,
		// or installing it would stop the node at every restart.
		if _, err := (&applier{nodes: make(map[uint32]*seqSet)}).decodeTable(m.Snapshot); err != nil {
			return badMsg(DropMalformed, "snapshot: %v", err)
		}
	}
	if len(m.Meta) > 0 {
		if _, err := decodeHistory(m.Meta); err != nil {
			return badMsg(DropMalformed, "membership history: %v", err)
		}
	}
	return nil
}
