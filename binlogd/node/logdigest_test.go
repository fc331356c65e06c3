package node

import (
	"testing"

	"phxgo/paxos"
	pb "phxgo/proto"
)

// TestLogOdd: only a majority of the digests known that disagrees with
// this node's own makes it odd (and keeps it from asking for the lease);
// a mismatch one against one, or one naming the peer, does not.
func TestLogOdd(t *testing.T) {
	div := func(ours, theirs, known int) paxos.Divergence {
		return paxos.Divergence{Node: 3, Peer: 1, First: 1, Last: 256, OursCount: ours, TheirsCount: theirs, Known: known}
	}
	for _, tc := range []struct {
		name string
		divs []paxos.Divergence
		odd  bool
	}{
		{"none", nil, false},
		{"one against one", []paxos.Divergence{div(1, 1, 2)}, false},
		{"the peer is odd", []paxos.Divergence{div(2, 1, 3)}, false},
		{"this node is odd", []paxos.Divergence{div(1, 1, 2), div(1, 2, 3)}, true},
		{"no majority of five", []paxos.Divergence{div(2, 2, 5)}, false},
	} {
		st := paxos.Status{ID: 3, Divergences: tc.divs, DivergencesSeen: uint64(len(tc.divs))}
		if got := logOdd(st); got != tc.odd {
			t.Errorf("%s: logOdd %v, want %v", tc.name, got, tc.odd)
		}
		var ns pb.NodeStatus
		logDigestStatus(&ns, st)
		if len(ns.LogDivergences) != len(tc.divs) || ns.LogDivergencesSeen != uint64(len(tc.divs)) {
			t.Errorf("%s: status %v", tc.name, ns.LogDivergences)
		}
		for i, d := range ns.LogDivergences {
			if d.OddNode != tc.divs[i].Odd() || len(d.Ours) != 32 {
				t.Errorf("%s: %v", tc.name, d)
			}
		}
	}
}
