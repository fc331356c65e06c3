package paxos

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// applier turns chosen entries into StateMachine.Apply calls, exactly once
// per command. It is deterministic (every node computes the same), and its
// dedup table is persisted with the state machine's snapshot.
//
// Dedup rule: a proposer re-sends a command after a leader change, so one
// (node, seq) can be chosen twice. For each node the applier keeps low (all
// seqs <= low are finished) and the seqs above low it applied. A command is
// applied iff seq > low and seq was not applied; then low rises to its
// minPending-1 and the set is pruned. A command abandoned by its caller
// (seq < a later minPending) is thus dropped if chosen late, which is one
// of the outcomes its caller was told is possible.
type applier struct {
	sm      StateMachine
	applied uint64
	nodes   map[uint32]*seqSet
}

type seqSet struct {
	low  uint64
	seen map[uint64]struct{}
}

func newApplier(sm StateMachine) *applier {
	return &applier{sm: sm, nodes: make(map[uint32]*seqSet)}
}

// applyEntry applies one chosen entry; onCmd is called for every command
// that was applied (or is a Barrier), in order, with Apply's result. It
// returns every command of the entry, applied or not (the read tail keeps
// them: Read returns duplicates too).
func (a *applier) applyEntry(e Entry, onCmd func(c command, result any)) ([]command, error) {
	if e.Index != a.applied+1 {
		panic(fmt.Sprintf("paxos: apply %d after %d", e.Index, a.applied))
	}
	cmds, err := decodeValue(e.Value)
	if err != nil {
		return nil, fmt.Errorf("index %d: %w", e.Index, err)
	}
	for _, c := range cmds {
		if !a.admit(c) {
			continue
		}
		var res any
		if !c.internal() {
			res = a.sm.Apply(e.Index, c.Data)
		}
		onCmd(c, res)
	}
	a.applied = e.Index
	return cmds, nil
}

func (a *applier) admit(c command) bool {
	s := a.nodes[c.Node]
	if s == nil {
		s = &seqSet{seen: make(map[uint64]struct{})}
		a.nodes[c.Node] = s
	}
	if c.MinPending > 0 && c.MinPending-1 > s.low {
		s.low = c.MinPending - 1
		for q := range s.seen {
			if q <= s.low {
				delete(s.seen, q)
			}
		}
	}
	if c.Seq <= s.low {
		return false
	}
	if _, dup := s.seen[c.Seq]; dup {
		return false
	}
	s.seen[c.Seq] = struct{}{}
	return true
}

// snapshot is the persisted form: magic, dedup table, then the state
// machine's own snapshot.
//
//	"PXS1" uvarint(nodes) { uvarint(node) uvarint(low) uvarint(n) uvarint(seq)* } rest=sm snapshot
func (a *applier) snapshot() ([]byte, error) {
	sm, err := a.sm.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("state machine snapshot: %w", err)
	}
	ids := make([]uint32, 0, len(a.nodes))
	for id := range a.nodes {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	b := []byte("PXS1")
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		s := a.nodes[id]
		b = binary.AppendUvarint(b, uint64(id))
		b = binary.AppendUvarint(b, s.low)
		b = binary.AppendUvarint(b, uint64(len(s.seen)))
		for q := range s.seen {
			b = binary.AppendUvarint(b, q)
		}
	}
	return append(b, sm...), nil
}

// restore loads a snapshot made by snapshot (nil: empty state) and calls
// StateMachine.Restore with the state machine's part.
func (a *applier) restore(applied uint64, snap []byte) error {
	a.applied = applied
	a.nodes = make(map[uint32]*seqSet)
	if snap == nil {
		return a.sm.Restore(applied, nil)
	}
	rest, err := a.decodeTable(snap)
	if err != nil {
		return err
	}
	return a.sm.Restore(applied, rest)
}

func (a *applier) decodeTable(b []byte) ([]byte, error) {
	if len(b) < 4 || string(b[:4]) != "PXS1" {
		return nil, fmt.Errorf("%w: snapshot lacks the engine header", ErrBadValue)
	}
	b = b[4:]
	n, b, err := uvarint(b, "nodes")
	if err != nil {
		return nil, err
	}
	for ; n > 0; n-- {
		var id, low, k, q uint64
		if id, b, err = uvarint(b, "node"); err != nil {
			return nil, err
		}
		if low, b, err = uvarint(b, "low"); err != nil {
			return nil, err
		}
		if k, b, err = uvarint(b, "count"); err != nil {
			return nil, err
		}
		if k > uint64(len(b)) {
			return nil, fmt.Errorf("%w: snapshot seq count %d", ErrBadValue, k)
		}
		s := &seqSet{low: low, seen: make(map[uint64]struct{}, k)}
		for ; k > 0; k-- {
			if q, b, err = uvarint(b, "seq"); err != nil {
				return nil, err
			}
			s.seen[q] = struct{}{}
		}
		a.nodes[uint32(id)] = s
	}
	return b, nil
}
