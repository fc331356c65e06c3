package wal

// Ballot orders proposers: a higher Round wins, Node breaks ties.
// The zero Ballot is lower than every ballot a node can use.
type Ballot struct {
	Round uint64
	Node  uint32
}

// Less reports whether b orders before o.
func (b Ballot) Less(o Ballot) bool {
	if b.Round != o.Round {
		return b.Round < o.Round
	}
	return b.Node < o.Node
}

// IsZero reports whether b is the zero ballot.
func (b Ballot) IsZero() bool { return b.Round == 0 && b.Node == 0 }

// Accepted is the durable acceptor record of one instance: the highest-ballot
// value this acceptor accepted there.
type Accepted struct {
	Index  uint64
	Ballot Ballot
	Value  []byte
}

// HardState is everything an acceptor/learner must remember across a crash,
// apart from the accepted instances themselves.
type HardState struct {
	// Promised is the highest ballot this acceptor promised (phase 1).
	Promised Ballot
	// Chosen is the highest index known chosen here; every index in
	// (FirstIndex-1, Chosen] is chosen, and its accepted value is the chosen one.
	// Invariant: Applied <= Chosen. An update that only raised Chosen is
	// not synced (see Log.Save): after a crash Chosen may be lower than
	// the last one saved, never higher than what is stored.
	Chosen uint64
	// Applied is the highest index whose value the state machine applied;
	// Snapshot is the state machine's state right after applying it.
	Applied  uint64
	Snapshot []byte
	// FirstIndex is the lowest index still stored (1 on a fresh log; the
	// checkpoint after TruncateBelow).
	FirstIndex uint64
	// Base is the state machine's snapshot right after FirstIndex-1, as
	// given to TruncateWithBase (nil on a fresh log or after a plain
	// TruncateBelow): what a reader or a lagging peer starts from.
	Base []byte
}

// Update is one atomic, durable write: new promise, newly accepted
// instances, a new chosen index. Zero fields mean "unchanged".
type Update struct {
	Promised *Ballot
	Accepted []Accepted
	Chosen   uint64 // 0 = unchanged; never moves backwards
	// NoSync: the caller needs the update durable only once a later
	// synced one is (see Save). An update that only raises Chosen is
	// always saved so.
	NoSync bool
	// MarkMembership records, in this update's own frame, that the
	// caller saved a membership history next to the log: the log's one
	// m/membership entry (membership.go), written by the first such
	// update and never again. It costs no write or sync of its own and
	// does not make the update synced: it is as durable as the update
	// (one that is otherwise empty is synced unless NoSync is set).
	// MembershipSaved reports it once durable.
	MarkMembership bool
}
