package masterlease

import (
	"errors"
	"fmt"
)

// State is the replicated state every node computes by applying the log
// in order with Step. It holds no time: lease timing is each node's own
// (see Lease).
type State struct {
	// Version counts won LeaseRequests and Fences (the lease CAS counter).
	Version uint64
	// Epoch numbers terms. A term starts with a non-renewal grant or a
	// Fence; only batches of the current epoch are valid.
	Epoch uint64
	// Master is the node holding the current term, 0 for none.
	// Invariant: Master == 0 after a Fence until the next grant.
	Master uint32
	// LastGTID is the GTID of the last valid complete transaction.
	LastGTID GTID
	// Partial is the GTID of a transaction whose first fragments are valid
	// and whose last fragment is still to come; zero when none. A term
	// change voids it. Invariant: Partial.IsZero() || Partial != LastGTID.
	Partial GTID
	// PartialBytes is how many bytes of Partial's events are valid so far;
	// the next fragment must start at this offset.
	PartialBytes uint64
	// Applied is the log index of the last applied entry.
	Applied uint64
	// LastBatchIndex is the log index of the last valid BinlogBatch.
	LastBatchIndex uint64
	// TermIndex is the log index of the entry that started the current
	// term (the grant or the Fence).
	TermIndex uint64
}

func (s State) String() string {
	return fmt.Sprintf("{v%d e%d master=%d last=%s partial=%s applied=%d}",
		s.Version, s.Epoch, s.Master, s.LastGTID.show(), s.Partial.show(), s.Applied)
}

// Verdict is the outcome of applying one entry: Apply's result, handed to
// the proposer by the log, and what Step tells a reader of the log.
type Verdict struct {
	Index  uint64
	Valid  bool
	Reason Reason // ReasonNone iff Valid
	Detail string // human-readable reason; empty when valid
	// Expected and Got are the GTIDs of a ReasonChain or ReasonBadFragment
	// rejection: what the state required and what the entry carried.
	Expected, Got GTID
	// Entry is the decoded entry (Kind KindUnknown when it did not decode).
	Entry Entry
	// State is the state after the entry (unchanged when rejected).
	State State
}

// Err returns nil for a valid entry, else a *RejectError wrapping the
// reason's sentinel.
func (v Verdict) Err() error {
	if v.Valid {
		return nil
	}
	return &RejectError{Index: v.Index, Kind: v.Entry.Kind, Reason: v.Reason, Detail: v.Detail,
		Expected: v.Expected, Got: v.Got}
}

// Step applies the command cmd chosen at index to st and returns the new
// state and the verdict. It is pure and deterministic: every node, and any
// reader replaying the log from the same state, gets the same result.
// A rejected entry leaves the state unchanged except Applied.
func Step(st State, index uint64, cmd []byte) (State, Verdict) {
	e, err := Decode(cmd)
	if err != nil {
		r := ReasonMalformed
		if errors.Is(err, ErrUnknownVersion) {
			r = ReasonUnknownVersion
		}
		st.Applied = index
		return st, Verdict{Index: index, Reason: r, Detail: err.Error(), State: st}
	}
	return StepEntry(st, index, e)
}

// StepEntry is Step for an already decoded entry.
func StepEntry(st State, index uint64, e Entry) (State, Verdict) {
	st.Applied = index
	next := st
	var rj reject
	switch e.Kind {
	case KindNoop:
	case KindLease:
		rj = applyLease(&next, index, e.Lease)
	case KindFence:
		rj = applyFence(&next, index, e.Fence)
	case KindBatch:
		rj = applyBatch(&next, index, &e.Batch)
	default:
		rj = rejectf(ReasonMalformed, "entry of no known kind")
	}
	if rj.reason != ReasonNone {
		return st, Verdict{Index: index, Reason: rj.reason, Detail: rj.detail,
			Expected: rj.expected, Got: rj.got, Entry: e, State: st}
	}
	return next, Verdict{Index: index, Valid: true, Entry: e, State: next}
}

// reject is a rule's outcome; the zero value means the entry is valid.
type reject struct {
	reason        Reason
	detail        string
	expected, got GTID
}

var ok reject

func rejectf(r Reason, format string, args ...any) reject {
	return reject{reason: r, detail: fmt.Sprintf(format, args...)}
}

func (r reject) with(expected, got GTID) reject {
	r.expected, r.got = expected, got
	return r
}

func applyLease(st *State, index uint64, r LeaseRequest) reject {
	if r.SeenVersion != st.Version {
		return rejectf(ReasonVersionMismatch, "seen version %d, current %d", r.SeenVersion, st.Version)
	}
	if r.Renew {
		if st.Master == 0 || r.Candidate != st.Master {
			return rejectf(ReasonNotHolder, "renewal by node %d, master is %d", r.Candidate, st.Master)
		}
		st.Version++
		return ok
	}
	st.Version++
	st.Epoch++
	st.Master = r.Candidate
	st.Partial, st.PartialBytes = GTID{}, 0
	st.TermIndex = index
	return ok
}

func applyFence(st *State, index uint64, f Fence) reject {
	if f.Epoch != st.Epoch {
		return rejectf(ReasonStaleEpoch, "fence for epoch %d, current epoch %d", f.Epoch, st.Epoch)
	}
	if st.Master == 0 {
		return rejectf(ReasonNoMaster, "epoch %d has no master to fence", st.Epoch)
	}
	st.Version++
	st.Epoch++
	st.Master = 0
	st.Partial, st.PartialBytes = GTID{}, 0
	st.TermIndex = index
	return ok
}

func applyBatch(st *State, index uint64, b *Batch) reject {
	switch {
	case len(b.Events) == 0:
		return rejectf(ReasonMalformed, "batch without events")
	case b.Last.IsZero():
		return rejectf(ReasonMalformed, "batch without last_gtid")
	case !b.More && b.TxnCount == 0:
		return rejectf(ReasonMalformed, "batch completes no transaction and has no more fragments")
	}
	if got := Checksum(b.Events); got != b.Checksum {
		return rejectf(ReasonBadChecksum, "checksum %08x, events have %08x", b.Checksum, got)
	}
	if b.Epoch != st.Epoch {
		return rejectf(ReasonStaleEpoch, "batch for epoch %d, current epoch %d", b.Epoch, st.Epoch)
	}
	if st.Master == 0 {
		return rejectf(ReasonNoMaster, "epoch %d has no master", st.Epoch)
	}
	if b.Prev != st.LastGTID {
		return rejectf(ReasonChain, "prev_gtid %s, expected %s", b.Prev.show(), st.LastGTID.show()).with(st.LastGTID, b.Prev)
	}
	if !st.LastGTID.IsZero() {
		if b.Last.Domain != st.LastGTID.Domain {
			return rejectf(ReasonChain, "last_gtid %s leaves domain %d (one domain only)", b.Last, st.LastGTID.Domain).with(st.LastGTID, b.Last)
		}
		if b.Last.Seq <= st.LastGTID.Seq {
			return rejectf(ReasonChain, "last_gtid %s does not follow %s", b.Last, st.LastGTID).with(st.LastGTID, b.Last)
		}
	}
	if rj := checkFragment(st, b); rj.reason != ReasonNone {
		return rj
	}
	if b.More {
		if !b.Continued {
			st.PartialBytes = 0
		}
		st.Partial = b.Last
		st.PartialBytes += uint64(len(b.Events))
	} else {
		st.LastGTID = b.Last
		st.Partial, st.PartialBytes = GTID{}, 0
	}
	st.LastBatchIndex = index
	return ok
}

func checkFragment(st *State, b *Batch) reject {
	if b.More && b.TxnCount != 0 {
		return rejectf(ReasonBadFragment, "fragment of %s claims %d complete transactions; a split transaction travels alone", b.Last, b.TxnCount)
	}
	if !b.Continued {
		if b.Offset != 0 {
			return rejectf(ReasonBadFragment, "first fragment of %s at offset %d, want 0", b.Last, b.Offset)
		}
		if !st.Partial.IsZero() {
			return rejectf(ReasonBadFragment, "expected the continuation of partial transaction %s, got a new start %s", st.Partial, b.Last).with(st.Partial, b.Last)
		}
		return ok
	}
	switch {
	case st.Partial.IsZero():
		return rejectf(ReasonBadFragment, "continuation of %s, but no transaction is in progress", b.Last).with(GTID{}, b.Last)
	case b.Last != st.Partial:
		return rejectf(ReasonBadFragment, "continuation of %s, expected of partial transaction %s", b.Last, st.Partial).with(st.Partial, b.Last)
	case b.Offset != st.PartialBytes:
		return rejectf(ReasonBadFragment, "fragment of %s at offset %d, expected %d (a repeated or missing fragment)", b.Last, b.Offset, st.PartialBytes).with(st.Partial, b.Last)
	case !b.More && b.TxnCount != 1:
		return rejectf(ReasonBadFragment, "last fragment of %s claims %d complete transactions, expected 1", b.Last, b.TxnCount)
	}
	return ok
}
